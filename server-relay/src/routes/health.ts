import type { FastifyInstance } from 'fastify';
import { healthz } from '@conduit/contracts/relay/health';
import { bindRoute } from '@conduit/contracts/server';

export function healthRoutes(app: FastifyInstance): void {
  bindRoute(app, healthz, () => ({ status: 200, body: { ok: true } }));
}
