import type { FastifyInstance, FastifyRequest } from 'fastify';
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';

/**
 * What every server's `GET /metrics` shares: Node's process figures, the request counter and latency
 * histogram labelled by matched route pattern, and the exposition. Each app keeps its own registry
 * (never prom-client's global one), so tests build many apps in one process.
 */

/** The label of a request no route matched: its path is never a label (it may carry a token). */
export const UNMATCHED_ROUTE = 'unmatched';

let processMetrics: Registry | null = null;

/**
 * Node's process figures (CPU, memory, event-loop lag, GC, handles) belong to the process, not to an
 * app: they are collected once per process and answered beside each app's own. Collecting them per
 * app would start another GC observer and event-loop monitor for every app a test builds.
 */
export function processMetricsRegistry(): Registry {
  if (!processMetrics) {
    processMetrics = new Registry();
    collectDefaultMetrics({ register: processMetrics });
  }
  return processMetrics;
}

/** The exposition of an app's registry with the process's figures beside it. */
export function metricsExposition(registry: Registry): Promise<string> {
  return Registry.merge([registry, processMetricsRegistry()]).metrics();
}

/**
 * `<prefix>_http_requests_total` and `<prefix>_http_request_duration_seconds`, by method, matched
 * route pattern (`/v1/installations/:id`, never the path or query) and status.
 */
export function observeHttpRequests(
  app: FastifyInstance,
  registry: Registry,
  options: {
    prefix: string;
    /** Latency buckets in seconds, up to the longest answer the server holds. */
    buckets: number[];
    /** What the counter counts, when it is narrower than "requests answered". */
    requestsHelp?: string;
  },
): void {
  const labelNames = ['method', 'route', 'status'] as const;
  const requests = new Counter({
    name: `${options.prefix}_http_requests_total`,
    help: options.requestsHelp ?? 'Requests answered, by method, matched route pattern and status.',
    labelNames,
    registers: [registry],
  });
  const seconds = new Histogram({
    name: `${options.prefix}_http_request_duration_seconds`,
    help: 'Time from the request to its answer, by method, matched route pattern and status.',
    labelNames,
    buckets: options.buckets,
    registers: [registry],
  });
  const started = new WeakMap<FastifyRequest, bigint>();
  app.addHook('onRequest', async (request) => {
    started.set(request, process.hrtime.bigint());
  });
  app.addHook('onResponse', async (request, reply) => {
    const begin = started.get(request);
    const labels = {
      method: request.method,
      route: request.routeOptions.url ?? UNMATCHED_ROUTE,
      status: String(reply.statusCode),
    };
    requests.inc(labels);
    if (begin !== undefined) seconds.observe(labels, Number(process.hrtime.bigint() - begin) / 1e9);
  });
}
