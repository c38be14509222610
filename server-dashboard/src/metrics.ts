import type { FastifyInstance } from 'fastify';
import { Counter, Gauge, Registry } from 'prom-client';
import { getMetrics } from '@conduit/contracts/dashboard/metrics';
import { bindRoute } from '@conduit/contracts/server';
import { metricsExposition, observeHttpRequests } from '@conduit/contracts/server/http-metrics';
import type { EventSender } from './delivery/delivery-queue.js';
import type { SendOutcome } from './delivery/outcome.js';
import { bearerVerifier, type CallerVerifier } from './fronting/caller-verification.js';
import { authenticatedRoutes } from './fronting/route-auth.js';

/**
 * The host service's Prometheus metrics (`GET /metrics`, contracts/src/dashboard/metrics.ts). Every
 * label value is one of a bounded set this service defines — a route pattern, a status code, a
 * delivery outcome — so a profile name (`?profile=`), a session id or a token in a path never
 * becomes a label.
 */

/** The route `/metrics` is served at; ours, so the dashboard proxy never takes it. */
export const METRICS_PATH = '/metrics';

const DELIVERY_OUTCOMES: readonly SendOutcome['kind'][] = ['accepted', 'retry', 'failed', 'unpaired'];
/** Request latency buckets (seconds): plugin routes answer in milliseconds, held clarify hooks in minutes. */
const REQUEST_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 120, 300];

export class HostMetrics {
  /** This app's registry (never prom-client's global one, so tests build many apps in one process). */
  readonly registry = new Registry();
  private readonly deliveryAttempts: Counter<'outcome'>;

  constructor() {
    const registers = [this.registry];
    this.deliveryAttempts = new Counter({
      name: 'conduit_host_delivery_attempts_total',
      help: 'Attempts to hand a queued event to the relay, by outcome; outcome="retry" is an attempt the queue retries.',
      labelNames: ['outcome'],
      registers,
    });
    // Zero from the start, so a rate over a fresh process is defined.
    for (const outcome of DELIVERY_OUTCOMES) this.deliveryAttempts.inc({ outcome }, 0);
  }

  /** The delivery queue's depth, read when scraped. */
  trackQueue(queue: { readonly size: number }): void {
    new Gauge({
      name: 'conduit_host_delivery_queue_depth',
      help: 'Events waiting for the relay or in flight to it (memory and spool).',
      registers: [this.registry],
      collect() {
        this.set(queue.size);
      },
    });
  }

  /** The relay sender, counting each attempt's outcome (what the queue then does with it). */
  instrumentSender(sender: EventSender): EventSender {
    return {
      send: async (profile, event) => {
        let outcome: SendOutcome;
        try {
          outcome = await sender.send(profile, event);
        } catch (error) {
          // The queue retries a sender that throws.
          this.deliveryAttempts.inc({ outcome: 'retry' });
          throw error;
        }
        this.deliveryAttempts.inc({ outcome: outcome.kind });
        return outcome;
      },
    };
  }

  /** Counts every request this app answers under its route pattern, never its path or query. */
  observeRequests(app: FastifyInstance): void {
    observeHttpRequests(app, this.registry, {
      prefix: 'conduit_host',
      buckets: REQUEST_BUCKETS,
      requestsHelp:
        'Requests this service answered itself (never the proxied dashboard), by method, matched route pattern and status.',
    });
  }

  /**
   * `GET /metrics`, checked like the plugin routes (the dashboard's own credentials, or the standalone
   * token) — or, when the operator set CONDUIT_METRICS_TOKEN, that token, so a scraper need not hold a
   * credential that can pair the profile. The check is an `onRequest` hook of the route's own scope, as
   * for the plugin routes, so it runs on the route the router matched and before anything else.
   */
  async routes(app: FastifyInstance, options: { verifier: CallerVerifier; metricsToken?: string }): Promise<void> {
    const scraper = options.metricsToken !== undefined ? bearerVerifier(options.metricsToken) : null;
    const callerCheck = authenticatedRoutes(options.verifier);
    await app.register(async (scope) => {
      scope.addHook('onRequest', async function checkCaller(request, reply) {
        if (scraper && (await scraper.verify(request.headers)) === 'accepted') return undefined;
        return callerCheck.call(this, request, reply);
      });
      bindRoute(scope, getMetrics, async () => ({
        status: 200,
        body: await metricsExposition(this.registry),
        headers: { 'cache-control': 'no-store', pragma: 'no-cache' },
      }));
    });
  }
}
