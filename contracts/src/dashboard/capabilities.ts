import { z } from 'zod';
import { defineRoute } from '../route.js';

export const capabilitiesResponse = z.object({
  ok: z.literal(true),
  /** Version of the code on disk. */
  version: z.string().nullable(),
  /** Version of the code this process loaded; differs from `version` after an update without restart. */
  loaded_version: z.string().nullable(),
  restart_needed: z.boolean(),
  /** Random id of this process's start, so clients notice restarts. */
  boot_id: z.string(),
  /** Route families this service serves, in a stable order. */
  capabilities: z.array(z.string()),
});

/** Lists what the host service serves, so the Conduit app shows only what works. No profile, no rate limit. */
export const getCapabilities = defineRoute({
  method: 'GET',
  path: '/api/plugins/conduit_push/capabilities',
  operationId: 'getCapabilities',
  summary: 'Capabilities of the host service',
  tags: ['plugin'],
  auth: 'none',
  responses: {
    200: { description: 'What this service serves.', schema: capabilitiesResponse },
  },
});
