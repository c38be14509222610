/**
 * §6 calls, VoIP pushes and rings (routes 5–7) against a real relay process, read from the APNs
 * capture file.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  deviceToken,
  eventId,
  pairHost,
  PUBLIC_URL,
  registerPhone,
  ROOMY_BUDGETS,
  startRelay,
  TOPIC,
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

const CALL = { id: 'call-abcdef01', kind: 'question', session_ids: ['sess-1'], title: 'Title', reason: 'Reason' };

interface Ringing {
  phone: Phone;
  host: Host;
  voip: string;
  watch: string;
  pushes: CapturedPush[];
  reply: { status: number; json: unknown };
}

async function ring(withWatch: boolean, preferences: Record<string, unknown> = {}): Promise<Ringing> {
  const voip = deviceToken();
  const watch = deviceToken();
  const phone = await registerPhone(relay, {
    voip_token: voip,
    ...(withWatch ? { watch_voip_token: watch } : {}),
    preferences,
  });
  const host = await pairHost(relay, phone);
  const before = relay.captures().length;
  const reply = await relay.call('POST', '/v1/events', {
    auth: host.auth,
    body: { type: 'call.requested', event_id: eventId(), session_id: 'sess-1', profile: 'p', call: CALL },
  });
  return { phone, host, voip, watch, pushes: relay.captures().slice(before), reply };
}

interface RingTicket {
  id: string;
  token: string;
  url: string;
}

const ticketOf = (push: CapturedPush) => (push.notification.payload.conduit as { ring: RingTicket }).ring;
const settle = (id: string, body: unknown) => relay.call('POST', `/v1/rings/${id}/settled`, { body });

describe('call.requested with a phone PushKit token', () => {
  it('rings with a VoIP push: topic <APNS_TOPIC>.voip, expiration now+1 day, no collapse id', async () => {
    const started = Math.floor(Date.now() / 1000);
    const { reply, pushes, voip, host } = await ring(false);
    expect(reply.status).toBe(202);
    expect(reply.json).toEqual({ accepted: true, delivered: true, rang: true });
    expect(pushes).toHaveLength(1);
    const push = pushes[0] as CapturedPush;
    expect(push.deviceToken).toBe(voip);
    expect(push.notification.pushType).toBe('voip');
    expect(push.notification.topic).toBe(`${TOPIC}.voip`);
    expect(push.notification.collapseId).toBeUndefined();
    const expiration = push.notification.expiration ?? 0;
    expect(expiration - started).toBeGreaterThanOrEqual(86_400);
    expect(expiration - started).toBeLessThanOrEqual(86_400 + 30);
    const routing = { type: 'call.requested', session_id: 'sess-1', profile: 'p', gateway_id: host.gatewayId };
    const payload = push.notification.payload as {
      aps: object;
      body: { conduit: Record<string, unknown> };
      conduit: Record<string, unknown>;
    };
    expect(payload.aps).toEqual({});
    // Integer UNIX seconds (the reference's nowSeconds), taken while the event was handled.
    const sentAt = payload.conduit.sent_at as number;
    expect(Number.isInteger(sentAt)).toBe(true);
    expect(sentAt).toBeGreaterThanOrEqual(started);
    expect(sentAt).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000));
    expect(payload.conduit).toEqual({ ...routing, sent_at: sentAt });
    expect(payload.body.conduit).toEqual({
      ...routing,
      sent_at: payload.conduit.sent_at,
      call: { id: CALL.id, kind: CALL.kind, session_ids: CALL.session_ids },
    });
  });

  it('show_previews keeps the call title and reason', async () => {
    const { pushes } = await ring(false, { show_previews: true });
    const payload = pushes[0]?.notification.payload as { body: { conduit: Record<string, unknown> } };
    expect(payload.body.conduit.call).toEqual(CALL);
  });

  it('a call.requested without a valid call falls back to the alert', async () => {
    const phone = await registerPhone(relay, { voip_token: deviceToken() });
    const host = await pairHost(relay, phone);
    const before = relay.captures().length;
    const reply = await relay.call('POST', '/v1/events', {
      auth: host.auth,
      body: { type: 'call.requested', event_id: eventId(), call: { ...CALL, session_ids: ['ok', 'not ok'] } },
    });
    expect(reply.json).toEqual({ accepted: true, delivered: true });
    const pushes = relay.captures().slice(before);
    expect(pushes).toHaveLength(1);
    expect(pushes[0]?.deviceToken).toBe(phone.token);
    expect((pushes[0]?.notification.payload.aps as Record<string, unknown>).category).toBe('HERMES_CALL');
  });
});

describe('rings', () => {
  it('with a Watch PushKit token: phone first, then the Watch on <APNS_TOPIC>.watchkitapp.voip, same ring', async () => {
    const { reply, pushes, voip, watch } = await ring(true);
    expect(reply.json).toEqual({ accepted: true, delivered: true, rang: true });
    expect(pushes.map((push) => push.deviceToken)).toEqual([voip, watch]);
    expect(pushes[1]?.notification.topic).toBe(`${TOPIC}.watchkitapp.voip`);
    expect(pushes[1]?.notification.payload).toEqual(pushes[0]?.notification.payload);
    const ticket = ticketOf(pushes[0] as CapturedPush);
    expect(ticket.id).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(ticket.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(ticket.url).toBe(`${PUBLIC_URL}/v1/rings/${ticket.id}/settled`);
    expect((pushes[0]?.notification.payload.body as { conduit: { ring: unknown } }).conduit.ring).toEqual(ticket);
  });

  it('settle: first wins, the other device gets a stop push (expiration one minute); a later settle is 409', async () => {
    const { pushes, watch } = await ring(true);
    const ticket = ticketOf(pushes[0] as CapturedPush);
    const before = relay.captures().length;
    const started = Math.floor(Date.now() / 1000);
    const first = await settle(ticket.id, { token: ticket.token, by: 'phone', outcome: 'answered', start: 'ignored' });
    expect(first.status).toBe(200);
    expect(first.json).toEqual({ settled: true, notified: true });
    const stops = relay.captures().slice(before);
    expect(stops).toHaveLength(1);
    expect(stops[0]?.deviceToken).toBe(watch);
    expect(stops[0]?.notification.pushType).toBe('voip');
    expect(stops[0]?.notification.topic).toBe(`${TOPIC}.watchkitapp.voip`);
    expect(stops[0]?.notification.payload).toEqual({
      aps: {},
      conduit: { ring: { id: ticket.id, settled: 'answered', by: 'phone' } },
    });
    const expiration = (stops[0]?.notification.expiration ?? 0) - started;
    expect(expiration).toBeGreaterThanOrEqual(60);
    expect(expiration).toBeLessThanOrEqual(90);
    const second = await settle(ticket.id, { token: ticket.token, by: 'watch', outcome: 'declined' });
    expect(second.status).toBe(409);
    expect(second.json).toEqual({ error: 'already_settled', settled: { by: 'phone', outcome: 'answered' } });
  });

  it('unknown ring and wrong token are the same 404 unknown_ring; malformed bodies 400 invalid_settle', async () => {
    const { pushes } = await ring(true);
    const ticket = ticketOf(pushes[0] as CapturedPush);
    const wrong = await settle(ticket.id, { token: 'A'.repeat(43), by: 'phone', outcome: 'answered' });
    expect(wrong.status).toBe(404);
    expect(wrong.json).toEqual({ error: 'unknown_ring' });
    const unknown = await settle('B'.repeat(22), { token: ticket.token, by: 'phone', outcome: 'answered' });
    expect(unknown.json).toEqual({ error: 'unknown_ring' });
    for (const body of [
      {},
      { token: ticket.token, by: 'tv', outcome: 'answered' },
      { token: ticket.token, by: 'phone', outcome: 'missed' },
      { token: 'short', by: 'phone', outcome: 'answered' },
    ]) {
      const reply = await settle(ticket.id, body);
      expect(reply.status, JSON.stringify(body)).toBe(400);
      expect(reply.json).toEqual({ error: 'invalid_settle' });
    }
  });

  it('answered on the Watch: start reaches the phone; the phone stores the session and the Watch fetches it', async () => {
    const { pushes, voip } = await ring(true);
    const ticket = ticketOf(pushes[0] as CapturedPush);
    const session = `/v1/rings/${ticket.id}/session`;
    // Before the Watch answered: 409 not_answered_on_watch.
    const early = await relay.call('PUT', session, { body: { token: ticket.token, sealed: 'abc' } });
    expect(early.status).toBe(409);
    expect(early.json).toEqual({ error: 'not_answered_on_watch' });
    const before = relay.captures().length;
    const settled = await settle(ticket.id, {
      token: ticket.token,
      by: 'watch',
      outcome: 'answered',
      start: 'St4rt_-',
    });
    expect(settled.json).toEqual({ settled: true, notified: true });
    const stop = relay.captures().slice(before)[0] as CapturedPush;
    expect(stop.deviceToken).toBe(voip);
    expect(stop.notification.topic).toBe(`${TOPIC}.voip`);
    expect(stop.notification.payload).toEqual({
      aps: {},
      conduit: { ring: { id: ticket.id, settled: 'answered', by: 'watch', start: 'St4rt_-' } },
    });
    const noBearer = await relay.call('GET', session);
    expect(noBearer.status).toBe(401);
    expect(noBearer.json).toEqual({ error: 'unauthorized' });
    const nothingYet = await relay.call('GET', session, { auth: `Bearer ${ticket.token}` });
    expect(nothingYet.status).toBe(204);
    // A waiting fetch resolves as soon as the phone stores the session.
    const waiting = relay.call('GET', `${session}?wait=10`, { auth: `bearer ${ticket.token}` });
    await new Promise((resolve) => setTimeout(resolve, 200));
    // A session may be 96 KB (98,304 characters), above the general 32,768-character body bound.
    const sealed = 'S'.repeat(98_304);
    const stored = await relay.call('PUT', session, { body: { token: ticket.token, sealed } });
    expect(stored.status).toBe(200);
    expect(stored.json).toEqual({ stored: true });
    const fetched = await waiting;
    expect(fetched.status).toBe(200);
    expect(fetched.json).toEqual({ sealed });
    const tooLong = await relay.call('PUT', session, { body: { token: ticket.token, sealed: 'S'.repeat(98_305) } });
    expect(tooLong.status).toBe(400);
    expect(tooLong.json).toEqual({ error: 'invalid_session' });
    const notB64 = await relay.call('PUT', session, { body: { token: ticket.token, sealed: 'a+b/' } });
    expect(notB64.status).toBe(400);
    expect(notB64.json).toEqual({ error: 'invalid_session' });
    const wrongToken = await relay.call('PUT', session, { body: { token: 'Z'.repeat(43), sealed: 'abc' } });
    expect(wrongToken.status).toBe(404);
    expect(wrongToken.json).toEqual({ error: 'unknown_ring' });
  });

  it('a malformed start is dropped silently, and start is only kept for watch+answered', async () => {
    const { pushes } = await ring(true);
    const ticket = ticketOf(pushes[0] as CapturedPush);
    const before = relay.captures().length;
    const reply = await settle(ticket.id, {
      token: ticket.token,
      by: 'watch',
      outcome: 'answered',
      start: 'bad start!',
    });
    expect(reply.status).toBe(200);
    const stop = relay.captures().slice(before)[0] as CapturedPush;
    expect(stop.notification.payload).toEqual({
      aps: {},
      conduit: { ring: { id: ticket.id, settled: 'answered', by: 'watch' } },
    });
  });
});
