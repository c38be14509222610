import { z } from 'zod';
import { defineRoute } from '../route.js';
import { beforeTheRoute } from './shared.js';

/** Route 1: liveness for load balancers and container health checks. */
export const healthz = defineRoute({
  method: 'GET',
  path: '/healthz',
  operationId: 'getHealthz',
  summary: 'Liveness probe',
  tags: ['infra'],
  auth: 'none',
  responses: {
    200: { description: 'The relay is serving.', schema: z.object({ ok: z.literal(true) }) },
    ...beforeTheRoute,
  },
});
