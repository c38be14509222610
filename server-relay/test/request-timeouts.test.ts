/**
 * Slow clients cannot hold sockets (issue 12, item 5): a request whose headers or body never finish
 * is closed within RELAY_REQUEST_TIMEOUT_MS, a connection that never sends a byte too, and one
 * address holds at most RELAY_MAX_CONNECTIONS_PER_IP connections. Long-polls and WebSocket upgrades
 * outlive the bound. Raw TCP sockets against a real relay app on an ephemeral port.
 */
import { createHash, randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { paired, startRelay, testDatabase, type Relay } from './support/harness.js';
import { open } from './watch/ws-clients.js';

const BOUND_MS = 400;
/** Node checks the bound every quarter of it; the rest is scheduling slack on a loaded machine. */
const CLOSED_WITHIN_MS = BOUND_MS + BOUND_MS / 4 + 1_500;

let db: { url: string; release: () => Promise<void> };
beforeAll(async () => {
  db = await testDatabase('sqlite');
});
afterAll(async () => {
  await db.release();
});

interface RawConnection {
  socket: Socket;
  received: () => string;
  /** Resolves with the milliseconds from connect to close. */
  closed: Promise<number>;
}

function rawConnect(baseUrl: string): Promise<RawConnection> {
  const { port, hostname } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let data = '';
    let connectedAt = 0;
    socket.on('data', (chunk: Buffer) => (data += chunk.toString('latin1')));
    // The relay closing on us may surface as a reset on the next write; the close is what counts.
    socket.on('error', () => undefined);
    const closed = new Promise<number>((done) => socket.once('close', () => done(Date.now() - connectedAt)));
    socket.once('connect', () => {
      connectedAt = Date.now();
      resolve({ socket, received: () => data, closed });
    });
    socket.once('error', reject);
  });
}

describe('request timeouts', () => {
  let relay: Relay;
  beforeAll(async () => {
    relay = await startRelay(db.url, {
      RELAY_REQUEST_TIMEOUT_MS: String(BOUND_MS),
      TRUST_PROXY: '1',
      RELAY_REGISTRATIONS_PER_MINUTE: '1000',
      RELAY_DEVICE_CHANGES_PER_MINUTE: '1000',
      WATCH_HOST_POLL_WAIT_MS: String(BOUND_MS * 4),
    });
  });
  afterAll(async () => {
    await relay.close();
  });

  it('a request whose headers never finish is closed within the bound', async () => {
    const connection = await rawConnect(relay.baseUrl);
    connection.socket.write('POST /v1/installations HTTP/1.1\r\nHost: relay\r\nContent-Type: application/json\r\n');
    expect(await connection.closed).toBeLessThan(CLOSED_WITHIN_MS);
  });

  it('headers dripped one byte at a time are cut at the bound (408 request_timeout)', async () => {
    const connection = await rawConnect(relay.baseUrl);
    connection.socket.write('GET /healthz HTTP/1.1\r\nHost: relay\r\nX-Padding: ');
    // Each byte resets any inactivity timer: only a bound on the whole header block ends this.
    const drip = setInterval(() => connection.socket.write('a'), BOUND_MS / 8);
    try {
      expect(await connection.closed).toBeLessThan(CLOSED_WITHIN_MS);
    } finally {
      clearInterval(drip);
    }
    expect(connection.received()).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    expect(connection.received()).toContain('\r\n\r\n{"error":"request_timeout"}');
  });

  it('a body that never finishes is closed within the bound with 408', async () => {
    const connection = await rawConnect(relay.baseUrl);
    connection.socket.write(
      'POST /v1/installations HTTP/1.1\r\nHost: relay\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{"bundle_id":',
    );
    expect(await connection.closed).toBeLessThan(CLOSED_WITHIN_MS);
    expect(connection.received()).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('a connection that never sends a byte is closed within the bound', async () => {
    const connection = await rawConnect(relay.baseUrl);
    expect(await connection.closed).toBeLessThan(CLOSED_WITHIN_MS);
    expect(connection.received()).toBe('');
  });

  it('a long-poll held past the bound is answered, and an upgraded audio socket outlives it', async () => {
    const host = await paired(relay);
    const watchKey = randomBytes(32).toString('base64url');
    const grant = await relay.client.POST('/v1/watch-tools/grants', {
      headers: host.gatewayAuth,
      body: {
        watch_key_sha256: createHash('sha256').update(watchKey, 'ascii').digest('hex'),
        ttl_s: 600,
        max_calls: 10,
        audio: true,
      },
    });
    const gid = grant.data?.grant_id ?? '';
    expect(grant.response.status).toBe(201);
    const audio = await open(
      `${relay.baseUrl.replace('http', 'ws')}/v1/watch-audio/${gid}/host`,
      host.gatewayAuth.authorization,
    );
    const startedAt = Date.now();
    const poll = await relay.client.GET('/v1/watch-tools/grants/{gid}/calls', {
      params: { path: { gid }, query: { wait_ms: String(BOUND_MS * 4) } },
      headers: host.gatewayAuth,
    });
    expect(poll.response.status).toBe(200);
    expect(poll.data).toEqual({ calls: [] });
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(BOUND_MS * 2);
    // The audio socket has been open for longer than the bound and still answers a ping.
    const pong = new Promise<void>((resolve) => audio.ws.once('pong', () => resolve()));
    audio.ws.ping();
    await pong;
    expect(audio.ws.readyState).toBe(audio.ws.OPEN);
    audio.ws.close(1000);
    await audio.closed;
  });
});

describe('connections per address', () => {
  let relay: Relay;
  beforeAll(async () => {
    // No TRUST_PROXY: the bound counts socket peers (behind a proxy, the proxy bounds its clients).
    relay = await startRelay(db.url, { RELAY_MAX_CONNECTIONS_PER_IP: '3' });
  });
  afterAll(async () => {
    await relay.close();
  });

  it('the connection over the bound is closed at once; a freed slot admits the next', async () => {
    const serverSideClosed: Promise<void>[] = [];
    relay.app.server.on('connection', (socket: Socket) =>
      serverSideClosed.push(new Promise((resolve) => socket.once('close', () => resolve()))),
    );
    const held = await Promise.all([1, 2, 3].map(() => rawConnect(relay.baseUrl)));
    const fourth = await rawConnect(relay.baseUrl);
    await fourth.closed;
    expect(fourth.received()).toBe('');
    for (const connection of held) expect(connection.socket.destroyed).toBe(false);

    // The held ones still work: a request on one, asking the relay to close it afterwards.
    const first = held[0]!;
    first.socket.write('GET /healthz HTTP/1.1\r\nHost: relay\r\nConnection: close\r\n\r\n');
    await first.closed;
    expect(first.received()).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    await serverSideClosed[0];

    const next = await fetch(`${relay.baseUrl}/healthz`);
    expect(next.status).toBe(200);
    for (const connection of held.slice(1)) connection.socket.destroy();
  });
});
