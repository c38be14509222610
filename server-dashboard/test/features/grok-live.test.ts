import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, rmSync, writeFileSync, constants } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Host } from '../../src/app.js';
import { ManualTimers } from '../../src/kernel/timers.js';
import { memoryLogger } from '../../src/log.js';
import { ManualClock, TEST_TOKEN, tempHermesHome, testConfig } from '../support/config.js';
import { startHost } from '../support/host.js';
import {
  openClient,
  RealtimeStandIn,
  sameFrames,
  sendTextAndBinary,
  XAI_FIRST_EVENT,
  xaiHandshake,
  type TestClient,
} from '../support/realtime-stand-ins.js';

const API_KEY = 'xai-default-profile-api-key-0123456789';
const CLOCK_START = Date.UTC(2026, 11, 2, 11, 0, 0);
/** A SuperGrok sign-in as Hermes stores it: a JWT access token that expires in a day. */
const SIGN_IN = [
  Buffer.from('{"alg":"RS256"}').toString('base64url'),
  Buffer.from(JSON.stringify({ sub: 'user', exp: CLOCK_START / 1000 + 86_400 })).toString('base64url'),
  'c2lnbmF0dXJlLXN1cGVyZ3Jvay0wMTIz',
].join('.');
const PREFIX = '/api/plugins/conduit_push';

const home = tempHermesHome();
const xai = new RealtimeStandIn(xaiHandshake(API_KEY, SIGN_IN), XAI_FIRST_EVENT);
const clock = new ManualClock(CLOCK_START);
const timers = new ManualTimers();
const log = memoryLogger();
/** Every close reason and status body the tests received, scanned at the end for a credential. */
const answered: string[] = [];
let host: Host & { url: string };

async function ticket(): Promise<string> {
  const response = await fetch(`${host.url}/api/auth/ws-ticket`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TEST_TOKEN}` },
  });
  const body = (await response.json()) as { ticket: string; ttl_seconds: number };
  expect(body.ttl_seconds).toBe(30);
  return body.ticket;
}

async function connect(query = '', credential: 'ticket' | 'none' = 'ticket'): Promise<TestClient> {
  const params = new URLSearchParams(query);
  if (credential === 'ticket') params.set('ticket', await ticket());
  const url = `${host.url.replace(/^http/, 'ws')}${PREFIX}/grok-live/socket?${params.toString()}`;
  const client = openClient(url);
  void client.closed.then(({ reason }) => answered.push(reason));
  return client;
}

async function status(query = ''): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${host.url}${PREFIX}/grok-live/status${query}`, {
    headers: { authorization: `Bearer ${TEST_TOKEN}` },
  });
  const text = await response.text();
  answered.push(text);
  return { status: response.status, body: JSON.parse(text) as Record<string, unknown> };
}

beforeAll(async () => {
  writeFileSync(path.join(home.root, '.env'), `XAI_API_KEY=${API_KEY}\n`);
  writeFileSync(
    path.join(home.root, 'profiles', 'work', 'auth.json'),
    JSON.stringify({ providers: { 'xai-oauth': { tokens: { access_token: SIGN_IN, refresh_token: 'r' } } } }),
  );
  writeFileSync(
    path.join(home.root, 'profiles', 'work', 'config.yaml'),
    'voice:\n  grok_live:\n    model: grok-voice-work\n    voice: ara\n',
  );
  mkdirSync(path.join(home.root, 'profiles', 'nokey'));
  await xai.start();
  host = await startHost(testConfig(home.root, { clock, timers, log, upstreams: { xai: xai.url } }));
});
afterAll(async () => {
  await host.app.close();
  await xai.stop();
  home.cleanup();
});
beforeEach(() => {
  // A fresh minute for every test: the limiters' windows are the injected clock's.
  clock.advance(60_000);
  xai.answer = xaiHandshake(API_KEY, SIGN_IN);
});

describe('WEBSOCKET /grok-live/socket', () => {
  it("relays text and binary frames both ways byte for byte, with the profile's key and model", async () => {
    const client = await connect();
    const upstream = await xai.connections.next();
    expect(upstream.handshake.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(upstream.handshake.url).toBe('/v1/realtime?model=grok-voice-latest');
    expect(await client.opened).toBeNull();
    // xAI's first event reaches the app unchanged.
    const first = await client.frames.next();
    expect(first).toEqual({ data: Buffer.from(JSON.stringify(XAI_FIRST_EVENT)), isBinary: false });

    const text = '{"type":"input_audio_buffer.append","audio":"AAEC/w=="}  é';
    const binary = Buffer.from([0, 1, 2, 255, 254, 0, 10, 13]);
    expect(await sendTextAndBinary(client.socket, upstream.frames, text, binary)).toEqual(sameFrames(text, binary));

    const delta = '{"type":"response.output_audio.delta","delta":"//79"}';
    expect(await sendTextAndBinary(upstream.socket, client.frames, delta, binary)).toEqual(sameFrames(delta, binary));

    client.socket.close(1000, 'bye');
    expect((await upstream.closed).code).toBe(1000);
  });

  it('delivers frames the app sends the moment the socket opens, in order, once xAI has opened', async () => {
    const client = await connect();
    expect(await client.opened).toBeNull();
    for (const n of [1, 2, 3]) client.socket.send(`{"type":"early","n":${n}}`);
    const upstream = await xai.connections.next();
    const received = [await upstream.frames.next(), await upstream.frames.next(), await upstream.frames.next()];
    expect(received.map((frame) => frame.data.toString())).toEqual([1, 2, 3].map((n) => `{"type":"early","n":${n}}`));
    client.socket.close();
    await client.closed;
  });

  it("uses the profile's SuperGrok sign-in before any key, with its configured model", async () => {
    const client = await connect('profile=work');
    const upstream = await xai.connections.next();
    expect(upstream.handshake.headers.authorization).toBe(`Bearer ${SIGN_IN}`);
    expect(upstream.handshake.url).toBe('/v1/realtime?model=grok-voice-work');
    client.socket.close();
    await client.closed;
  });

  it('closes 1009 "Frame too large" on a client frame over 256 KiB; 256 KiB exactly passes', async () => {
    const client = await connect();
    const upstream = await xai.connections.next();
    const exact = Buffer.alloc(256 * 1024, 7);
    client.socket.send(exact);
    expect((await upstream.frames.next()).data.equals(exact)).toBe(true);
    client.socket.send(Buffer.alloc(256 * 1024 + 1, 7));
    expect(await client.closed).toEqual({ code: 1009, reason: 'Frame too large' });
    expect((await upstream.closed).code).toBe(1000);
    expect(upstream.frames.seen).toHaveLength(1);
  });

  it('accepts and closes 4401 "Dashboard sign-in required" without a ticket, or with a wrong or spent one', async () => {
    const before = xai.handshakes.seen.length;
    const missing = await connect('', 'none');
    expect(await missing.opened).toBeNull();
    expect(await missing.closed).toEqual({ code: 4401, reason: 'Dashboard sign-in required' });

    const wrong = openClient(`${host.url.replace(/^http/, 'ws')}${PREFIX}/grok-live/socket?ticket=not-a-ticket-at-all`);
    expect(await wrong.closed).toEqual({ code: 4401, reason: 'Dashboard sign-in required' });

    const once = await ticket();
    const first = openClient(`${host.url.replace(/^http/, 'ws')}${PREFIX}/grok-live/socket?ticket=${once}`);
    await xai.connections.next();
    const again = openClient(`${host.url.replace(/^http/, 'ws')}${PREFIX}/grok-live/socket?ticket=${once}`);
    expect(await again.closed).toEqual({ code: 4401, reason: 'Dashboard sign-in required' });
    first.socket.close();
    await first.closed;
    // Only the one good ticket reached xAI.
    expect(xai.handshakes.seen.length - before).toBe(1);
  });

  it('standalone, never takes its bearer from the URL: ?token= closes 4401 and nothing reaches xAI', async () => {
    const before = xai.handshakes.seen.length;
    const client = openClient(`${host.url.replace(/^http/, 'ws')}${PREFIX}/grok-live/socket?token=${TEST_TOKEN}`);
    expect(await client.closed).toEqual({ code: 4401, reason: 'Dashboard sign-in required' });
    expect(xai.handshakes.seen.length).toBe(before);
  });

  it('refuses a ticket older than 30 seconds', async () => {
    const stale = await ticket();
    clock.advance(30_000);
    const client = openClient(`${host.url.replace(/^http/, 'ws')}${PREFIX}/grok-live/socket?ticket=${stale}`);
    expect(await client.closed).toEqual({ code: 4401, reason: 'Dashboard sign-in required' });
  });

  it('takes the standalone bearer on the upgrade from a native client', async () => {
    const client = openClient(`${host.url.replace(/^http/, 'ws')}${PREFIX}/grok-live/socket`, {
      authorization: `Bearer ${TEST_TOKEN}`,
    });
    await xai.connections.next();
    expect(await client.opened).toBeNull();
    client.socket.close();
    await client.closed;
  });

  it('closes 4400 for a profile that cannot be resolved, never falling back to the default key', async () => {
    const before = xai.handshakes.seen.length;
    for (const name of ['ghost', 'Bad!Name', '..']) {
      const client = await connect(`profile=${encodeURIComponent(name)}`);
      const closed = await client.closed;
      expect([name, closed.code]).toEqual([name, 4400]);
      expect(closed.reason.length).toBeGreaterThan(0);
    }
    expect(xai.handshakes.seen.length).toBe(before);
  });

  it('closes 4503 when the profile has neither a sign-in nor XAI_API_KEY', async () => {
    const client = await connect('profile=nokey');
    expect(await client.closed).toEqual({
      code: 4503,
      reason: 'Grok Live needs a SuperGrok sign-in (hermes auth add xai-oauth) or XAI_API_KEY on the Hermes host',
    });
  });

  it("maps xAI's refusals: 401/403 to 4400 naming the credential, 429 to 4429", async () => {
    xai.answer = () => ({ status: 401, body: { error: 'Incorrect API key provided' } });
    expect(await (await connect()).closed).toEqual({ code: 4400, reason: 'xAI refused the XAI_API_KEY (HTTP 401)' });
    xai.answer = () => ({ status: 403, body: { error: 'forbidden' } });
    expect(await (await connect('profile=work')).closed).toEqual({
      code: 4400,
      reason: 'xAI refused the SuperGrok sign-in (HTTP 403)',
    });
    xai.answer = () => ({ status: 429, body: { error: 'rate limited' } });
    expect((await (await connect()).closed).code).toBe(4429);
  });

  it("maps xAI's close codes 3000–4999 to 4400 with its reason, cut to 120 bytes", async () => {
    const client = await connect();
    const upstream = await xai.connections.next();
    upstream.socket.close(4002, 'Session expired after the maximum duration');
    expect(await client.closed).toEqual({
      code: 4400,
      reason: 'xAI closed the call (4002): Session expired after the maximum duration',
    });

    const long = await connect();
    const second = await xai.connections.next();
    second.socket.close(4000, 'é'.repeat(60));
    const closed = await long.closed;
    expect(closed.code).toBe(4400);
    expect(Buffer.byteLength(closed.reason)).toBeLessThanOrEqual(120);
    expect(closed.reason.startsWith('xAI closed the call (4000): é')).toBe(true);
  });

  it('closes 4502 when the connection to xAI drops', async () => {
    const client = await connect();
    const upstream = await xai.connections.next();
    upstream.socket.terminate();
    expect(await client.closed).toEqual({ code: 4502, reason: 'The connection to xAI was lost' });
  });

  it('closes 4502 "Could not reach xAI" when xAI does not open within 15 s (timer fired by hand)', async () => {
    xai.answer = () => ({ hold: true });
    const client = await connect();
    await xai.handshakes.next();
    await timers.untilWaiting(1);
    timers.advance(14_999);
    expect(client.socket.readyState).toBe(client.socket.OPEN);
    timers.advance(1);
    expect(await client.closed).toEqual({ code: 4502, reason: 'Could not reach xAI' });
  });

  it('limits new calls to 10 a minute per profile and open calls to 3 per profile (4429)', async () => {
    const open: TestClient[] = [];
    for (let i = 0; i < 3; i++) {
      open.push(await connect());
      await xai.connections.next();
    }
    const fourth = await connect();
    expect(await fourth.closed).toEqual({ code: 4429, reason: 'Too many Grok Live calls are open on this host' });
    for (const client of open) {
      client.socket.close();
      await client.closed;
    }
    // Four used this minute; six more are allowed, the eleventh is not.
    for (let i = 0; i < 6; i++) {
      const client = await connect();
      await xai.connections.next();
      client.socket.close();
      await client.closed;
    }
    const eleventh = await connect();
    expect(await eleventh.closed).toEqual({ code: 4429, reason: 'Too many Grok Live connections; try again shortly' });
  });
});

describe('the host-wide limit', () => {
  it('closes the 31st new call of a minute 4429, whichever profile asks', async () => {
    mkdirSync(path.join(home.root, 'profiles', 'spare'), { recursive: true });
    for (const profile of ['default', 'work', 'nokey']) {
      for (let i = 0; i < 10; i++) {
        const client = await connect(`profile=${profile}`);
        // A profile without a credential is refused after the limits, so its calls count too.
        if (profile === 'nokey') expect((await client.closed).code).toBe(4503);
        else {
          await xai.connections.next();
          client.socket.close();
          await client.closed;
        }
      }
    }
    expect(await (await connect('profile=spare')).closed).toEqual({
      code: 4429,
      reason: 'Too many Grok Live connections; try again shortly',
    });
  });
});

describe('what is not a relayed call', () => {
  it('answers a plain GET on the socket 426 (401 without credentials), and an upgrade to an unknown plugin path 404', async () => {
    const socket = `${host.url}${PREFIX}/grok-live/socket`;
    expect((await fetch(socket)).status).toBe(401);
    const plain = await fetch(socket, { headers: { authorization: `Bearer ${TEST_TOKEN}` } });
    expect([plain.status, await plain.json()]).toEqual([426, { detail: 'Open this route as a WebSocket' }]);
    const unknown = openClient(`${host.url.replace(/^http/, 'ws')}${PREFIX}/no-such-socket`, {
      authorization: `Bearer ${TEST_TOKEN}`,
    });
    expect(await unknown.opened).toBe(404);
  });
});

describe('GET /grok-live/status', () => {
  it('names the model, voice and credential a call would use', async () => {
    expect(await status()).toEqual({
      status: 200,
      body: {
        ok: true,
        model: 'grok-voice-latest',
        voice: 'eve',
        transport: 'relay',
        available: true,
        auth: 'api_key',
        reason: null,
      },
    });
    expect((await status('?profile=work')).body).toMatchObject({
      model: 'grok-voice-work',
      voice: 'ara',
      auth: 'subscription',
      available: true,
    });
    expect((await status('?profile=nokey')).body).toMatchObject({ available: false, auth: null });
    expect((await status('?profile=ghost')).status).toBe(503);
  });

  it('skips an expired sign-in for XAI_API_KEY, and reads a pooled sign-in or the root auth.json', async () => {
    const jwt = (exp: number) => ['e30', Buffer.from(JSON.stringify({ exp })).toString('base64url'), 'c2ln'].join('.');
    const profile = (name: string, auth: unknown, env = '') => {
      const dir = path.join(home.root, 'profiles', name);
      mkdirSync(dir, { recursive: true });
      if (auth !== null) writeFileSync(path.join(dir, 'auth.json'), JSON.stringify(auth));
      writeFileSync(path.join(dir, '.env'), env);
    };
    profile(
      'expired',
      { providers: { 'xai-oauth': { tokens: { access_token: jwt(CLOCK_START / 1000 - 10) } } } },
      `XAI_API_KEY=${API_KEY}\n`,
    );
    profile('pooled', { credential_pool: { 'xai-oauth': [{ label: 'no token' }, { access_token: 'opaque-token' }] } });
    profile('garbled', { providers: { 'xai-oauth': 'not an entry' } });
    expect((await status('?profile=expired')).body).toMatchObject({ auth: 'api_key', available: true });
    expect((await status('?profile=pooled')).body).toMatchObject({ auth: 'subscription', available: true });
    expect((await status('?profile=garbled')).body).toMatchObject({ auth: null, available: false });
    // The root home's sign-in serves every profile that has none of its own.
    writeFileSync(
      path.join(home.root, 'auth.json'),
      JSON.stringify({ providers: { 'xai-oauth': { tokens: { access_token: SIGN_IN } } } }),
    );
    try {
      expect((await status('?profile=nokey')).body).toMatchObject({ auth: 'subscription', available: true });
    } finally {
      rmSync(path.join(home.root, 'auth.json'));
    }
  });

  it('answers 504 "Grok Live status timed out" when the files cannot be read within 25 s', async () => {
    // A FIFO stands in for a home on a stalled disk: reading it blocks until a writer opens it.
    const fifo = path.join(home.root, 'profiles', 'stalled', 'auth.json');
    mkdirSync(path.dirname(fifo), { recursive: true });
    execFileSync('mkfifo', [fifo]);
    try {
      const answer = status('?profile=stalled');
      await timers.untilWaiting(1);
      timers.advance(25_000);
      expect(await answer).toEqual({ status: 504, body: { detail: 'Grok Live status timed out' } });
    } finally {
      // Opening the FIFO for writing and closing it ends the blocked read; without a reader left, a
      // non-blocking open fails at once (ENXIO) instead of waiting for one forever.
      try {
        closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK));
      } catch {
        // no reader: nothing to release
      }
    }
  });

  it('answers 429 past 30 status checks a minute host-wide', async () => {
    for (let i = 0; i < 30; i++) expect((await status(`?profile=${i % 2 ? 'work' : 'default'}`)).status).toBe(200);
    expect(await status('?profile=nokey')).toEqual({
      status: 429,
      body: { detail: 'Too many Grok Live status checks; try again shortly' },
    });
  });
});

describe('a host that fails', () => {
  it('closes 4500 naming the failure by its type only', async () => {
    const broken = await startHost(testConfig(home.root, { clock, timers, log, upstreams: { xai: 'not an origin' } }));
    try {
      const client = openClient(`${broken.url.replace(/^http/, 'ws')}${PREFIX}/grok-live/socket`, {
        authorization: `Bearer ${TEST_TOKEN}`,
      });
      expect(await client.closed).toEqual({ code: 4500, reason: 'Grok Live socket failed on the host (TypeError)' });
    } finally {
      await broken.app.close();
    }
  });
});

describe('secrets', () => {
  it('never puts the key or the sign-in in a log line, a close reason or a status body', async () => {
    expect(log.lines.some((line) => line.includes('Grok Live call opened'))).toBe(true);
    expect(answered.length).toBeGreaterThan(10);
    for (const text of [...answered, ...log.lines]) {
      expect(text).not.toContain(API_KEY);
      expect(text).not.toContain(SIGN_IN);
      expect(text).not.toContain('c2lnbmF0dXJlLXN1cGVyZ3Jvay0wMTIz');
    }
  });

  it('answers an upgrade 403, unaccepted, after 30 refusals a minute host-wide', async () => {
    const url = `${host.url.replace(/^http/, 'ws')}${PREFIX}/grok-live/socket`;
    for (let i = 0; i < 30; i++) expect((await openClient(url).closed).code).toBe(4401);
    expect(await openClient(url).opened).toBe(403);
  });
});
