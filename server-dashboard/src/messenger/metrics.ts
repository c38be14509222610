import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Gauge, Registry } from 'prom-client';
import { PROMETHEUS_TEXT_CONTENT_TYPE } from '@conduit/contracts/prometheus';
import { metricsExposition } from '@conduit/contracts/server/http-metrics';
import { bearerMatches } from '@conduit/contracts/server/secrets';
import type { EventStatus, Inbox } from './inbox.js';

/**
 * The messenger connector's Prometheus metrics. The connector runs in its own process (`npm run
 * messenger -- start`) and the durable inbox lives there, so the inbox's backlog is served from that
 * process: with CONDUIT_MESSENGER_METRICS_PORT set, a listener on 127.0.0.1 only answers `GET /metrics` to
 * `Authorization: Bearer <CONDUIT_MESSENGER_METRICS_TOKEN>` (required with the port), as the host's other
 * loopback endpoints take a token. Labels are the inbox's row states only — never a chat, contact or event
 * id, nor message text.
 */

const STATUSES: readonly EventStatus[] = ['pending', 'processing', 'dispatched', 'held', 'completed', 'ignored'];

/** The inbox's figures, read from the inbox when scraped. */
export function inboxRegistry(inbox: Pick<Inbox, 'backlog'>, now: () => number = Date.now): Registry {
  const registry = new Registry();
  new Gauge({
    name: 'conduit_messenger_inbox_events',
    help:
      'Events in the durable inbox by state: pending, processing and dispatched wait for a successful turn; ' +
      'held reactions wait for the next turn in their chat; completed and ignored are settled.',
    labelNames: ['status'],
    registers: [registry],
    collect() {
      const backlog = inbox.backlog();
      for (const status of STATUSES) this.set({ status }, backlog[status]);
    },
  });
  new Gauge({
    name: 'conduit_messenger_inbox_oldest_waiting_age_seconds',
    help: 'Age of the oldest event still waiting for a successful turn (0 when none waits).',
    registers: [registry],
    collect() {
      const oldest = inbox.backlog().oldestPendingAt;
      const at = oldest === null ? NaN : Date.parse(oldest);
      this.set(Number.isFinite(at) ? Math.max(0, (now() - at) / 1000) : 0);
    },
  });
  return registry;
}

export interface MetricsListener {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  close(): Promise<void>;
}

/** Serves `GET /metrics` on 127.0.0.1:`port` (0: any free port) to callers presenting `token`. */
export async function serveMessengerMetrics(options: {
  inbox: Pick<Inbox, 'backlog'>;
  port: number;
  token: string;
}): Promise<MetricsListener> {
  const registry = inboxRegistry(options.inbox);
  const server = http.createServer((request, response) => {
    const answer = (status: number, type: string, body: string) =>
      response.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' }).end(body);
    const path = (request.url ?? '/').split('?')[0];
    if (path !== '/metrics' || request.method !== 'GET')
      return answer(404, 'application/json', '{"error":"not_found"}');
    if (!bearerMatches(request.headers.authorization, options.token)) {
      return answer(401, 'application/json', '{"error":"unauthorized"}');
    }
    metricsExposition(registry).then(
      (text) => answer(200, PROMETHEUS_TEXT_CONTENT_TYPE, text),
      () => answer(500, 'application/json', '{"error":"internal_error"}'),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, '127.0.0.1', () => resolve());
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
