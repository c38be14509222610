import { defineRoute, errorBody } from '../route.js';
import { PROMETHEUS_TEXT_CONTENT_TYPE, prometheusText } from '../prometheus.js';
import { beforeTheRoute } from './shared.js';

/**
 * The relay's Prometheus metrics. The relay faces the internet, so the route exists only for the
 * operator: with METRICS_TOKEN set it answers `Authorization: Bearer <METRICS_TOKEN>` (compared in
 * constant time); every other caller — and every caller when METRICS_TOKEN is unset — gets the
 * unknown-route answer, so the public cannot tell it is there. Labels are bounded sets only: route
 * patterns, status codes, APNs push types and reasons from a fixed list — never a token, an id or an
 * address (server-relay/README.md, Metrics).
 */
export const getMetrics = defineRoute({
  method: 'GET',
  path: '/metrics',
  operationId: 'getMetrics',
  summary: 'Prometheus metrics (operator only)',
  tags: ['infra'],
  auth: 'bearer',
  responses: {
    200: {
      description: 'Requests, APNs results and process figures in the Prometheus text format.',
      schema: prometheusText,
      contentType: PROMETHEUS_TEXT_CONTENT_TYPE,
    },
    404: {
      description: 'METRICS_TOKEN is unset, or the caller did not present it: the answer of an unknown route.',
      schema: errorBody(['not_found']),
    },
    ...beforeTheRoute,
  },
});
