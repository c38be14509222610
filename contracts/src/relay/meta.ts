import { z } from 'zod';
import { defineRoute } from '../route.js';
import { rateLimited, unauthorized } from './shared.js';

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
            plugin_version: z.string().nullable(),
            plugin_capabilities: z.array(z.string()),
            last_event_at: z.string().nullable(),
            dashboard_id: z.string().nullable(),
          }),
        ),
      }),
    },
    401: unauthorized,
    429: rateLimited,
  },
});
