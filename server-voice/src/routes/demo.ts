import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';

const page = readFileSync(new URL('../demo/demo.html', import.meta.url), 'utf8');

/** GET /demo: the browser client page (it calls the gateway with the browser's own WebRTC stack). */
export function demoRoutes(app: FastifyInstance): void {
  app.get('/demo', (_request, reply) => {
    void reply
      .header('content-type', 'text/html; charset=utf-8')
      .header('cache-control', 'no-store')
      .header('content-security-policy', "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'")
      .send(page);
  });
}
