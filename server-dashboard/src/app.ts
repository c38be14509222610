import Fastify, { type FastifyInstance } from 'fastify';
import { WireError } from '@conduit/contracts/server';
import type { HostConfig } from './config.js';
import { capabilityRoutes } from './routes/capabilities.js';

/** Builds a ready host service app from its configuration. */
export async function buildApp(config: HostConfig): Promise<FastifyInstance> {
  const app = Fastify({ logger: false });
  app.setErrorHandler((error, _request, reply) => {
    if (error instanceof WireError) return reply.status(error.status).send(error.body());
    return reply.status(500).send({ error: 'internal_error' });
  });
  capabilityRoutes(app, config);
  await app.ready();
  return app;
}
