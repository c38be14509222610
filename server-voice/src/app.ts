import Fastify, { type FastifyInstance } from 'fastify';
import type { VoiceConfig } from './config.js';
import { discoveryRoutes } from './routes/discovery.js';

/** Builds a ready gateway app from its configuration. */
export async function buildApp(config: VoiceConfig): Promise<FastifyInstance> {
  const app = Fastify({ logger: false });
  discoveryRoutes(app, config);
  await app.ready();
  return app;
}
