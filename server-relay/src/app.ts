import Fastify, { type FastifyInstance } from 'fastify';
import { WireError } from '@conduit/contracts/server';
import type { RelayConfig } from './config.js';
import { healthRoutes } from './routes/health.js';

/** Builds a ready relay app from its configuration; nothing global, so tests build many. */
export async function buildApp(config: RelayConfig): Promise<FastifyInstance> {
  void config;
  const app = Fastify({ logger: false });
  app.setErrorHandler((error, _request, reply) => {
    if (error instanceof WireError) return reply.status(error.status).send(error.body());
    reply.log.error(error);
    return reply.status(500).send({ error: 'internal_error' });
  });
  app.setNotFoundHandler((_request, reply) => reply.status(404).send({ error: 'not_found' }));
  healthRoutes(app);
  await app.ready();
  return app;
}
