import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineRoute, errorBody } from '../src/route.js';
import { bindRoute, WireError } from '../src/server/index.js';

const apps: FastifyInstance[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()));
});

/** A Fastify app whose error handler answers WireErrors as the servers do. */
function appWith(bind: (app: FastifyInstance) => void): FastifyInstance {
  const app = Fastify();
  app.setErrorHandler((error, _request, reply) =>
    error instanceof WireError
      ? reply.status(error.status).send(error.body())
      : reply.status(500).send({ error: 'internal_error', message: (error as Error).message }),
  );
  bind(app);
  apps.push(app);
  return app;
}

const body = z.object({ job_id: z.string().trim().min(1, 'invalid_job_id'), notify: z.boolean() });
const responses = {
  200: { description: 'ok', schema: z.object({ job_id: z.string(), notify: z.boolean() }) },
  400: { description: 'bad', schema: errorBody(['invalid_request', 'invalid_job_id']) },
  401: { description: 'who?', schema: errorBody(['unauthorized']) },
};

describe('bindRoute hands the handler the body its contract describes', () => {
  it('bind (default): the schema’s output, validated before the handler', async () => {
    const route = defineRoute({
      method: 'PUT',
      path: '/jobs',
      operationId: 'putJob',
      summary: 'put',
      auth: 'none',
      body,
      invalidBodyCode: 'invalid_request',
      responses,
    });
    const app = appWith((app) => bindRoute(app, route, ({ body }) => ({ status: 200, body })));
    const ok = await app.inject({ method: 'PUT', url: '/jobs', payload: { job_id: '  j1 ', notify: true, x: 1 } });
    expect(ok.json()).toEqual({ job_id: 'j1', notify: true });
    const bad = await app.inject({ method: 'PUT', url: '/jobs', payload: { job_id: ' ', notify: true } });
    expect([bad.statusCode, bad.json()]).toEqual([400, { error: 'invalid_job_id' }]);
    const noCode = await app.inject({ method: 'PUT', url: '/jobs', payload: { job_id: 'j', notify: 'yes' } });
    expect([noCode.statusCode, noCode.json()]).toEqual([400, { error: 'invalid_request' }]);
  });

  it('handler: validated when the handler calls readBody(), after its own checks', async () => {
    const route = defineRoute({
      method: 'PUT',
      path: '/jobs',
      operationId: 'putJob',
      summary: 'put',
      auth: 'bearer',
      body,
      bodyReading: 'handler',
      invalidBodyCode: 'invalid_request',
      responses,
    });
    let reads = 0;
    const app = appWith((app) =>
      bindRoute(app, route, ({ request, readBody }) => {
        if (request.headers.authorization !== 'Bearer ok') throw new WireError(401, 'unauthorized');
        reads += 1;
        const first = readBody();
        expect(readBody()).toBe(first);
        return { status: 200, body: first };
      }),
    );
    const anonymous = await app.inject({ method: 'PUT', url: '/jobs', payload: { job_id: ' ', notify: 1 } });
    expect([anonymous.statusCode, anonymous.json()]).toEqual([401, { error: 'unauthorized' }]);
    const bad = await app.inject({
      method: 'PUT',
      url: '/jobs',
      headers: { authorization: 'Bearer ok' },
      payload: { job_id: ' ', notify: true },
    });
    expect([bad.statusCode, bad.json()]).toEqual([400, { error: 'invalid_job_id' }]);
    const ok = await app.inject({
      method: 'PUT',
      url: '/jobs',
      headers: { authorization: 'Bearer ok' },
      payload: { job_id: 'j2 ', notify: false },
    });
    expect(ok.json()).toEqual({ job_id: 'j2', notify: false });
    expect(reads).toBe(2);
  });

  it('raw: the unparsed body, for a handler with reading rules of its own', async () => {
    const route = defineRoute({
      method: 'POST',
      path: '/raw',
      operationId: 'postRaw',
      summary: 'raw',
      auth: 'none',
      body: z.object({ sdp: z.string() }),
      bodyContentType: 'application/sdp',
      responses: { 200: { description: 'echo', schema: z.string(), contentType: 'text/plain' } },
    });
    const app = appWith((app) => {
      app.addContentTypeParser('application/sdp', { parseAs: 'string' }, (_request, raw, done) => done(null, raw));
      bindRoute(app, route, ({ body }) => ({ status: 200, body: `got ${String(body)}` }));
    });
    const echoed = await app.inject({
      method: 'POST',
      url: '/raw',
      headers: { 'content-type': 'application/sdp' },
      payload: 'v=0',
    });
    expect(echoed.body).toBe('got v=0');
  });
});
