import { defineRoute, errorBody } from '../route.js';
import { PROMETHEUS_TEXT_CONTENT_TYPE, prometheusText } from '../prometheus.js';
import { noStore } from './notification-settings.js';

/**
 * The host service's Prometheus metrics. Ours, never proxied to the dashboard. The caller is checked as
 * for the plugin routes (the dashboard's own credentials, or the standalone bearer token), or presents
 * CONDUIT_METRICS_TOKEN when the operator set one for a scraper. Labels are bounded sets only: route
 * patterns, status codes, delivery outcomes — never a profile name, token or id
 * (server-dashboard/README.md, Metrics).
 */
export const getMetrics = defineRoute({
  method: 'GET',
  path: '/metrics',
  operationId: 'getMetrics',
  summary: 'Prometheus metrics',
  tags: ['infra'],
  auth: 'bearer',
  responses: {
    200: {
      description: 'Requests, the delivery queue and process figures in the Prometheus text format.',
      schema: prometheusText,
      contentType: PROMETHEUS_TEXT_CONTENT_TYPE,
      headers: noStore,
    },
    401: {
      description: 'Not a caller the dashboard accepts, no standalone bearer token, and not the metrics token.',
      schema: errorBody(['unauthorized']),
    },
    503: {
      description: 'The dashboard could not say whether it accepts the caller (fail closed).',
      schema: errorBody(['dashboard_unavailable']),
    },
  },
});
