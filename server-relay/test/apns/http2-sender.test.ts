import { createServer } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Http2ApnsSender } from '../../src/apns/http2-sender.js';
import { ApnsSimulator } from '../../src/apns/simulator.js';
import type { ApnsProviderOptions } from '../../src/apns/types.js';
import { KEY_ID, OTHER_TOKEN, providerKeyPair, TEAM_ID, TOKEN, TOPIC } from './keys.js';

const key = providerKeyPair();
let simulator: ApnsSimulator;
let clockMs = Date.UTC(2026, 10, 29, 12, 0, 0);
const senders: Http2ApnsSender[] = [];

function sender(overrides: Partial<ApnsProviderOptions> = {}): Http2ApnsSender {
  const created = new Http2ApnsSender(
    {
      keyPem: key.privatePem,
      keyId: KEY_ID,
      teamId: TEAM_ID,
      origin: simulator.origin,
      ca: simulator.ca,
      now: () => clockMs,
      ...overrides,
    },
    TOPIC,
  );
  senders.push(created);
  return created;
}

beforeAll(async () => {
  simulator = await ApnsSimulator.start({
    publicKey: key.publicPem,
    keyId: KEY_ID,
    teamId: TEAM_ID,
    allowedTopics: [
      TOPIC,
      `${TOPIC}.voip`,
      `${TOPIC}.push-type.liveactivity`,
      `${TOPIC}.watchkitapp.voip`,
      `${TOPIC}.location-query`,
    ],
    now: () => clockMs,
  });
});
afterEach(async () => {
  await Promise.all(senders.splice(0).map((s) => s.close()));
  simulator.requests.length = 0;
});
afterAll(() => simulator.close());

describe('Http2ApnsSender against the APNs simulator', () => {
  it('posts an alert to /3/device/<token> with a valid ES256 provider token and the alert headers', async () => {
    const payload = {
      aps: { alert: { title: 'Hi', body: 'there' }, 'thread-id': 't1' },
      conduit: { type: 'response.ready' },
    };
    const result = await sender().send(TOKEN, {
      payload,
      collapseId: 'response.ready:0123456789abcdef',
      threadId: 't1',
    });
    expect(result).toEqual({ ok: true, status: 200 });
    const [request] = simulator.requests;
    expect(request?.deviceToken).toBe(TOKEN);
    expect(request?.payload).toEqual(payload);
    expect(request?.jwtHeader).toEqual({ alg: 'ES256', kid: KEY_ID });
    expect(request?.jwtClaims).toEqual({ iss: TEAM_ID, iat: Math.floor(clockMs / 1000) });
    expect(request?.headers).toMatchObject({
      'apns-topic': TOPIC,
      'apns-push-type': 'alert',
      'apns-priority': '10',
      'apns-collapse-id': 'response.ready:0123456789abcdef',
      'content-type': 'application/json',
    });
    expect(request?.headers.authorization).toMatch(/^bearer [\w-]+\.[\w-]+\.[\w-]+$/);
    expect(request?.headers).not.toHaveProperty('apns-expiration');
  });

  it('sends a VoIP push with its topic, expiration and priority, and no collapse id', async () => {
    const expiration = Math.floor(clockMs / 1000) + 86_400;
    const result = await sender().send(TOKEN, {
      payload: { aps: {}, conduit: { type: 'call.requested' } },
      pushType: 'voip',
      topic: `${TOPIC}.voip`,
      expiration,
    });
    expect(result.ok).toBe(true);
    expect(simulator.requests[0]?.headers).toMatchObject({
      'apns-topic': `${TOPIC}.voip`,
      'apns-push-type': 'voip',
      'apns-expiration': String(expiration),
      'apns-priority': '10',
    });
    expect(simulator.requests[0]?.headers).not.toHaveProperty('apns-collapse-id');
  });

  it('defaults background pushes to priority 5 and honours an explicit priority', async () => {
    const s = sender();
    await s.send(TOKEN, { payload: { aps: { 'content-available': 1 } }, pushType: 'background' });
    await s.send(TOKEN, {
      payload: { aps: {} },
      pushType: 'liveactivity',
      topic: `${TOPIC}.push-type.liveactivity`,
      priority: 5,
    });
    expect(simulator.requests.map((r) => r.headers['apns-priority'])).toEqual(['5', '5']);
    expect(simulator.requests.map((r) => r.answer)).toEqual([200, 200]);
  });

  it('sends a location push to <topic>.location-query at priority 10; APNs refuses it on the app topic', async () => {
    const s = sender();
    const expiration = Math.floor(clockMs / 1000) + 300;
    const location = { payload: { aps: {}, conduit_e2e: { v: 1 } }, pushType: 'location' as const, expiration };
    expect(await s.send(TOKEN, { ...location, topic: `${TOPIC}.location-query` })).toEqual({ ok: true, status: 200 });
    expect(simulator.requests[0]?.headers).toMatchObject({
      'apns-push-type': 'location',
      'apns-topic': `${TOPIC}.location-query`,
      'apns-priority': '10',
      'apns-expiration': String(expiration),
    });
    expect(await s.send(TOKEN, location)).toEqual({ ok: false, status: 400, reason: 'DeviceTokenNotForTopic' });
  });

  it('APNs refuses a background push sent at priority 10 (BadPriority)', async () => {
    const s = sender();
    const result = await s.send(TOKEN, {
      payload: { aps: { 'content-available': 1 } },
      pushType: 'background',
      priority: 10,
    });
    expect(result).toEqual({ ok: false, status: 400, reason: 'BadPriority' });
  });

  it('reuses the provider token for 50 minutes, then signs a new one', async () => {
    const s = sender();
    const start = clockMs;
    await s.send(TOKEN, { payload: { aps: {} } });
    clockMs = start + 49 * 60_000;
    await s.send(TOKEN, { payload: { aps: {} } });
    clockMs = start + 50 * 60_000;
    await s.send(TOKEN, { payload: { aps: {} } });
    clockMs = start;
    const tokens = simulator.requests.map((r) => r.headers.authorization);
    expect(tokens[0]).toBe(tokens[1]);
    expect(tokens[2]).not.toBe(tokens[0]);
    expect(simulator.requests[2]?.jwtClaims?.iat).toBe(Math.floor(start / 1000) + 50 * 60);
  });

  it('maps APNs refusals to {ok:false, status, reason}', async () => {
    const s = sender();
    simulator.answerNext({ status: 400, reason: 'BadDeviceToken' }, { status: 410, reason: 'Unregistered' });
    expect(await s.send(TOKEN, { payload: { aps: {} } })).toEqual({ ok: false, status: 400, reason: 'BadDeviceToken' });
    expect(await s.send(TOKEN, { payload: { aps: {} } })).toEqual({ ok: false, status: 410, reason: 'Unregistered' });
    simulator.answerFor(OTHER_TOKEN, { status: 400, reason: 'DeviceTokenNotForTopic' });
    expect(await s.send(OTHER_TOKEN, { payload: { aps: {} } })).toEqual({
      ok: false,
      status: 400,
      reason: 'DeviceTokenNotForTopic',
    });
    simulator.answerFor(OTHER_TOKEN, { status: 200 });
  });

  it('gets TopicDisallowed for a topic the key may not push to', async () => {
    const result = await sender().send(TOKEN, { payload: { aps: {} }, pushType: 'voip', topic: 'com.other.app.voip' });
    expect(result).toEqual({ ok: false, status: 400, reason: 'TopicDisallowed' });
  });

  it('a token signed with another key gets 403 InvalidProviderToken; a stale clock gets ExpiredProviderToken', async () => {
    const wrong = providerKeyPair();
    expect(await sender({ keyPem: wrong.privatePem }).send(TOKEN, { payload: { aps: {} } })).toEqual({
      ok: false,
      status: 403,
      reason: 'InvalidProviderToken',
    });
    const skewed = clockMs - 2 * 3_600_000;
    expect(await sender({ now: () => skewed }).send(TOKEN, { payload: { aps: {} } })).toEqual({
      ok: false,
      status: 403,
      reason: 'ExpiredProviderToken',
    });
    expect(await sender({ keyId: 'OTHERKEY00' }).send(TOKEN, { payload: { aps: {} } })).toMatchObject({
      status: 403,
      reason: 'InvalidProviderToken',
    });
  });

  it('refuses a collapse id over 64 bytes locally with 400 BadCollapseId', async () => {
    const s = sender();
    expect(await s.send(TOKEN, { payload: { aps: {} }, collapseId: 'é'.repeat(33) })).toEqual({
      ok: false,
      status: 400,
      reason: 'BadCollapseId',
    });
    expect(simulator.requests).toHaveLength(0);
    expect((await s.send(TOKEN, { payload: { aps: {} }, collapseId: 'x'.repeat(64) })).ok).toBe(true);
  });

  it('gets 413 PayloadTooLarge for an alert over 4 KB', async () => {
    const result = await sender().send(TOKEN, { payload: { aps: {}, pad: 'x'.repeat(4_100) } });
    expect(result).toEqual({ ok: false, status: 413, reason: 'PayloadTooLarge' });
  });

  it('multiplexes concurrent sends over one pooled connection', async () => {
    const s = sender();
    const before = simulator.connections;
    const results = await Promise.all(Array.from({ length: 50 }, () => s.send(TOKEN, { payload: { aps: {} } })));
    expect(results.every((r) => r.ok)).toBe(true);
    expect(simulator.connections - before).toBe(1);
  });

  it('rejects when the connection drops mid-request, and reconnects for the next send', async () => {
    const s = sender();
    await s.send(TOKEN, { payload: { aps: {} } });
    simulator.answerNext('drop-connection');
    await expect(s.send(TOKEN, { payload: { aps: {} } })).rejects.toThrow();
    const before = simulator.connections;
    expect(await s.send(TOKEN, { payload: { aps: {} } })).toEqual({ ok: true, status: 200 });
    expect(simulator.connections - before).toBe(1);
  });

  it('rejects a stream reset with an error code (APNs may have processed it)', async () => {
    simulator.answerNext('reset-stream');
    await expect(sender().send(TOKEN, { payload: { aps: {} } })).rejects.toThrow(/stream/i);
    expect(simulator.requests).toHaveLength(1);
  });

  it('retries once a stream APNs refused unprocessed (REFUSED_STREAM)', async () => {
    simulator.answerNext('refuse-stream');
    expect(await sender().send(TOKEN, { payload: { aps: { n: 1 } } })).toEqual({ ok: true, status: 200 });
    expect(simulator.requests.map((r) => r.answer)).toEqual(['refuse-stream', 200]);
  });

  it('after GOAWAY opens a fresh connection and resends the unprocessed stream', async () => {
    const s = sender();
    await s.send(TOKEN, { payload: { aps: {} } });
    const before = simulator.connections;
    simulator.answerNext('goaway');
    expect(await s.send(TOKEN, { payload: { aps: {} } })).toEqual({ ok: true, status: 200 });
    expect(await s.send(TOKEN, { payload: { aps: {} } })).toEqual({ ok: true, status: 200 });
    expect(simulator.connections - before).toBe(1);
  });

  it('times out a request APNs never answers', async () => {
    simulator.answerNext('hang');
    await expect(sender({ timeoutMs: 200 }).send(TOKEN, { payload: { aps: {} } })).rejects.toThrow(/timed out/);
  });

  it('rejects when APNs cannot be reached or its certificate is not trusted', async () => {
    const closed = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as { port: number };
        probe.close(() => resolve(port));
      });
    });
    await expect(
      sender({ origin: `https://localhost:${closed}` }).send(TOKEN, { payload: { aps: {} } }),
    ).rejects.toThrow();
    const untrusted = new Http2ApnsSender(
      { keyPem: key.privatePem, keyId: KEY_ID, teamId: TEAM_ID, origin: simulator.origin, now: () => clockMs },
      TOPIC,
    );
    senders.push(untrusted);
    await expect(untrusted.send(TOKEN, { payload: { aps: {} } })).rejects.toThrow();
    expect(simulator.requests).toHaveLength(0);
  });

  it('refuses a non-https origin and a key that is not P-256', () => {
    expect(() => sender({ origin: 'http://localhost:1' })).toThrow(/https/);
    expect(() => sender({ keyPem: 'not a key' })).toThrow();
  });
});
