import { z } from 'zod';
import { defineRoute } from '../route.js';
import { beforeTheRoute, rateLimited, sharedStateUnavailable, unauthorized } from './shared.js';

/** Route 15: what this relay can do, and the phone's paired hosts. */
export const getMeta = defineRoute({
  method: 'GET',
  path: '/v1/meta',
  operationId: 'getMeta',
  summary: 'Relay version, capabilities and paired gateways',
  tags: ['installations'],
  auth: 'device',
  responses: {
    200: {
      description: 'Relay facts for the calling installation.',
      schema: z.object({
        version: z.string(),
        capabilities: z.array(z.string()),
        gateways: z.array(
          z.object({
            id: z.string(),
            name: z.string(),
            // The reference omits what it does not know; it never writes null (the app reads absence).
            plugin_version: z.string().optional().describe('Absent until the host reports its version.'),
            plugin_capabilities: z.array(z.string()),
            last_event_at: z.string().optional().describe('ISO 8601; absent until the host sends an event.'),
            dashboard_id: z.string().optional().describe('Absent when the pairing named no dashboard.'),
          }),
        ),
      }),
    },
    401: unauthorized,
    429: rateLimited,
    503: sharedStateUnavailable,
    ...beforeTheRoute,
  },
});
