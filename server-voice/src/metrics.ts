import type { FastifyInstance } from 'fastify';
import { Counter, Gauge, Registry } from 'prom-client';
import { getMetrics } from '@conduit/contracts/voice/metrics';
import { bindRoute } from '@conduit/contracts/server';
import { metricsExposition, observeHttpRequests } from '@conduit/contracts/server/http-metrics';
import { bearerMatches } from '@conduit/contracts/server/secrets';
import type { CallRegistry } from './calls/call-registry.js';
import type { PacingStats } from './media/frame-clock.js';

/**
 * The voice gateway's Prometheus metrics (`GET /metrics`, contracts/src/voice/metrics.ts). Every label
 * value is one of a bounded set the gateway defines — a route pattern, a status code, the media sender
 * kind, a pacing figure's name — never a call id, a key or an address.
 */

/** The label of a request no route matched: its path is never a label. */
export const UNMATCHED_ROUTE = 'unmatched';

/** Who paced the frames a pacing figure is about (the `pacing` log line's `sender`). */
export type PacingSender = 'inline' | 'process';

/** Call setup answers in up to 30 s (the setup deadline); everything else in milliseconds. */
const REQUEST_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** The figures of one `pacing` window as series of `conduit_voice_pacing_jitter_seconds`. */
const PACING_FIGURES: readonly { tick: 'first' | 'last'; quantile: string; of: (s: PacingStats) => number }[] = [
  { tick: 'first', quantile: '0.5', of: (s) => s.first_jitter_p50_ms },
  { tick: 'first', quantile: '0.99', of: (s) => s.first_jitter_p99_ms },
  { tick: 'last', quantile: '0.5', of: (s) => s.last_jitter_p50_ms },
  { tick: 'last', quantile: '0.99', of: (s) => s.last_jitter_p99_ms },
  { tick: 'last', quantile: '1', of: (s) => s.last_jitter_max_ms },
];

export class VoiceMetrics {
  /** This app's registry (never prom-client's global one, so tests build many apps in one process). */
  readonly registry = new Registry();
  private readonly pacingJitter: Gauge<'sender' | 'tick' | 'quantile'>;
  private readonly pacingIntervals: Counter<'sender'>;

  constructor(private readonly calls: CallRegistry) {
    const registers = [this.registry];
    new Gauge({
      name: 'conduit_voice_active_calls',
      help: 'Live calls (connected and not yet closed).',
      registers,
      collect() {
        this.set(calls.activeCount);
      },
    });
    new Gauge({
      name: 'conduit_voice_call_setups_in_progress',
      help: 'Calls being set up; with the live calls they count against HERMES_REALTIME_MAX_CALLS.',
      registers,
      collect() {
        this.set(calls.pendingCount);
      },
    });
    this.pacingJitter = new Gauge({
      name: 'conduit_voice_pacing_jitter_seconds',
      help:
        'Outbound pacing jitter as sent, |interval - 20 ms| between ticks, over the last 5 s window with calls live ' +
        '(the pacing log line): quantile 0.5, 0.99 or 1 (max), for the first or last call served on a tick. ' +
        'Absent while no call is live.',
      labelNames: ['sender', 'tick', 'quantile'],
      registers,
    });
    this.pacingIntervals = new Counter({
      name: 'conduit_voice_pacing_intervals_total',
      help: 'Tick intervals the pacing figures were taken over.',
      labelNames: ['sender'],
      registers,
    });
  }

  /**
   * One `pacing` window (every 5 s, see app.ts): the figures the log line carries, or null when none came.
   * A window without figures keeps the previous one's while calls are live (the media sender process
   * reports on its own 5 s timer, so a window can miss its report), and removes the sender's series once
   * no call is, rather than leave an old call's figures standing.
   */
  recordPacing(sender: PacingSender, stats: PacingStats | null): void {
    if (!stats) {
      if (this.calls.activeCount > 0) return;
      for (const figure of PACING_FIGURES)
        this.pacingJitter.remove({ sender, tick: figure.tick, quantile: figure.quantile });
      return;
    }
    for (const figure of PACING_FIGURES) {
      this.pacingJitter.set({ sender, tick: figure.tick, quantile: figure.quantile }, figure.of(stats) / 1000);
    }
    this.pacingIntervals.inc({ sender }, stats.intervals);
  }

  /** Counts every answered request under its route pattern, never its path. */
  observeRequests(app: FastifyInstance): void {
    observeHttpRequests(app, this.registry, { prefix: 'conduit_voice', buckets: REQUEST_BUCKETS });
  }

  /**
   * `GET /metrics` behind the gateway's bearer key (constant time, as discovery), or the metrics token
   * when the operator set one so a scraper need not hold the key that opens calls.
   */
  routes(app: FastifyInstance, keys: { apiKey: string; metricsToken?: string | undefined }): void {
    bindRoute(app, getMetrics, async ({ request }) => {
      const header = request.headers.authorization;
      const admitted =
        bearerMatches(header, keys.apiKey) ||
        (keys.metricsToken !== undefined && bearerMatches(header, keys.metricsToken));
      if (!admitted) return { status: 401, body: 'unauthorized' };
      return {
        status: 200,
        body: await metricsExposition(this.registry),
        headers: { 'cache-control': 'no-store' },
      };
    });
  }
}
