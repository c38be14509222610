import type { FastifyInstance } from 'fastify';
import { Counter, Histogram, Registry } from 'prom-client';
import { getMetrics } from '@conduit/contracts/relay/metrics';
import { bindRoute } from '@conduit/contracts/server';
import { metricsExposition, observeHttpRequests } from '@conduit/contracts/server/http-metrics';
import type { ApnsNotification, ApnsPushType, ApnsResult, ApnsSender } from './apns/types.js';
import { secretMatches, sha256Hex } from './domain/credentials.js';

/**
 * The relay's Prometheus metrics (`GET /metrics`, contracts/src/relay/metrics.ts). Every label value
 * comes from a bounded set the relay itself defines — a route pattern, a status code, an APNs push
 * type, an APNs reason from Apple's documented list — so nothing a client sends (a token in a path, a
 * made-up reason) can become a label, and the relay's privacy rule (it knows routing data only) holds
 * for what an operator's monitoring stores too.
 */

/** Apple's documented `reason` values; any other answer is counted as `other`. */
export const APNS_REASONS = [
  'BadCollapseId',
  'BadDeviceToken',
  'BadExpirationDate',
  'BadMessageId',
  'BadPriority',
  'BadTopic',
  'DeviceTokenNotForTopic',
  'DuplicateHeaders',
  'IdleTimeout',
  'InvalidPushType',
  'MissingDeviceToken',
  'MissingTopic',
  'PayloadEmpty',
  'TopicDisallowed',
  'BadCertificate',
  'BadCertificateEnvironment',
  'ExpiredProviderToken',
  'Forbidden',
  'InvalidProviderToken',
  'MissingProviderToken',
  'UnrelatedKeyIdInToken',
  'BadEnvironmentKeyIdInToken',
  'BadPath',
  'MethodNotAllowed',
  'ExpiredToken',
  'Unregistered',
  'PayloadTooLarge',
  'TooManyProviderTokenUpdates',
  'TooManyRequests',
  'InternalServerError',
  'ServiceUnavailable',
  'Shutdown',
] as const;
const KNOWN_REASONS: ReadonlySet<string> = new Set(APNS_REASONS);
const PUSH_TYPES: ReadonlySet<ApnsPushType> = new Set(['alert', 'voip', 'background', 'location', 'liveactivity']);

/** Request latency buckets (seconds): the event path answers in milliseconds, long-polls in up to ~30 s. */
const REQUEST_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** APNs round trips (seconds), up to the sender's 10 s timeout. */
const APNS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export class RelayMetrics {
  /** This app's registry (never prom-client's global one, so tests build many apps in one process). */
  readonly registry = new Registry();
  private readonly apnsResults: Counter<'push_type' | 'result' | 'reason'>;
  private readonly apnsSeconds: Histogram<'push_type'>;

  constructor() {
    const registers = [this.registry];
    this.apnsResults = new Counter({
      name: 'conduit_relay_apns_pushes_total',
      help: 'Pushes sent to APNs by push type and result (accepted, refused, unreachable), with APNs reason for refusals.',
      labelNames: ['push_type', 'result', 'reason'],
      registers,
    });
    this.apnsSeconds = new Histogram({
      name: 'conduit_relay_apns_push_duration_seconds',
      help: 'Time APNs took to answer a push (or to fail), by push type.',
      labelNames: ['push_type'],
      buckets: APNS_BUCKETS,
      registers,
    });
  }

  /** The exposition: this app's metrics and the process's. */
  async exposition(): Promise<string> {
    return metricsExposition(this.registry);
  }

  /** Counts every answered request under its route pattern (`/v1/installations/:id`), never its path. */
  observeRequests(app: FastifyInstance): void {
    observeHttpRequests(app, this.registry, { prefix: 'conduit_relay', buckets: REQUEST_BUCKETS });
  }

  /** The APNs sender, counting each result by push type and reason (never the device token). */
  instrumentApns(sender: ApnsSender): ApnsSender {
    return {
      send: async (deviceToken: string, notification: ApnsNotification): Promise<ApnsResult> => {
        const pushType = notification.pushType ?? 'alert';
        const push_type = PUSH_TYPES.has(pushType) ? pushType : 'other';
        const stop = this.apnsSeconds.startTimer({ push_type });
        try {
          const result = await sender.send(deviceToken, notification);
          stop();
          this.apnsResults.inc({
            push_type,
            result: result.ok ? 'accepted' : 'refused',
            reason: result.ok ? 'none' : KNOWN_REASONS.has(result.reason ?? '') ? (result.reason as string) : 'other',
          });
          return result;
        } catch (error) {
          stop();
          this.apnsResults.inc({ push_type, result: 'unreachable', reason: 'none' });
          throw error;
        }
      },
      close: () => sender.close(),
    };
  }

  /**
   * `GET /metrics` for the operator. The relay faces the internet, so without METRICS_TOKEN the route is
   * not registered at all, and with it a caller without the token gets exactly the unknown-route
   * answer: the public cannot tell the route exists. The token is kept as its SHA-256 and compared in
   * constant time, like every relay secret.
   */
  routes(app: FastifyInstance, metricsToken: string | undefined): void {
    if (metricsToken === undefined) return;
    const tokenHash = sha256Hex(metricsToken);
    bindRoute(app, getMetrics, async ({ request }) => {
      const presented = /^Bearer\s+(\S+)$/i.exec(request.headers.authorization ?? '')?.[1];
      if (presented === undefined || !secretMatches(presented, tokenHash)) {
        return { status: 404, body: { error: 'not_found' } };
      }
      return { status: 200, body: await this.exposition() };
    });
  }
}
