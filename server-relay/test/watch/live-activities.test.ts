import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Http2ApnsSender } from '../../src/apns/http2-sender.js';
import { ApnsSimulator } from '../../src/apns/simulator.js';
import { providerKeyPair } from '../apns/keys.js';
import { startWatchRelay, type WatchTestRelay } from './harness.js';

const TOPIC = 'com.example.conduit';
const key = providerKeyPair();
let simulator: ApnsSimulator;
let sender: Http2ApnsSender;
let relay: WatchTestRelay;

beforeAll(async () => {
  simulator = await ApnsSimulator.start({ publicKey: key.publicPem, keyId: 'KEYID12345', teamId: 'TEAMID6789' });
  sender = new Http2ApnsSender(
    { keyPem: key.privatePem, keyId: 'KEYID12345', teamId: 'TEAMID6789', origin: simulator.origin, ca: simulator.ca },
    TOPIC,
  );
});
afterEach(async () => {
  await relay.close();
  simulator.requests.length = 0;
});
afterAll(async () => {
  await sender.close();
  await simulator.close();
});

const token = (n: number): string => n.toString(16).padStart(2, '0').repeat(32);

async function setup() {
  relay = await startWatchRelay({ apnsTopic: TOPIC }, sender);
  const phone = relay.device();
  const host = relay.gateway(phone.installationId);
  const register = (body: Record<string, unknown>, authorization = phone.authorization) =>
    relay.client.PUT('/v1/live-activities', { headers: { authorization }, body: body as never });
  const report = (body: Record<string, unknown>, authorization = host.authorization) =>
    relay.client.POST('/v1/live-activities/progress', { headers: { authorization }, body: body as never });
  return { phone, host, register, report };
}

const progress = {
  session_id: 'sess-1',
  phase: 'tool',
  tool_category: 'terminal',
  tool_count: 3,
  context_pct: 42,
  started_at: 1_800_000_000,
};

describe('Live Activities', () => {
  it('registers a token and pushes a liveactivity update with the coarse content state', async () => {
    const { register, report } = await setup();
    const registered = await register({ push_token: token(1), session_ids: ['sess-0', 'sess-1'] });
    expect(registered.response.status).toBe(200);
    expect(registered.data).toEqual({
      registered: true,
      expires_at: new Date(relay.clock.now + 8 * 3_600_000).toISOString(),
    });
    const { data, response } = await report(progress);
    expect(response.status).toBe(200);
    expect(data).toEqual({ watching: true, sent: 1 });
    const [push] = simulator.requests;
    const nowS = Math.floor(relay.clock.now / 1000);
    expect(push?.deviceToken).toBe(token(1));
    expect(push?.headers).toMatchObject({
      'apns-push-type': 'liveactivity',
      'apns-topic': `${TOPIC}.push-type.liveactivity`,
      'apns-priority': '5',
      'apns-expiration': String(nowS + 600),
    });
    expect(push?.payload).toEqual({
      aps: {
        timestamp: nowS,
        event: 'update',
        'content-state': {
          phase: 'tool',
          tool_category: 'terminal',
          tool_count: 3,
          context_pct: 42,
          started_at: 1_800_000_000,
        },
        'stale-date': nowS + 600,
      },
    });
  });

  it('an end is pushed at priority 10 with a dismissal date, then the registration is dropped', async () => {
    const { register, report } = await setup();
    await register({ push_token: token(2), session_ids: ['sess-1'] });
    const { data } = await report({
      session_id: 'sess-1',
      phase: 'done',
      tool_count: 5,
      started_at: 1_800_000_000,
      end: true,
    });
    expect(data).toEqual({ watching: true, sent: 1 });
    const nowS = Math.floor(relay.clock.now / 1000);
    expect(simulator.requests[0]?.headers['apns-priority']).toBe('10');
    expect(simulator.requests[0]?.payload).toMatchObject({ aps: { event: 'end', 'dismissal-date': nowS + 900 } });
    expect((await report(progress)).data).toEqual({ watching: false, sent: 0 });
  });

  it('approval and input phases go at priority 10; a session nobody watches sends nothing', async () => {
    const { register, report } = await setup();
    await register({ push_token: token(3), session_ids: ['sess-1'] });
    await report({ ...progress, phase: 'approval', tool_category: undefined });
    expect(simulator.requests[0]?.headers['apns-priority']).toBe('10');
    expect(simulator.requests[0]?.payload).toEqual({
      aps: expect.objectContaining({
        'content-state': { phase: 'approval', tool_count: 3, context_pct: 42, started_at: 1_800_000_000 },
      }),
    });
    expect((await report({ ...progress, session_id: 'other' })).data).toEqual({ watching: false, sent: 0 });
    expect(simulator.requests).toHaveLength(1);
  });

  it('only the installation’s own hosts reach its activities, and gateway_id narrows to one host', async () => {
    const { phone, register, report, host } = await setup();
    const stranger = relay.gateway();
    await register({ push_token: token(4), session_ids: ['sess-1'] });
    expect((await report(progress, stranger.authorization)).data).toEqual({ watching: false, sent: 0 });
    const second = relay.gateway(phone.installationId);
    await register({ push_token: token(5), session_ids: ['sess-1'], gateway_id: host.gatewayId });
    expect((await report(progress, second.authorization)).data).toEqual({ watching: true, sent: 1 });
    expect((await report(progress, host.authorization)).data).toEqual({ watching: true, sent: 2 });
  });

  it('a token APNs refuses as gone is forgotten', async () => {
    const { register, report } = await setup();
    await register({ push_token: token(6), session_ids: ['sess-1'] });
    simulator.answerFor(token(6), { status: 410, reason: 'Unregistered' });
    expect((await report(progress)).data).toEqual({ watching: true, sent: 0 });
    expect((await report(progress)).data).toEqual({ watching: false, sent: 0 });
  });

  it('registrations expire after 8 hours; re-registering keeps the first expiry', async () => {
    const { register, report } = await setup();
    await register({ push_token: token(7), session_ids: ['sess-0'] });
    relay.clock.now += 4 * 3_600_000;
    const again = await register({ push_token: token(7), session_ids: ['sess-1'] });
    expect(again.data?.expires_at).toBe(new Date(relay.clock.now + 4 * 3_600_000).toISOString());
    expect((await report(progress)).data?.watching).toBe(true);
    relay.clock.now += 4 * 3_600_000;
    expect((await report(progress)).data).toEqual({ watching: false, sent: 0 });
  });

  it('a ninth activity of an installation replaces its oldest', async () => {
    const { register, report } = await setup();
    for (let i = 10; i < 19; i += 1) {
      await register({ push_token: token(i), session_ids: ['sess-1'] });
      relay.clock.now += 1_000;
    }
    expect((await report(progress)).data).toEqual({ watching: true, sent: 8 });
    expect(simulator.requests.map((r) => r.deviceToken)).not.toContain(token(10));
  });

  it('DELETE forgets a token (204), also an unknown one; another installation cannot remove it', async () => {
    const { register, report, phone } = await setup();
    await register({ push_token: token(20), session_ids: ['sess-1'] });
    const other = relay.device();
    const del = (authorization: string) =>
      relay.client.DELETE('/v1/live-activities/{push_token}', {
        params: { path: { push_token: token(20) } },
        headers: { authorization },
      });
    expect((await del(other.authorization)).response.status).toBe(204);
    expect((await report(progress)).data?.watching).toBe(true);
    expect((await del(phone.authorization)).response.status).toBe(204);
    expect((await report(progress)).data?.watching).toBe(false);
    expect((await del('Bearer nope')).response.status).toBe(401);
  });

  it.each([
    ['an upper-case token', { push_token: 'AB'.repeat(32), session_ids: ['s'] }],
    ['no session ids', { push_token: token(1), session_ids: [] }],
    ['nine session ids', { push_token: token(1), session_ids: Array.from({ length: 9 }, (_v, i) => `s${i}`) }],
    ['a session id with spaces', { push_token: token(1), session_ids: ['a b'] }],
    ['a bad gateway id', { push_token: token(1), session_ids: ['s'], gateway_id: 'nope' }],
  ])('400 invalid_live_activity for %s', async (_name, body) => {
    const { register } = await setup();
    const { response, error } = await register(body);
    expect(response.status).toBe(400);
    expect(error).toEqual({ error: 'invalid_live_activity' });
  });

  it.each([
    ['an unknown phase', { ...progress, phase: 'sleeping' }],
    ['a tool name instead of a category', { ...progress, tool_category: 'rm -rf' }],
    ['a context over 100 %', { ...progress, context_pct: 101 }],
    ['a string tool count', { ...progress, tool_count: '3' }],
    ['no started_at', { session_id: 's', phase: 'thinking', tool_count: 0 }],
  ])('400 invalid_progress for %s', async (_name, body) => {
    const { report } = await setup();
    const { response, error } = await report(body);
    expect(response.status).toBe(400);
    expect(error).toEqual({ error: 'invalid_progress' });
  });

  it('401 for the wrong credential type; 429 after 120 reports a minute per gateway', async () => {
    const { register, report, phone, host } = await setup();
    expect((await register({ push_token: token(1), session_ids: ['s'] }, host.authorization)).response.status).toBe(
      401,
    );
    expect((await report(progress, phone.authorization)).response.status).toBe(401);
    for (let i = 0; i < 120; i += 1) await report({ ...progress, session_id: 'nobody' });
    const limited = await report(progress);
    expect(limited.response.status).toBe(429);
    expect(limited.error).toEqual({ error: 'rate_limited' });
  });
});
