import { z } from 'zod';
import { defineRoute } from '../route.js';
import { PROMETHEUS_TEXT_CONTENT_TYPE, prometheusText } from '../prometheus.js';
import { CALL_SETUP_ERRORS, withCors } from './calls.js';

/**
 * The voice gateway's Prometheus metrics, behind the same bearer key as discovery and call setup
 * (HERMES_REALTIME_API_KEY), or HERMES_REALTIME_METRICS_TOKEN when the operator set one for a scraper
 * (it admits nothing else). Labels are bounded sets only: route patterns, status codes, the media
 * sender kind — never a call id, key or address (server-voice/README.md, Metrics).
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
      description: 'Requests, active calls, outbound pacing and process figures in the Prometheus text format.',
      schema: prometheusText,
      contentType: PROMETHEUS_TEXT_CONTENT_TYPE,
      headers: withCors({ 'cache-control': 'no-store' }),
    },
    401: {
      description: 'Missing or wrong bearer token.',
      schema: z.literal(CALL_SETUP_ERRORS.unauthorized),
      contentType: 'text/plain',
      headers: withCors(),
    },
  },
});
