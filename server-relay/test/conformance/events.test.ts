/**
 * POST /v1/events (§1.1, §2) and the alert payloads of §7 as the APNs capture file shows them, against
 * a real relay process in APNS_MODE=accept with APNS_CAPTURE_PATH.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sealedEnvelope } from '../support/sealed-event.js';
import {
  eventId,
  pairHost,
  registerPhone,
  ROOMY_BUDGETS,
  startRelay,
  type CapturedPush,
  type Host,
  type Phone,
  type Relay,
} from './relay.js';

let relay: Relay;

beforeAll(async () => {
  relay = await startRelay(ROOMY_BUDGETS);
});
afterAll(() => relay.stop());

const scope = (gatewayId: string, seed: string) =>
  createHash('sha256').update(`${gatewayId}:${seed}`).digest('hex').slice(0, 16);

interface Pair {
  phone: Phone;
  host: Host;
}

async function pair(preferences: Record<string, unknown> = {}, dashboardId?: string): Promise<Pair> {
  const phone = await registerPhone(relay, { preferences });
  const host = await pairHost(relay, phone, dashboardId ? { dashboard_id: dashboardId } : {});
  return { phone, host };
}

async function send(host: Host, body: Record<string, unknown>) {
  return relay.call('POST', '/v1/events', { auth: host.auth, body });
}

/** Sends one event and returns the reply and the pushes it produced. */
async function sendAndCapture(host: Host, body: Record<string, unknown>) {
  const before = relay.captures().length;
  const reply = await send(host, body);
  const pushes: CapturedPush[] = relay.captures().slice(before);
  return { reply, pushes };
}

describe('validation and order of checks', () => {
  it('authentication comes first: a bad body without a credential is 401', async () => {
    const reply = await relay.call('POST', '/v1/events', { raw: 'not json' });
    expect(reply.status).toBe(401);
    expect(reply.json).toEqual({ error: 'unauthorized' });
  });

  it.each([
    [{}, 'invalid_event_type'],
    [{ type: 'phone.unknown', event_id: 'abcdefgh' }, 'invalid_event_type'],
    [{ type: 7, event_id: 'abcdefgh' }, 'invalid_event_type'],
    [{ type: 'response.ready' }, 'invalid_event_id'],
    [{ type: 'response.ready', event_id: 'short' }, 'invalid_event_id'],
    [{ type: 'response.ready', event_id: 'a'.repeat(129) }, 'invalid_event_id'],
    [{ type: 'response.ready', event_id: 'has space in' }, 'invalid_event_id'],
    [{ type: 'response.ready', event_id: 'dots.are.out' }, 'invalid_event_id'],
    [{ type: 'response.ready', event_id: 12345678 }, 'invalid_event_id'],
  ])('%j is 400 %s', async (body, code) => {
    const { host } = await pair();
    const reply = await send(host, body);
    expect(reply.status).toBe(400);
    expect(reply.json).toEqual({ error: code });
  });

  it('event ids accept the full alphabet [A-Za-z0-9:_-] at 8 and 128 characters', async () => {
    const { host } = await pair();
    expect((await send(host, { type: 'plugin.hello', event_id: 'aZ0:_-09' })).status).toBe(202);
    expect((await send(host, { type: 'plugin.hello', event_id: 'b'.repeat(128) })).status).toBe(202);
  });

  it('the per-installation limit (30/min) comes before validation', async () => {
    const { host } = await pair();
    for (let i = 0; i < 30; i += 1) expect((await send(host, {})).status).toBe(400);
    const limited = await send(host, {});
    expect(limited.status).toBe(429);
    expect(limited.json).toEqual({ error: 'rate_limited' });
  });
});

describe('pipeline', () => {
  it('a repeated event id is 200 {accepted:true, duplicate:true} and pushes nothing', async () => {
    const { host } = await pair();
    const id = eventId();
    const first = await sendAndCapture(host, { type: 'response.ready', event_id: id });
    expect(first.reply.status).toBe(202);
    expect(first.reply.json).toEqual({ accepted: true, delivered: true });
    expect(first.pushes).toHaveLength(1);
    const again = await sendAndCapture(host, { type: 'response.ready', event_id: id });
    expect(again.reply.status).toBe(200);
    expect(again.reply.json).toEqual({ accepted: true, duplicate: true });
    expect(again.pushes).toHaveLength(0);
  });

  it('dedupe is gateway-scoped: the same id from another gateway of the phone is delivered', async () => {
    const { phone, host } = await pair();
    const second = await pairHost(relay, phone);
    const id = eventId();
    expect((await send(host, { type: 'turn.failed', event_id: id })).status).toBe(202);
    expect((await send(second, { type: 'turn.failed', event_id: id })).status).toBe(202);
  });

  it('a duplicate with plugin_version still records the plugin metadata (meta shows it)', async () => {
    const { phone, host } = await pair();
    const id = eventId();
    expect((await send(host, { type: 'plugin.hello', event_id: id, plugin_version: '1.0.0' })).status).toBe(202);
    const dup = await send(host, {
      type: 'plugin.hello',
      event_id: id,
      plugin_version: '2.0.0',
      plugin_capabilities: ['cap-a', 'bad cap', 'cap-b'],
    });
    expect(dup.status).toBe(200);
    expect(dup.json).toEqual({ accepted: true, duplicate: true });
    const meta = await relay.call('GET', '/v1/meta', { auth: phone.auth });
    const gateway = (meta.json as { gateways: Record<string, unknown>[] }).gateways.find(
      (g) => g.id === host.gatewayId,
    );
    expect(gateway?.plugin_version).toBe('2.0.0');
    expect(gateway?.plugin_capabilities).toEqual(['cap-a', 'cap-b']);
    expect(typeof gateway?.last_event_at).toBe('string');
  });

  it('plugin.hello is 202 {accepted:true, delivered:false} and never notifies', async () => {
    const { host } = await pair();
    const { reply, pushes } = await sendAndCapture(host, { type: 'plugin.hello', event_id: eventId(), title: 't' });
    expect(reply.status).toBe(202);
    expect(reply.json).toEqual({ accepted: true, delivered: false });
    expect(pushes).toHaveLength(0);
  });

  it('the delivery gate: enabled=false or the type switch off → 202 delivered:false, no push', async () => {
    const off = await pair({ enabled: false });
    const r1 = await sendAndCapture(off.host, { type: 'approval.needed', event_id: eventId() });
    expect(r1.reply.json).toEqual({ accepted: true, delivered: false });
    expect(r1.pushes).toHaveLength(0);
    const typeOff = await pair({ background_task_finished: false });
    const r2 = await sendAndCapture(typeOff.host, { type: 'background_task.finished', event_id: eventId() });
    expect(r2.reply.status).toBe(202);
    expect(r2.reply.json).toEqual({ accepted: true, delivered: false });
    expect(r2.pushes).toHaveLength(0);
    const r3 = await sendAndCapture(typeOff.host, { type: 'response.ready', event_id: eventId() });
    expect(r3.reply.json).toEqual({ accepted: true, delivered: true });
  });
});

describe('§7 alert payloads', () => {
  it('generic copy with the profile/session context line, routing stubs and gateway-scoped ids', async () => {
    const dashboard = '6f1c2d3e-4a5b-4c7d-8e9f-0a1b2c3d4e5f';
    const { phone, host } = await pair({}, dashboard);
    const session = 'session-1234abcdWXYZ';
    const { reply, pushes } = await sendAndCapture(host, {
      type: 'approval.needed',
      event_id: eventId(),
      title: 'Secret title',
      body: 'Secret body',
      session_id: session,
      profile: 'coder',
      gateway: 'gw-main',
      dashboard_id: '11111111-2222-4333-8444-555555555555',
      gateway_id: 'spoofed',
    });
    expect(reply.status).toBe(202);
    expect(pushes).toHaveLength(1);
    const push = pushes[0] as CapturedPush;
    expect(push.deviceToken).toBe(phone.token);
    const routing = {
      type: 'approval.needed',
      session_id: session,
      profile: 'coder',
      gateway: 'gw-main',
      gateway_id: host.gatewayId,
      dashboard_id: dashboard,
    };
    expect(push.notification.payload).toEqual({
      aps: {
        alert: {
          title: 'Approval needed',
          body: 'Hermes is waiting for your approval.\nProfile: coder · Session: …abcdWXYZ',
        },
        sound: 'default',
        'thread-id': scope(host.gatewayId, session),
      },
      body: { conduit: routing },
      conduit: routing,
    });
    expect(push.notification.collapseId).toBe(`approval.needed:${scope(host.gatewayId, session)}`);
  });

  it('show_previews sends the event text; without a session the thread is "hermes" and the collapse id the event id', async () => {
    const { host } = await pair({ show_previews: true });
    const id = eventId();
    const { pushes } = await sendAndCapture(host, {
      type: 'response.ready',
      event_id: id,
      title: 'Deploy\u0007 done ',
      body: ' All green',
    });
    const push = pushes[0] as CapturedPush;
    const aps = push.notification.payload.aps as Record<string, unknown>;
    expect(aps.alert).toEqual({ title: 'Deploy  done', body: 'All green' });
    expect(aps['thread-id']).toBe(scope(host.gatewayId, 'hermes'));
    expect(push.notification.collapseId).toBe(`response.ready:${scope(host.gatewayId, id)}`);
  });

  it.each([
    ['Approval needed', 'approval.needed'],
    ['Input needed', 'input.needed'],
    ['Response ready', 'response.ready'],
    ['Turn failed', 'turn.failed'],
    ['Background task finished', 'background_task.finished'],
    ['Hermes wants to talk', 'call.requested'],
  ])('generic title %s for %s', async (title, type) => {
    const { host } = await pair();
    const { pushes } = await sendAndCapture(host, { type, event_id: eventId(), title: 'x', profile: 'p' });
    const alert = (pushes[0]?.notification.payload.aps as { alert: { title: string; body: string } }).alert;
    expect(alert.title).toBe(title);
    expect(alert.body.endsWith('\nProfile: p')).toBe(true);
  });

  it('sounds: completion types follow completion_sound, attention types attention_sound, turn.failed never', async () => {
    const sound = async (preferences: Record<string, unknown>, type: string) => {
      const { host } = await pair(preferences);
      const { pushes } = await sendAndCapture(host, { type, event_id: eventId() });
      return (pushes[0]?.notification.payload.aps as Record<string, unknown>).sound;
    };
    expect(await sound({}, 'response.ready')).toBe('default');
    expect(await sound({ completion_sound: false }, 'background_task.finished')).toBeUndefined();
    expect(await sound({ completion_sound: false }, 'input.needed')).toBe('default');
    expect(await sound({ attention_sound: false }, 'approval.needed')).toBeUndefined();
    expect(await sound({ attention_sound: false }, 'response.ready')).toBe('default');
    expect(await sound({}, 'turn.failed')).toBeUndefined();
  });

  it('an approval card rides in body.conduit only, independent of show_previews; decision_cards=false drops it', async () => {
    const decision = {
      kind: 'approval',
      session_key: 'sk-1',
      description: 'rm -rf /tmp/x',
      choices: ['once', 'deny', 'bogus'],
    };
    const { host } = await pair();
    const { pushes } = await sendAndCapture(host, { type: 'approval.needed', event_id: eventId(), decision });
    const payload = pushes[0]?.notification.payload as { body: { conduit: Record<string, unknown> }; conduit: object };
    expect(payload.body.conduit.decision).toEqual({ ...decision, choices: ['once', 'deny'] });
    expect(payload.conduit).not.toHaveProperty('decision');
    const noCards = await pair({ decision_cards: false });
    const off = await sendAndCapture(noCards.host, { type: 'approval.needed', event_id: eventId(), decision });
    expect((off.pushes[0]?.notification.payload as { body: { conduit: object } }).body.conduit).not.toHaveProperty(
      'decision',
    );
    const wrongType = await sendAndCapture(host, { type: 'response.ready', event_id: eventId(), decision });
    expect(
      (wrongType.pushes[0]?.notification.payload as { body: { conduit: object } }).body.conduit,
    ).not.toHaveProperty('decision');
  });

  it('a call.requested alert (no PushKit token) has category HERMES_CALL and the call without title/reason', async () => {
    const { host } = await pair();
    const call = { id: 'call-0001', kind: 'question', session_ids: ['s1', 's2', 's1'], title: 'T', reason: 'R' };
    const { reply, pushes } = await sendAndCapture(host, { type: 'call.requested', event_id: eventId(), call });
    expect(reply.json).toEqual({ accepted: true, delivered: true });
    const payload = pushes[0]?.notification.payload as {
      aps: Record<string, unknown>;
      body: { conduit: Record<string, unknown> };
    };
    expect(payload.aps.category).toBe('HERMES_CALL');
    expect(payload.aps.alert).toEqual({ title: 'Hermes wants to talk', body: 'Tap to talk to Hermes.' });
    expect(payload.body.conduit.call).toEqual({ id: 'call-0001', kind: 'question', session_ids: ['s1', 's2'] });
  });

  it('the 3,800-byte guard drops the whole decision but still sends the alert; the decision is parked undeliverable', async () => {
    const { host } = await pair();
    const questions = Array.from({ length: 8 }, (_, i) => ({
      qid: `q${i}`,
      question: `${'Q'.repeat(400)}${i}`,
      choices: ['a', 'b'],
    }));
    const requestId = `req-${Date.now()}`;
    const { reply, pushes } = await sendAndCapture(host, {
      type: 'input.needed',
      event_id: eventId(),
      decision: { kind: 'clarify', request_id: requestId, question: 'first?', questions },
    });
    expect(reply.status).toBe(202);
    expect(reply.json).toEqual({ accepted: true, delivered: true });
    const payload = pushes[0]?.notification.payload as { aps: object; body: { conduit: object } };
    expect(payload.aps).toHaveProperty('alert');
    expect(payload.body.conduit).not.toHaveProperty('decision');
    const poll = await relay.call('GET', `/v1/decisions/${requestId}`, { auth: host.auth });
    expect(poll.json).toEqual({
      status: 'pending',
      deliverable: false,
      remaining: questions.map((q) => q.qid),
      answers: {},
    });
  });

  it('a clarify card that fits is delivered and parked deliverable', async () => {
    const { host } = await pair();
    const requestId = `req-${Date.now()}-fit`;
    const decision = { kind: 'clarify', request_id: requestId, question: 'Which?', choices: ['a', 'b'] };
    const { reply, pushes } = await sendAndCapture(host, { type: 'input.needed', event_id: eventId(), decision });
    expect(reply.json).toEqual({ accepted: true, delivered: true });
    expect(
      (pushes[0]?.notification.payload as { body: { conduit: Record<string, unknown> } }).body.conduit.decision,
    ).toEqual(decision);
    const poll = await relay.call('GET', `/v1/decisions/${requestId}`, { auth: host.auth });
    expect(poll.json).toEqual({ status: 'pending', deliverable: true });
  });

  it('a re-used clarify request id with a new event id is 200 duplicate and sends no second card', async () => {
    const { host } = await pair();
    const decision = { kind: 'clarify', request_id: `req-${Date.now()}-dup`, question: 'Which?' };
    expect((await send(host, { type: 'input.needed', event_id: eventId(), decision })).status).toBe(202);
    const again = await sendAndCapture(host, { type: 'input.needed', event_id: eventId(), decision });
    expect(again.reply.status).toBe(200);
    expect(again.reply.json).toEqual({ accepted: true, duplicate: true });
    expect(again.pushes).toHaveLength(0);
  });
});

describe('end-to-end envelopes', () => {
  // The shared well-formed envelope, with any field replaced (the invalid cases below need that).
  const envelope = (id: string, change: Record<string, unknown> = {}) => ({ ...sealedEnvelope(id), ...change });

  it('is passed through verbatim with generic copy, mutable-content and tok-scoped ids; plaintext is ignored', async () => {
    const { host } = await pair({ show_previews: true });
    const id = eventId();
    const e2e = envelope(id);
    const { reply, pushes } = await sendAndCapture(host, {
      type: 'response.ready',
      event_id: id,
      e2e,
      title: 'leak',
      body: 'leak',
      session_id: 'sess-leak',
      profile: 'leak',
    });
    expect(reply.status).toBe(202);
    const push = pushes[0] as CapturedPush;
    const token = scope(host.gatewayId, e2e.tok);
    const routing = { type: 'response.ready', e2e: 1, gateway_id: host.gatewayId };
    expect(push.notification.payload).toEqual({
      aps: {
        alert: { title: 'Response ready', body: expect.any(String) as unknown },
        'mutable-content': 1,
        sound: 'default',
        'thread-id': token,
      },
      body: { conduit: routing },
      conduit: routing,
      conduit_e2e: e2e,
    });
    expect(JSON.stringify(push.notification.payload)).not.toContain('leak');
    expect(push.notification.collapseId).toBe(`response.ready:${token}`);
  });

  it.each([
    ['v 2', { v: 2 }],
    ['kid short', { kid: '0123456789abcdef' }],
    ['msg differs', { msg: 'another-event-id' }],
    ['iat 26 h old', { iat: Math.floor(Date.now() / 1000) - 26 * 3600 }],
    ['iat 3 h ahead', { iat: Math.floor(Date.now() / 1000) + 3 * 3600 }],
    ['iat fractional', { iat: Math.floor(Date.now() / 1000) + 0.5 }],
    ['iat string', { iat: String(Math.floor(Date.now() / 1000)) }],
    ['tok 15 hex', { tok: '0123456789abcde' }],
    ['z 2', { z: 2 }],
    ['req too short', { req: 'abc' }],
    ['n 15 chars', { n: 'AAAAAAAAAAAAAAA' }],
    ['ct 21 chars', { ct: 'B'.repeat(21) }],
    ['ct 2601 chars', { ct: 'B'.repeat(2601) }],
    ['ct padded', { ct: `${'B'.repeat(30)}==` }],
  ])('%s → 400 invalid_e2e', async (_label, change) => {
    const { host } = await pair();
    const id = eventId();
    const reply = await send(host, { type: 'response.ready', event_id: id, e2e: envelope(id, change) });
    expect(reply.status).toBe(400);
    expect(reply.json).toEqual({ error: 'invalid_e2e' });
  });

  it('a non-object envelope and a clarify whose request_id is not e2e.req are 400 invalid_e2e', async () => {
    const { host } = await pair();
    const id = eventId();
    expect((await send(host, { type: 'response.ready', event_id: id, e2e: 'sealed' })).json).toEqual({
      error: 'invalid_e2e',
    });
    const reply = await send(host, {
      type: 'input.needed',
      event_id: id,
      e2e: envelope(id, { req: 'req-one' }),
      clarify: { request_id: 'req-two' },
    });
    expect(reply.status).toBe(400);
    expect(reply.json).toEqual({ error: 'invalid_e2e' });
  });

  it('an encrypted clarify parks questions from clarify.qids', async () => {
    const { host } = await pair();
    const id = eventId();
    const requestId = `sealed-${Date.now()}`;
    const reply = await send(host, {
      type: 'input.needed',
      event_id: id,
      e2e: envelope(id, { req: requestId }),
      clarify: { request_id: requestId, qids: ['a', 'b'] },
    });
    expect(reply.json).toEqual({ accepted: true, delivered: true });
    const poll = await relay.call('GET', `/v1/decisions/${requestId}`, { auth: host.auth });
    expect(poll.json).toEqual({ status: 'pending', deliverable: true, remaining: ['a', 'b'], answers: {} });
  });
});
