import { z } from 'zod';
import { defineRoute } from '../route.js';

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
    200: { description: 'The gateway profile.', schema: discoveryResponse, headers: { 'cache-control': 'no-store' } },
    401: {
      description: 'Missing or wrong bearer token.',
      schema: z.literal('unauthorized'),
      contentType: 'text/plain',
    },
  },
});
