/**
 * Live Activity registrations across three replicas (issue 22): a token registered through one replica
 * is pushed by the replica a progress report reaches, ownership, deletion, a turn's end and the
 * eight-per-installation rule hold relay-wide. Each step goes to a different replica, so every test
 * fails if the registrations were per process.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ROOMY_BUDGETS, TOPIC } from '../conformance/relay.js';
import type { Replica } from './cluster.js';
import { clusterForFile, pairedPhone } from './fixtures.js';

const { cluster, one, two, three } = clusterForFile({
  replicas: 3,
  env: { ...ROOMY_BUDGETS, CONDUIT_CHECK_REPLIES: '1' },
});

const activityToken = (): string => randomBytes(32).toString('hex');

const progress = (session: string, extra: Record<string, unknown> = {}) => ({
  session_id: session,
  phase: 'tool',
  tool_category: 'terminal',
  tool_count: 2,
  started_at: 1_800_000_000,
  ...extra,
});

async function register(on: Replica, device: string, pushToken: string, sessionIds: string[]) {
  return on.call('PUT', '/v1/live-activities', {
    auth: device,
    body: { push_token: pushToken, session_ids: sessionIds },
  });
}

/** A progress report through `on`: its reply and the pushes it wrote. */
async function report(on: Replica, gateway: string, body: Record<string, unknown>) {
  const before = cluster.captures().length;
  const reply = await on.call('POST', '/v1/live-activities/progress', { auth: gateway, body });
  expect(reply.status, reply.text).toBe(200);
  return { json: reply.json, pushes: cluster.captures().slice(before) };
}

describe('Live Activity registrations across replicas', () => {
  it('registered through one replica, pushed by the replica the report reaches', async () => {
    const phone = await pairedPhone(one);
    const token = activityToken();
    expect((await register(one, phone.device, token, ['sess-a'])).status).toBe(200);
    const { json, pushes } = await report(two, phone.gateway, progress('sess-a'));
    expect(json).toEqual({ watching: true, sent: 1 });
    expect(pushes).toHaveLength(1);
    expect(pushes[0]?.deviceToken).toBe(token);
    expect(pushes[0]?.notification.pushType).toBe('liveactivity');
    expect(pushes[0]?.notification.topic).toBe(`${TOPIC}.push-type.liveactivity`);
    // Another session of the same installation is not watched, on any replica.
    expect((await report(three, phone.gateway, progress('sess-other'))).json).toEqual({ watching: false, sent: 0 });
  });

  it('re-registering through another replica keeps the first expiry and replaces the session ids', async () => {
    const phone = await pairedPhone(two);
    const token = activityToken();
    const first = await register(one, phone.device, token, ['sess-1']);
    const again = await register(three, phone.device, token, ['sess-2']);
    expect(again.status).toBe(200);
    expect((again.json as { expires_at: string }).expires_at).toBe((first.json as { expires_at: string }).expires_at);
    expect((await report(two, phone.gateway, progress('sess-1'))).json).toEqual({ watching: false, sent: 0 });
    expect((await report(one, phone.gateway, progress('sess-2'))).json).toEqual({ watching: true, sent: 1 });
  });

  it('a token another installation registered on another replica is 409 live_activity_token_in_use', async () => {
    const owner = await pairedPhone(one);
    const other = await pairedPhone(two);
    const token = activityToken();
    expect((await register(one, owner.device, token, ['sess-v'])).status).toBe(200);
    const stolen = await register(two, other.device, token, ['sess-v']);
    expect(stolen.status).toBe(409);
    expect(stolen.json).toEqual({ error: 'live_activity_token_in_use' });
    // The token stayed with its owner: the other host's report pushes nothing, the owner's does.
    expect((await report(three, other.gateway, progress('sess-v'))).json).toEqual({ watching: false, sent: 0 });
    const owned = await report(three, owner.gateway, progress('sess-v'));
    expect(owned.pushes.map((push) => push.deviceToken)).toEqual([token]);
  });

  it('a DELETE through one replica stops the pushes of every replica', async () => {
    const phone = await pairedPhone(three);
    const token = activityToken();
    expect((await register(one, phone.device, token, ['sess-d'])).status).toBe(200);
    const removed = await two.call('DELETE', `/v1/live-activities/${token}`, { auth: phone.device });
    expect(removed.status).toBe(204);
    for (const replica of [one, two, three]) {
      const { json, pushes } = await report(replica, phone.gateway, progress('sess-d'));
      expect(json).toEqual({ watching: false, sent: 0 });
      expect(pushes).toHaveLength(0);
    }
  });

  it("a turn's end reported through one replica ends the registration for every replica", async () => {
    const phone = await pairedPhone(one);
    const token = activityToken();
    expect((await register(two, phone.device, token, ['sess-e'])).status).toBe(200);
    const ended = await report(three, phone.gateway, progress('sess-e', { end: true }));
    expect(ended.json).toEqual({ watching: true, sent: 1 });
    expect((ended.pushes[0]?.notification.payload.aps as { event: string }).event).toBe('end');
    expect((await report(one, phone.gateway, progress('sess-e'))).json).toEqual({ watching: false, sent: 0 });
  });

  it('an installation holds 8 registrations relay-wide: a ninth, on any replica, replaces the oldest', async () => {
    const phone = await pairedPhone(two);
    const replicas = [one, two, three];
    const tokens = Array.from({ length: 9 }, activityToken);
    for (const [i, token] of tokens.entries()) {
      const reply = await register(replicas[i % 3] as Replica, phone.device, token, ['sess-8']);
      expect(reply.status, reply.text).toBe(200);
    }
    const { json, pushes } = await report(one, phone.gateway, progress('sess-8'));
    expect(json).toEqual({ watching: true, sent: 8 });
    expect(pushes.map((push) => push.deviceToken).sort()).toEqual(tokens.slice(1).sort());
  });

  // Last: it kills a replica of this file's cluster.
  it('a registration the relay acknowledged outlives the replica that took it (kill -9)', async () => {
    const phone = await pairedPhone(two);
    const token = activityToken();
    expect((await register(three, phone.device, token, ['sess-k'])).status).toBe(200);
    await cluster.kill(three);
    const { json, pushes } = await report(one, phone.gateway, progress('sess-k'));
    expect(json).toEqual({ watching: true, sent: 1 });
    expect(pushes.map((push) => push.deviceToken)).toEqual([token]);
  });
});
