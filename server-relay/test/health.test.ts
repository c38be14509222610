import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRelayClient } from '@conduit/generated/relay/client';
import { buildApp } from '../src/app.js';

let app: FastifyInstance;
let baseUrl: string;

beforeAll(async () => {
  app = await buildApp({ host: '127.0.0.1', port: 0 });
  baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(() => app.close());

describe('GET /healthz', () => {
  it('answers 200 {"ok":true} through the generated client', async () => {
    const relay = createRelayClient({ baseUrl });
    const { data, response } = await relay.GET('/healthz');
    expect(response.status).toBe(200);
    expect(data).toEqual({ ok: true });
  });

  it('an unknown route answers 404 {"error":"not_found"}', async () => {
    const response = await fetch(`${baseUrl}/v1/nope`);
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ error: 'not_found' });
  });
});
