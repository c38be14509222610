import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRelay, testDatabase, type Relay } from './support/harness.js';

let relay: Relay;
let release: () => Promise<void>;

beforeAll(async () => {
  const db = await testDatabase('sqlite');
  release = db.release;
  relay = await startRelay(db.url);
});
afterAll(async () => {
  await relay.close();
  await release();
});

describe('GET /healthz and the reply conventions', () => {
  it('answers 200 {"ok":true} through the generated client', async () => {
    const { data, response } = await relay.client.GET('/healthz');
    expect(response.status).toBe(200);
    expect(data).toEqual({ ok: true });
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('an unknown route answers 404 {"error":"not_found"}', async () => {
    const response = await fetch(`${relay.baseUrl}/v1/nope?secret=1`);
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ error: 'not_found' });
    const line = relay.accessLog.at(-1);
    expect(line).toMatchObject({ level: 'info', method: 'GET', path: '/v1/nope', status: 404 });
    expect(typeof line?.duration_ms).toBe('number');
  });
});
