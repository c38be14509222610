import { fastifyTRPCPlugin, type FastifyTRPCPluginOptions } from '@trpc/server/adapters/fastify';
import type { FastifyInstance } from 'fastify';
import { RELAY_ADMIN_PREFIX } from '@conduit/contracts/relay/admin';
import { relayAdminRouter, type RelayAdminDeps, type RelayAdminRouter } from './admin-router.js';
import { bearerMatches } from '@conduit/contracts/server/secrets';

/**
 * Mounts the admin API at /admin/trpc when ADMIN_TOKEN is set; without it nothing is registered, so
 * the prefix answers like any unknown route (404 not_found) and the API does not exist for the public.
 * The bearer check is an onRequest hook of the encapsulated scope: it runs on the matched route,
 * before a body is read.
 */
export async function adminRoutes(
  app: FastifyInstance,
  adminToken: string | undefined,
  deps: RelayAdminDeps,
): Promise<void> {
  if (adminToken === undefined) return;
  await app.register(async (scope) => {
    scope.addHook('onRequest', async (request, reply) => {
      if (!bearerMatches(request.headers.authorization, adminToken)) {
        return reply.status(401).send({ error: 'unauthorized' });
      }
      return undefined;
    });
    await scope.register(fastifyTRPCPlugin, {
      prefix: RELAY_ADMIN_PREFIX,
      trpcOptions: { router: relayAdminRouter(deps) },
    } satisfies FastifyTRPCPluginOptions<RelayAdminRouter>);
  });
}
