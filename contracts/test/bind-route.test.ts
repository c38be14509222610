import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineRoute, errorBody } from '../src/route.js';
import { bindRoute, replyChecksEnabled, UndeclaredReplyError, WireError } from '../src/server/index.js';

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
      : reply
          .status(500)
          .send({ error: 'internal_error', name: (error as Error).name, message: (error as Error).message }),
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

describe('a body the contract refuses is answered with the contract’s code and status', () => {
  const claim = defineRoute({
    method: 'POST',
    path: '/claim',
    operationId: 'claim',
    summary: 'claim',
    auth: 'none',
    bodyReading: 'handler',
    body: z.object({
      code: z.string(),
      topic: z.string(),
      envelope: z.object({ v: z.literal(1), n: z.string().length(4) }).optional(),
    }),
    bodyErrorCodes: { code: 'unknown_code', topic: 'invalid_topic', envelope: 'invalid_envelope' },
    responses: {
      200: { description: 'ok', schema: z.object({ topic: z.string() }) },
      400: { description: 'bad', schema: errorBody(['invalid_json', 'invalid_topic', 'invalid_envelope']) },
      404: { description: 'no such code', schema: errorBody(['unknown_code']) },
    },
  });
  const app = () =>
    appWith((app) =>
      bindRoute(app, claim, ({ readBody }) => ({ status: 200, body: { topic: readBody().topic } }), {
        readJson: (request) => {
          if (typeof request.body !== 'object' || request.body === null) throw new WireError(400, 'invalid_json');
          return request.body;
        },
        // What only the server knows, in the field's own place in the order.
        narrowBody: (schema) => schema.extend({ topic: z.literal('com.example') }),
      }),
    );
  const post = async (payload: unknown) => {
    const answer = await app().inject({
      method: 'POST',
      url: '/claim',
      payload: JSON.stringify(payload),
      headers: { 'content-type': 'application/json' },
    });
    return [answer.statusCode, answer.json()];
  };

  it('by the field the first failing check is under, with the status that code is declared with', async () => {
    expect(await post({ code: 5, topic: 'x' })).toEqual([404, { error: 'unknown_code' }]);
    expect(await post({ code: 'c', topic: 'x', envelope: { v: 2 } })).toEqual([400, { error: 'invalid_topic' }]);
    expect(await post({ code: 'c', topic: 'com.example', envelope: { v: 1, n: 'abc' } })).toEqual([
      400,
      { error: 'invalid_envelope' },
    ]);
    expect(await post({ code: 'c', topic: 'com.example' })).toEqual([200, { topic: 'com.example' }]);
  });
});

describe('in test builds every reply is checked against the contract', () => {
  const route = defineRoute({
    method: 'GET',
    path: '/things/{id}',
    operationId: 'getThing',
    summary: 'thing',
    auth: 'none',
    params: z.object({ id: z.string().regex(/^\d+$/) }),
    responses: {
      200: { description: 'ok', schema: z.object({ name: z.string() }) },
      404: { description: 'none', schema: errorBody(['unknown_thing']) },
    },
  });
  type Answer = ReturnType<Parameters<typeof bindRoute<typeof route>>[2]>;
  const appAnswering = (answer: () => Answer, checkReplies?: boolean) =>
    appWith((app) => bindRoute(app, route, answer, checkReplies === undefined ? {} : { checkReplies }));
  const get = async (app: FastifyInstance, url = '/things/1') => {
    const answer = await app.inject({ method: 'GET', url });
    return [answer.statusCode, answer.json()];
  };

  it('is on under vitest', () => {
    expect(replyChecksEnabled()).toBe(true);
    expect(replyChecksEnabled({ CONDUIT_CHECK_REPLIES: '0', VITEST: 'true' })).toBe(false);
    expect(replyChecksEnabled({})).toBe(false);
  });

  it('passes declared answers and declared WireErrors through', async () => {
    expect(await get(appAnswering(() => ({ status: 200, body: { name: 'n' } })))).toEqual([200, { name: 'n' }]);
    const refusing = appAnswering(() => {
      throw new WireError(404, 'unknown_thing' as never);
    });
    expect(await get(refusing)).toEqual([404, { error: 'unknown_thing' }]);
  });

  it('an undeclared body, status or thrown WireError fails: 500 undeclared_reply', async () => {
    const undeclared = { error: 'undeclared_reply' };
    // Casts stand for what the type checks miss: a body built at run time, a throw deep in a call.
    const badBody = appAnswering(() => ({ status: 200, body: { name: 5 } }) as unknown as Answer);
    expect(await get(badBody)).toEqual([500, expect.objectContaining(undeclared)]);
    const badStatus = appAnswering(() => ({ status: 201, body: { name: 'n' } }) as unknown as Answer);
    expect(await get(badStatus)).toEqual([500, expect.objectContaining(undeclared)]);
    const badThrow = appAnswering(() => {
      throw new WireError(429, 'rate_limited');
    });
    const [status, body] = await get(badThrow);
    expect([status, body]).toEqual([500, expect.objectContaining(undeclared)]);
    expect((body as { message: string }).message).toBe(
      new UndeclaredReplyError(route, 429, 'the contract declares no such status').message,
    );
    // bindRoute's own answers are checked too: this route declares no 404 not_found for a bad id.
    expect(await get(badThrow, '/things/x')).toEqual([500, expect.objectContaining(undeclared)]);
  });

  it('can be turned off (production)', async () => {
    const badBody = appAnswering(() => ({ status: 200, body: { name: 5 } }) as unknown as Answer, false);
    expect(await get(badBody)).toEqual([200, { name: 5 }]);
  });
});
