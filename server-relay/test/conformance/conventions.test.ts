/**
 * §0 conventions against a real relay process: JSON reply headers, unknown routes, the readJson
 * rules (32,768 characters, empty body, non-object top levels) and the credential formats.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pairHost, registerPhone, ROOMY_BUDGETS, startRelay, type Host, type Phone, type Relay } from './relay.js';

let relay: Relay;
let phone: Phone;
let host: Host;

beforeAll(async () => {
  relay = await startRelay(ROOMY_BUDGETS);
  phone = await registerPhone(relay);
  host = await pairHost(relay, phone);
});
afterAll(() => relay.stop());

function expectJsonHeaders(reply: { headers: Headers; text: string }): void {
  expect(reply.headers.get('content-type')).toBe('application/json; charset=utf-8');
  expect(reply.headers.get('cache-control')).toBe('no-store');
  expect(reply.headers.get('x-content-type-options')).toBe('nosniff');
  expect(reply.headers.get('content-length')).toBe(String(Buffer.byteLength(reply.text)));
}

describe('JSON replies', () => {
  it('GET /healthz answers 200 {ok:true} with every §0 header', async () => {
    const reply = await relay.call('GET', '/healthz');
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({ ok: true });
    expectJsonHeaders(reply);
  });

  it('success and error replies of other routes carry the same headers', async () => {
    const registered = await relay.call('POST', '/v1/installations', {
      body: { bundle_id: 'x', device_token: 'ab'.repeat(32), environment: 'production' },
    });
    expect(registered.status).toBe(400);
    expect(registered.json).toEqual({ error: 'invalid_topic' });
    expectJsonHeaders(registered);
    const meta = await relay.call('GET', '/v1/meta', { auth: phone.auth });
    expect(meta.status).toBe(200);
    expectJsonHeaders(meta);
    const unauthorized = await relay.call('GET', '/v1/meta');
    expect(unauthorized.status).toBe(401);
    expect(unauthorized.json).toEqual({ error: 'unauthorized' });
    expectJsonHeaders(unauthorized);
  });

  it.each([
    ['GET', '/nope'],
    ['GET', '/healthz/'],
    ['POST', '/healthz'],
    ['GET', '/v1/installations'],
    ['PUT', '/v1/installations/NOT-HEX'],
    ['GET', '/v1/events'],
    ['POST', '/v1/decisions/abc'],
    ['POST', '/v1/decisions/abc/respond'],
    ['GET', '/V1/meta'],
  ])('%s %s is 404 {"error":"not_found"}', async (method, path) => {
    const reply = await relay.call(method, path, { auth: phone.auth });
    expect(reply.status).toBe(404);
    expect(reply.json).toEqual({ error: 'not_found' });
    expectJsonHeaders(reply);
  });

  it('HEAD is not a route: the reference routes on method and path, so HEAD /healthz is 404', async () => {
    const response = await fetch(`${relay.url}/healthz`, { method: 'HEAD' });
    expect(response.status).toBe(404);
  });

  it('routing ignores the query string', async () => {
    const reply = await relay.call('GET', '/healthz?probe=1');
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({ ok: true });
  });

  it('logs one JSON access line per request: path without query, no credential anywhere', async () => {
    await relay.call('GET', '/v1/meta?secret-query=1', { auth: phone.auth });
    const lines = relay
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const meta = lines.filter((line) => line.path === '/v1/meta' && line.method === 'GET' && line.status === 200);
    expect(meta.length).toBeGreaterThan(0);
    expect(meta[0]).toEqual({
      level: 'info',
      method: 'GET',
      path: '/v1/meta',
      status: 200,
      duration_ms: expect.any(Number) as unknown,
    });
    const secret = phone.credential.split('.')[1] ?? '';
    expect(relay.output()).not.toContain(secret);
    expect(relay.output()).not.toContain(host.credential.split('.')[2] ?? '');
    expect(relay.output()).not.toContain('secret-query');
  });
});

describe('readJson', () => {
  it('a body of exactly 32,768 characters is read; one more is 413 payload_too_large', async () => {
    const pad = (length: number) => {
      const skeleton = JSON.stringify({ type: 'nope', event_id: 'x', pad: '' });
      return JSON.stringify({ type: 'nope', event_id: 'x', pad: 'a'.repeat(length - skeleton.length) });
    };
    const fits = await relay.call('POST', '/v1/events', { auth: host.auth, raw: pad(32_768) });
    expect(fits.status).toBe(400);
    expect(fits.json).toEqual({ error: 'invalid_event_type' });
    const over = await relay.call('POST', '/v1/events', { auth: host.auth, raw: pad(32_769) });
    expect(over.status).toBe(413);
    expect(over.json).toEqual({ error: 'payload_too_large' });
  });

  it('counts characters, not bytes (32,768 two-byte characters are read)', async () => {
    const skeleton = JSON.stringify({ type: 'nope', pad: '' });
    const raw = JSON.stringify({ type: 'nope', pad: 'é'.repeat(32_768 - skeleton.length) });
    const reply = await relay.call('POST', '/v1/events', { auth: host.auth, raw });
    expect(reply.status).toBe(400);
    expect(reply.json).toEqual({ error: 'invalid_event_type' });
  });

  it('an empty body is {} (then the route rule answers)', async () => {
    const reply = await relay.call('POST', '/v1/events', { auth: host.auth, raw: '' });
    expect(reply.status).toBe(400);
    expect(reply.json).toEqual({ error: 'invalid_event_type' });
    const pairing = await relay.call('POST', `/v1/installations/${phone.id}/pairings`, {
      auth: phone.auth,
      raw: '',
    });
    expect(pairing.status).toBe(201);
  });

  it.each(['null', '[]', '[1]', '"text"', '42', 'true', '{', 'not json', '{"a":1}x'])(
    'top-level %s is 400 invalid_json',
    async (raw) => {
      const reply = await relay.call('POST', '/v1/events', { auth: host.auth, raw });
      expect(reply.status).toBe(400);
      expect(reply.json).toEqual({ error: 'invalid_json' });
    },
  );

  it('the body is read as JSON whatever its content type', async () => {
    const reply = await relay.call('POST', '/v1/events', {
      auth: host.auth,
      raw: '{"type":"plugin.hello","event_id":"ctype-plain-1"}',
      headers: { 'content-type': 'text/plain' },
    });
    expect(reply.status).toBe(202);
    expect(reply.json).toEqual({ accepted: true, delivered: false });
  });
});

describe('credentials', () => {
  it('the scheme is case-insensitive and any whitespace run may follow it', async () => {
    for (const scheme of ['bearer ', 'BEARER ', 'BeArEr\t', 'Bearer   ']) {
      const meta = await relay.call('GET', '/v1/meta', { auth: `${scheme}${phone.credential}` });
      expect(meta.status, scheme).toBe(200);
      const event = await relay.call('POST', '/v1/events', {
        auth: `${scheme}${host.credential}`,
        body: { type: 'plugin.hello', event_id: `scheme-${scheme.trim().length}-${Math.random()}`.replace('.', '') },
      });
      expect(event.status, scheme).toBe(202);
    }
  });

  it.each([
    (c: string) => c,
    (c: string) => `Basic ${c}`,
    (c: string) => `Bearer${c}`,
    (c: string) => `Bearer ${c}x`,
    (c: string) => `Bearer ${c.replace('.', ':')}`,
    (c: string) => `Bearer ${c.split('.')[0] ?? ''}`,
    (c: string) => `Bearer ${c.slice(0, -1)}`,
  ])('device credential variant %# is 401 unauthorized', async (variant) => {
    const reply = await relay.call('GET', '/v1/meta', { auth: variant(phone.credential) });
    expect(reply.status).toBe(401);
    expect(reply.json).toEqual({ error: 'unauthorized' });
  });

  it('a gateway credential is not a device credential and vice versa', async () => {
    expect((await relay.call('GET', '/v1/meta', { auth: host.auth })).status).toBe(401);
    const event = await relay.call('POST', '/v1/events', {
      auth: phone.auth,
      body: { type: 'plugin.hello', event_id: 'cross-cred-1' },
    });
    expect(event.status).toBe(401);
    expect(event.json).toEqual({ error: 'unauthorized' });
  });

  it('a gateway credential with a wrong secret or a foreign installation is 401', async () => {
    const [inst, gw, secret] = host.credential.split('.') as [string, string, string];
    const other = await registerPhone(relay);
    // The last character changed (to one it is not: a secret ending in "A" once made this test pass a valid one).
    const wrong = secret.slice(0, -1) + (secret.endsWith('A') ? 'B' : 'A');
    expect(wrong).not.toBe(secret);
    for (const credential of [`${inst}.${gw}.${wrong}`, `${other.id}.${gw}.${secret}`]) {
      const reply = await relay.call('POST', '/v1/events', {
        auth: `Bearer ${credential}`,
        body: { type: 'plugin.hello', event_id: 'wrong-secret-1' },
      });
      expect(reply.status).toBe(401);
    }
  });
});
