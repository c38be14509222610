import { z } from 'zod';
import { defineRoute } from '../route.js';
import { PREFLIGHT_HEADERS_DOC, withCors } from './calls.js';

export const discoveryResponse = z.object({
  version: z.literal(1),
  /** The Hermes profile this gateway speaks for (`default` unless HERMES_HOME is a named profile). */
  profile: z.string(),
  /** Where to POST the SDP offer. */
  realtime_path: z.literal('/v1/realtime/calls'),
});

/** Authenticated discovery: tells a client which profile answers and where to start a call. */
export const getDiscovery = defineRoute({
  method: 'GET',
  path: '/v1/realtime/discovery',
  operationId: 'getDiscovery',
  summary: 'Realtime profile discovery',
  tags: ['realtime'],
  auth: 'bearer',
  responses: {
    200: {
      description: 'The gateway profile.',
      schema: discoveryResponse,
      headers: withCors({ 'cache-control': 'no-store' }),
    },
    401: {
      description: 'Missing or wrong bearer token.',
      schema: z.literal('unauthorized'),
      contentType: 'text/plain',
      headers: withCors(),
    },
  },
});

/** CORS preflight for discovery (a browser sends one before a GET with Authorization). */
export const discoveryOptions = defineRoute({
  method: 'OPTIONS',
  path: '/v1/realtime/discovery',
  operationId: 'discoveryOptions',
  summary: 'CORS preflight for discovery',
  tags: ['realtime'],
  auth: 'none',
  responses: { 204: { description: 'CORS headers, no body.', headers: PREFLIGHT_HEADERS_DOC } },
});
