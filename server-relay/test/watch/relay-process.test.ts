import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createRelayClient } from '@conduit/sdk/relay';
import { ApnsSimulator } from '../../src/apns/simulator.js';
import { providerKeyPair } from '../apns/keys.js';
import { audioMessage, open, RawClient, refused } from './ws-clients.js';
import { b64, sealedCall, watchKey } from './harness.js';
import { freePort, startServerProcess } from '@conduit/contracts/testing';

/**
 * The Watch features through a real relay process (src/main.ts, configured only by its
 * environment): the relay core's own authentication, rate limiter and APNs sender (the HTTP/2
 * client against the simulator, trusted through NODE_EXTRA_CA_CERTS), with short WATCH_* seams.
 */
const TOPIC = 'com.example.conduit';
const root = resolve(fileURLToPath(import.meta.url), '../../../..');
const dir = mkdtempSync(join(tmpdir(), 'relay-watch-process-'));
const key = providerKeyPair();
let simulator: ApnsSimulator;
let child: ChildProcess;
let baseUrl: string;
let port: number;
let relay: ReturnType<typeof createRelayClient>;
let device: { authorization: string; installationId: string };
let gateway: { authorization: string };

beforeAll(async () => {
  simulator = await ApnsSimulator.start({ publicKey: key.publicPem, keyId: 'KEYID12345', teamId: 'TEAMID6789' });
  writeFileSync(join(dir, 'apns.p8'), key.privatePem, { mode: 0o600 });
  writeFileSync(join(dir, 'simulator-ca.pem'), simulator.ca);
  port = await freePort();
  baseUrl = `http://127.0.0.1:${port}`;
  const server = await startServerProcess({
    name: 'relay',
    command: join(root, 'node_modules/.bin/tsx'),
    args: [join(root, 'server-relay/src/main.ts')],
    cwd: root,
    env: {
      ...process.env,
      HOST: '127.0.0.1',
      PORT: String(port),
      PUBLIC_URL: 'https://relay.example',
      DATA_PATH: join(dir, 'relay.sqlite'),
      DATABASE_URL: '',
      APNS_TOPIC: TOPIC,
      APNS_KEY_PATH: join(dir, 'apns.p8'),
      APNS_KEY_ID: 'KEYID12345',
      APNS_TEAM_ID: 'TEAMID6789',
      APNS_ORIGIN: simulator.origin,
      NODE_EXTRA_CA_CERTS: join(dir, 'simulator-ca.pem'),
      WATCH_CALL_WAIT_MS: '400',
      WATCH_AUDIO_IDLE_MS: '5000',
    },
    port,
    ready: async (url) => (await fetch(`${url}/healthz`)).ok,
    timeoutMs: 90_000,
    pollMs: 200,
  });
  child = server.child;
  relay = createRelayClient({ baseUrl });
  const registered = await relay.POST('/v1/installations', {
    body: { bundle_id: TOPIC, device_token: randomBytes(32).toString('hex'), environment: 'production' },
  });
  expect(registered.response.status).toBe(201);
  const credential = registered.data!.credential;
  const installationId = credential.split('.')[0]!;
  device = { authorization: `Bearer ${credential}`, installationId };
  const pairing = await relay.POST('/v1/installations/{id}/pairings', {
    params: { path: { id: installationId } },
    headers: { authorization: device.authorization },
    body: {},
  });
  const claimed = await relay.POST('/v1/pairings/claim', { body: { pairing_code: pairing.data!.pairing_code } });
  expect(claimed.response.status).toBe(200);
  gateway = { authorization: `Bearer ${claimed.data!.credential}` };
}, 120_000);

afterAll(async () => {
  if (child && child.exitCode === null) {
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
  }
  await simulator?.close();
});

async function grant(audio = false) {
  const watch = watchKey();
  const { data, response } = await relay.POST('/v1/watch-tools/grants', {
    headers: { authorization: gateway.authorization },
    body: { watch_key_sha256: watch.sha256, ttl_s: 600, max_calls: 10, audio },
  });
  expect(response.status).toBe(201);
  return { gid: data!.grant_id, watch, callWaitMs: data!.call_wait_ms };
}

describe('the Watch features in a real relay process', () => {
  it('lists the Watch capabilities in /v1/meta', async () => {
    const { data } = await relay.GET('/v1/meta', { headers: { authorization: device.authorization } });
    expect(data?.capabilities).toEqual(
      expect.arrayContaining(['watch-tools-v1', 'watch-audio-v1', 'live-activities-v1', 'maps-token-v1']),
    );
  });

  it('carries a sealed Watch call to the host and back, and times out with WATCH_CALL_WAIT_MS', async () => {
    const { gid, watch, callWaitMs } = await grant();
    expect(callWaitMs).toBe(400);
    const call = sealedCall();
    const pending = relay.POST('/v1/watch-tools/grants/{gid}/calls', {
      params: { path: { gid } },
      headers: { authorization: watch.authorization },
      body: call,
    });
    const poll = await relay.GET('/v1/watch-tools/grants/{gid}/calls', {
      params: { path: { gid }, query: { wait_ms: '5000' } },
      headers: { authorization: gateway.authorization },
    });
    expect(poll.data).toEqual({ calls: [call] });
    const answer = { n: b64(12), ct: b64(500) };
    await relay.POST('/v1/watch-tools/grants/{gid}/results/{rid}', {
      params: { path: { gid, rid: call.rid } },
      headers: { authorization: gateway.authorization },
      body: answer,
    });
    expect((await pending).data).toEqual(answer);
    const unanswered = await relay.POST('/v1/watch-tools/grants/{gid}/calls', {
      params: { path: { gid } },
      headers: { authorization: watch.authorization },
      body: sealedCall(),
    });
    expect(unanswered.response.status).toBe(504);
    expect(unanswered.error).toEqual({ error: 'host_timeout' });
    // The relay core's wire conventions apply to our routes too.
    expect(unanswered.response.headers.get('cache-control')).toBe('no-store');
    const bad = await fetch(`${baseUrl}/v1/watch-tools/grants/${gid}/calls`, {
      method: 'POST',
      headers: { authorization: watch.authorization },
      body: '{not json',
    });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ error: 'invalid_json' });
  });

  it('bridges audio between real WebSockets, refuses other upgrade paths with 404', async () => {
    const { gid, watch } = await grant(true);
    const ws = `ws://127.0.0.1:${port}/v1/watch-audio/${gid}`;
    expect(await refused(`${ws}/host`, device.authorization)).toEqual({ status: 401, body: { error: 'unauthorized' } });
    const host = await open(`${ws}/host`, gateway.authorization);
    const wrist = await open(`${ws}/watch`, watch.authorization);
    await vi.waitFor(() => expect(host.messages).toHaveLength(1));
    const up = audioMessage(3_840);
    const down = audioMessage(1_920);
    wrist.ws.send(up);
    host.ws.send(down);
    await vi.waitFor(() => expect(host.messages).toHaveLength(2));
    await vi.waitFor(() => expect(wrist.messages).toHaveLength(1));
    expect(host.messages[1]!.equals(up)).toBe(true);
    expect(wrist.messages[0]!.equals(down)).toBe(true);
    const stray = await RawClient.connect(port, '/v1/elsewhere', {});
    expect(stray.status.split('\r\n')[0]).toBe('HTTP/1.1 404 Not Found');
    stray.socket.destroy();
    wrist.ws.close();
    host.ws.close();
    await Promise.all([wrist.closed, host.closed]);
  });

  it('pushes Live Activity progress through the APNs HTTP/2 client', async () => {
    const pushToken = randomBytes(32).toString('hex');
    const registered = await relay.PUT('/v1/live-activities', {
      headers: { authorization: device.authorization },
      body: { push_token: pushToken, session_ids: ['s-1'] },
    });
    expect(registered.response.status).toBe(200);
    const before = simulator.requests.length;
    const { data } = await relay.POST('/v1/live-activities/progress', {
      headers: { authorization: gateway.authorization },
      body: { session_id: 's-1', phase: 'thinking', tool_count: 0, started_at: 1_800_000_000 },
    });
    expect(data).toEqual({ watching: true, sent: 1 });
    const push = simulator.requests[before];
    expect(push?.deviceToken).toBe(pushToken);
    expect(push?.headers['apns-topic']).toBe(`${TOPIC}.push-type.liveactivity`);
    expect(push?.jwtClaims?.iss).toBe('TEAMID6789');
  });

  it('answers 404 maps_unavailable without a Maps key', async () => {
    const { response, error } = await relay.POST('/v1/maps/token', {
      headers: { authorization: gateway.authorization },
    });
    expect(response.status).toBe(404);
    expect(error).toEqual({ error: 'maps_unavailable' });
  });

  it('answers every upgrade refusal before the 101', async () => {
    const { gid, watch } = await grant(true);
    const silent = await grant(false);
    const ws = `ws://127.0.0.1:${port}/v1/watch-audio`;
    expect(await refused(`${ws}/${gid}/watch`, watchKey().authorization)).toEqual({
      status: 401,
      body: { error: 'unauthorized' },
    });
    expect(await refused(`${ws}/${silent.gid}/host`, gateway.authorization)).toEqual({
      status: 403,
      body: { error: 'audio_not_granted' },
    });
    expect(await refused(`${ws}/${silent.gid}/watch`, silent.watch.authorization)).toEqual({
      status: 403,
      body: { error: 'audio_not_granted' },
    });
    const v12 = await RawClient.connect(port, `/v1/watch-audio/${gid}/host`, {
      Authorization: gateway.authorization,
      'Sec-WebSocket-Version': '12',
    });
    expect(v12.status.split('\r\n')[0]).toBe('HTTP/1.1 400 Bad Request');
    v12.socket.destroy();
    await relay.DELETE('/v1/watch-tools/grants/{gid}', {
      params: { path: { gid } },
      headers: { authorization: watch.authorization },
    });
    expect(await refused(`${ws}/${gid}/host`, gateway.authorization)).toEqual({
      status: 410,
      body: { error: 'grant_closed', reason: 'watch' },
    });
  });

  it('closes with every bridge code and the reference reason: 4503, 4000, 1002, 1003, 1009, 4429, 4010, 4408', async () => {
    const { gid, watch } = await grant(true);
    const ws = `ws://127.0.0.1:${port}/v1/watch-audio/${gid}`;
    const alone = await open(`${ws}/watch`, watch.authorization);
    expect(await alone.closed).toEqual({ code: 4503, reason: 'host_offline' });
    const host = await open(`${ws}/host`, gateway.authorization);
    const violations: [number, string, (c: RawClient) => void][] = [
      [1002, 'reserved_type', (c) => c.frame(0x2, Buffer.from([0, 1]))],
      [1002, 'unmasked', (c) => c.frame(0x2, Buffer.from([1]), { masked: false })],
      [1003, 'unsupported', (c) => c.frame(0x1, Buffer.from('text'))],
      [1003, 'fragmented', (c) => c.frame(0x2, Buffer.from([1]), { fin: false })],
      [1009, 'too_big', (c) => c.frame(0x2, Buffer.alloc(65_537, 1))],
    ];
    for (const [code, reason, send] of violations) {
      const client = await RawClient.connect(port, `/v1/watch-audio/${gid}/watch`, {
        Authorization: watch.authorization,
      });
      send(client);
      expect(await client.closeFrame()).toEqual({ code, reason });
    }
    const first = await open(`${ws}/watch`, watch.authorization);
    const second = await open(`${ws}/watch`, watch.authorization);
    expect(await first.closed).toEqual({ code: 4000, reason: 'replaced' });
    for (let i = 0; i < 8; i += 1) second.ws.send(audioMessage(65_536));
    expect(await second.closed).toEqual({ code: 4429, reason: 'too_fast' });
    const idle = await grant(true);
    const idleHost = await open(`ws://127.0.0.1:${port}/v1/watch-audio/${idle.gid}/host`, gateway.authorization);
    await relay.DELETE('/v1/watch-tools/grants/{gid}', {
      params: { path: { gid } },
      headers: { authorization: gateway.authorization },
    });
    expect(await host.closed).toEqual({ code: 4010, reason: 'grant_closed' });
    // WATCH_AUDIO_IDLE_MS is 5,000 in this process.
    expect(await idleHost.closed).toEqual({ code: 4408, reason: 'idle' });
  });

  it('a newer Watch replaces the older: the host hears [0,2] then [0,1]; the older gets 4000 replaced', async () => {
    const { gid, watch } = await grant(true);
    const ws = `ws://127.0.0.1:${port}/v1/watch-audio/${gid}`;
    const host = await open(`${ws}/host`, gateway.authorization);
    const older = await open(`${ws}/watch`, watch.authorization);
    await vi.waitFor(() => expect(host.messages).toHaveLength(1));
    const newer = await open(`${ws}/watch`, watch.authorization);
    expect(await older.closed).toEqual({ code: 4000, reason: 'replaced' });
    await vi.waitFor(() => expect(host.messages).toHaveLength(3));
    expect(host.messages).toEqual([Buffer.from([0, 1]), Buffer.from([0, 2]), Buffer.from([0, 1])]);
    // A host reconnecting replaces its old socket and sends the Watch away to rejoin.
    const host2 = await open(`${ws}/host`, gateway.authorization);
    expect(await host.closed).toEqual({ code: 4000, reason: 'replaced' });
    expect(await newer.closed).toEqual({ code: 4503, reason: 'host_reconnected' });
    host2.ws.close();
  });

  it('forgets a Live Activity on DELETE', async () => {
    const pushToken = randomBytes(32).toString('hex');
    await relay.PUT('/v1/live-activities', {
      headers: { authorization: device.authorization },
      body: { push_token: pushToken, session_ids: ['s-2'] },
    });
    const removed = await relay.DELETE('/v1/live-activities/{push_token}', {
      params: { path: { push_token: pushToken } },
      headers: { authorization: device.authorization },
    });
    expect(removed.response.status).toBe(204);
    const { data } = await relay.POST('/v1/live-activities/progress', {
      headers: { authorization: gateway.authorization },
      body: { session_id: 's-2', phase: 'thinking', tool_count: 0, started_at: 1_800_000_000 },
    });
    expect(data).toEqual({ watching: false, sent: 0 });
  });

  it('SIGTERM closes open bridges with 1001 and the process exits', async () => {
    const { gid, watch } = await grant(true);
    const ws = `ws://127.0.0.1:${port}/v1/watch-audio/${gid}`;
    const host = await open(`${ws}/host`, gateway.authorization);
    const wrist = await open(`${ws}/watch`, watch.authorization);
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    child.kill('SIGTERM');
    expect(await host.closed).toEqual({ code: 1001, reason: 'going_away' });
    expect(await wrist.closed).toEqual({ code: 1001, reason: 'going_away' });
    expect(await exited).toBe(0);
  });
});
