/**
 * Every status the relay answers on a route is one the route's contract declares, with a body its
 * schema accepts, so a client generated from the locked OpenAPI types it (issue 13, item 10): ids of
 * the wrong shape, plain requests to the WebSocket routes, the server's own answers before a route
 * runs (408 request_timeout, 413 over the byte bound, 431 headers_too_large), repeated query
 * parameters. Each case runs over the whole relay surface; raw sockets where fetch cannot say it.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { relaySurface } from '@conduit/contracts/relay/index';
import type { RouteContract } from '@conduit/contracts/route';
import { paired, startRelay, testDatabase, type Relay } from './support/harness.js';

const BOUND_MS = 400;
const ROUTES = Object.values(relaySurface.routes) as RouteContract[];

let relay: Relay;
let release: () => Promise<void>;

beforeAll(async () => {
  const db = await testDatabase('sqlite');
  release = db.release;
  relay = await startRelay(db.url, { RELAY_REQUEST_TIMEOUT_MS: String(BOUND_MS), TRUST_PROXY: '1' });
});

afterAll(async () => {
  await relay.close();
  await release();
});

/** Why the answer is not one the route declares, or undefined when it is. */
function undeclared(route: RouteContract, status: number, body: unknown): string | undefined {
  const spec = route.responses[status];
  if (!spec) return `${route.operationId} declares no ${status}`;
  if (!spec.schema) return body === undefined ? undefined : `${route.operationId} declares no body for ${status}`;
  const parsed = spec.schema.safeParse(body);
  return parsed.success ? undefined : `${route.operationId} ${status}: ${JSON.stringify(body)} is not declared`;
}

/** Path ids that match their patterns (installation id, decision id, ring, grant and call ids, a token). */
const SAMPLE_IDS: Record<string, string> = {
  id: 'abcd-0123',
  ringId: 'A'.repeat(22),
  gid: 'A'.repeat(22),
  rid: 'B'.repeat(22),
  push_token: 'ab'.repeat(32),
};

function pathOf(route: RouteContract, id: (name: string) => string): string {
  return route.path.replace(/\{([A-Za-z0-9_]+)\}/g, (_match, name: string) => id(name));
}

interface RawAnswer {
  status: number;
  body: unknown;
}

/** Writes raw HTTP and reads the answer until the relay closes the connection (it closes after each of these). */
function raw(write: (socket: ReturnType<typeof connect>) => void): Promise<RawAnswer> {
  const { port, hostname } = new URL(relay.baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let data = '';
    socket.on('data', (chunk: Buffer) => (data += chunk.toString('utf8')));
    socket.on('error', () => undefined);
    socket.once('connect', () => write(socket));
    socket.once('close', () => {
      const match = /^HTTP\/1\.1 (\d{3})/.exec(data);
      if (!match) return reject(new Error(`no HTTP answer: ${JSON.stringify(data.slice(0, 200))}`));
      const text = data.slice(data.indexOf('\r\n\r\n') + 4);
      resolve({ status: Number(match[1]), body: text === '' ? undefined : (JSON.parse(text) as unknown) });
    });
  });
}

const withBody = (route: RouteContract) => route.method !== 'GET';

describe('every status the relay answers is declared by the route it answers on', () => {
  it('a path id of the wrong shape: 404 not_found (a plain request, for the WebSocket routes)', async () => {
    const routes = ROUTES.filter((route) => route.params);
    expect(routes.length).toBeGreaterThan(15);
    const problems: string[] = [];
    for (const route of routes) {
      const response = await fetch(`${relay.baseUrl}${pathOf(route, () => '!')}`, {
        method: route.method,
        headers: { 'content-type': 'application/json', 'x-forwarded-for': '10.9.0.1' },
        ...(withBody(route) ? { body: '{}' } : {}),
      });
      const body: unknown = await response.json();
      expect([route.operationId, response.status, body]).toEqual([route.operationId, 404, { error: 'not_found' }]);
      const why = undeclared(route, response.status, body);
      if (why) problems.push(why);
    }
    expect(problems).toEqual([]);
  });

  it('the WebSocket routes: a plain GET is 404 not_found, one with an Upgrade header they do not switch on 400 bad_upgrade', async () => {
    const routes = ROUTES.filter((route) => route.path.startsWith('/v1/watch-audio/'));
    expect(routes).toHaveLength(2);
    for (const route of routes) {
      const path = pathOf(route, (name) => SAMPLE_IDS[name]!);
      const plain = await fetch(`${relay.baseUrl}${path}`);
      const plainBody: unknown = await plain.json();
      expect([plain.status, plainBody]).toEqual([404, { error: 'not_found' }]);
      expect(undeclared(route, plain.status, plainBody)).toBeUndefined();
      const h2c = await raw((socket) =>
        socket.write(`GET ${path} HTTP/1.1\r\nHost: relay\r\nUpgrade: h2c\r\nConnection: close\r\n\r\n`),
      );
      expect(h2c).toEqual({ status: 400, body: { error: 'bad_upgrade' } });
      expect(undeclared(route, h2c.status, h2c.body)).toBeUndefined();
    }
  });

  it('headers that do not arrive within RELAY_REQUEST_TIMEOUT_MS: 408 request_timeout, on every route', async () => {
    const answers = await Promise.all(
      ROUTES.map(async (route) => {
        let drip: NodeJS.Timeout | undefined;
        const answer = await raw((socket) => {
          socket.write(
            `${route.method} ${pathOf(route, (name) => SAMPLE_IDS[name]!)} HTTP/1.1\r\nHost: relay\r\nX-Padding: `,
          );
          drip = setInterval(() => socket.writable && socket.write('a'), BOUND_MS / 8);
        }).finally(() => clearInterval(drip));
        return { route, answer };
      }),
    );
    for (const { route, answer } of answers) {
      expect([route.operationId, answer]).toEqual([
        route.operationId,
        { status: 408, body: { error: 'request_timeout' } },
      ]);
    }
    expect(answers.map(({ route, answer }) => undeclared(route, answer.status, answer.body)).filter(Boolean)).toEqual(
      [],
    );
  });

  it('a header block over 16 KB: 431 headers_too_large, on every route', async () => {
    const problems: string[] = [];
    for (const route of ROUTES) {
      const answer = await raw((socket) =>
        socket.write(
          `${route.method} ${pathOf(route, (name) => SAMPLE_IDS[name]!)} HTTP/1.1\r\nHost: relay\r\n` +
            `X-Padding: ${'a'.repeat(20_000)}\r\n\r\n`,
        ),
      );
      expect([route.operationId, answer]).toEqual([
        route.operationId,
        { status: 431, body: { error: 'headers_too_large' } },
      ]);
      const why = undeclared(route, answer.status, answer.body);
      if (why) problems.push(why);
    }
    expect(problems).toEqual([]);
  });

  it('a body over the byte bound: 413 payload_too_large, on every route that takes a body (also those that read none)', async () => {
    const problems: string[] = [];
    for (const route of ROUTES.filter(withBody)) {
      const answer = await raw((socket) =>
        socket.write(
          `${route.method} ${pathOf(route, (name) => SAMPLE_IDS[name]!)} HTTP/1.1\r\nHost: relay\r\n` +
            'Content-Type: application/json\r\nContent-Length: 140000\r\n\r\n{',
        ),
      );
      expect([route.operationId, answer]).toEqual([
        route.operationId,
        { status: 413, body: { error: 'payload_too_large' } },
      ]);
      const why = undeclared(route, answer.status, answer.body);
      if (why) problems.push(why);
    }
    expect(problems).toEqual([]);
  });

  it('a repeated query parameter is read as the reference reads it (the first), not refused', async () => {
    const ring = relaySurface.routes.fetchRingSession as RouteContract;
    const fetched = await fetch(`${relay.baseUrl}/v1/rings/${'A'.repeat(22)}/session?wait=1&wait=2`, {
      headers: { authorization: `Bearer ${'C'.repeat(43)}` },
    });
    const fetchedBody: unknown = await fetched.json();
    expect([fetched.status, fetchedBody]).toEqual([404, { error: 'unknown_ring' }]);
    expect(undeclared(ring, fetched.status, fetchedBody)).toBeUndefined();

    const { gatewayAuth } = await paired(relay);
    const grant = await relay.client.POST('/v1/watch-tools/grants', {
      headers: gatewayAuth,
      body: { watch_key_sha256: 'ab'.repeat(32), ttl_s: 60, max_calls: 1 },
    });
    const poll = await fetch(
      `${relay.baseUrl}/v1/watch-tools/grants/${grant.data!.grant_id}/calls?wait_ms=1&wait_ms=x`,
      {
        headers: gatewayAuth,
      },
    );
    expect([poll.status, await poll.json()]).toEqual([200, { calls: [] }]);
  });
});
