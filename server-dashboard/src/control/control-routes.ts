import { fastifyTRPCPlugin, type FastifyTRPCPluginOptions } from '@trpc/server/adapters/fastify';
import type { FastifyInstance } from 'fastify';
import { HOST_CONTROL_PREFIX } from '@conduit/contracts/dashboard/control';
import { bearerMatches } from '@conduit/contracts/server/secrets';
import { isLoopbackHost } from '../kernel/loopback.js';
import { hostControlRouter, type HostControlDeps, type HostControlRouter } from './control-router.js';

/**
 * The control API at /_conduit/control: outside /api so it is never proxied to the dashboard. Only
 * this machine, only with the control token: decided in onRequest of this encapsulated scope, from
 * the socket and the Authorization header, before a body is read (as the hook and MCP endpoints).
 */
export async function controlRoutes(app: FastifyInstance, token: string, deps: HostControlDeps): Promise<void> {
  await app.register(async (scope) => {
    scope.addHook('onRequest', async (request, reply) => {
      const remote = request.socket.remoteAddress ?? '';
      if (!isLoopbackHost(remote) || !bearerMatches(request.headers.authorization, token)) {
        return reply.status(401).header('connection', 'close').send({ error: 'unauthorized' });
      }
      return undefined;
    });
    await scope.register(fastifyTRPCPlugin, {
      prefix: HOST_CONTROL_PREFIX,
      trpcOptions: { router: hostControlRouter(deps) },
    } satisfies FastifyTRPCPluginOptions<HostControlRouter>);
  });
}
