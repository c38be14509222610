/**
 * phone.changes nudges and location.request pushes (POST /v1/events) through the generated client,
 * against a real relay process in capture mode: what reaches APNs (payload, push type, topic,
 * priority, expiration), the idempotency of event ids, the preference gate, bad input, and the
 * capability names in /v1/meta; the location push token a phone registers (location_push_token) and
 * the 409 location_push_unavailable without one. The headers on the HTTP/2 wire are pinned against the APNs simulator
 * in test/apns/new-push-types.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  deviceToken,
  eventId,
  pairHost,
  registerPhone,
  ROOMY_BUDGETS,
  startRelay,
  TOPIC,
  type CapturedPush,
  type Host,
  type Phone,
  type Relay,
} from './conformance/relay.js';
import { sealedEnvelope as envelope, type EventBody } from './support/sealed-event.js';

let relay: Relay;

beforeAll(async () => {
  relay = await startRelay(ROOMY_BUDGETS);
}, 60_000);
afterAll(() => relay?.stop());

type Captured = CapturedPush & { notification: CapturedPush['notification'] & { priority?: number } };

/** A phone that registered a location push token too (`locationToken`), paired with one host. */
async function pair(
  preferences: Record<string, boolean> = {},
): Promise<{ phone: Phone; host: Host; locationToken: string }> {
  const locationToken = deviceToken();
  const phone = await registerPhone(relay, { preferences, location_push_token: locationToken });
  return { phone, host: await pairHost(relay, phone), locationToken };
}

/** A phone as old apps register it: no location push token. */
async function pairWithoutLocationToken(): Promise<{ phone: Phone; host: Host }> {
  const phone = await registerPhone(relay);
  return { phone, host: await pairHost(relay, phone) };
}

function locate(host: Host, id = eventId('locate')) {
  return post(host, { type: 'location.request', event_id: id, e2e: envelope(id) });
}

async function post(host: Host, body: EventBody) {
  return relay.client.POST('/v1/events', { headers: { authorization: host.auth }, body });
}

/** Runs `act` and returns the pushes it caused. */
async function pushesDuring(act: () => Promise<unknown>): Promise<Captured[]> {
  const before = relay.captures().length;
  await act();
  return relay.captures().slice(before) as Captured[];
}

describe('phone.changes in alert mode', () => {
  it('a plaintext nudge is a generic alert with the attention sound, mode alert in the routing stub', async () => {
    const { phone, host } = await pair();
    let reply: Awaited<ReturnType<typeof post>> | undefined;
    const pushes = await pushesDuring(async () => {
      reply = await post(host, {
        type: 'phone.changes',
        event_id: eventId(),
        mode: 'alert',
        title: 'Add “Dentist” on Friday',
        body: 'Calendar: Personal',
        profile: 'work',
        session_id: 'session-0123456789',
      });
    });
    expect(reply?.response.status).toBe(202);
    expect(reply?.data).toEqual({ accepted: true, delivered: true });
    expect(pushes).toHaveLength(1);
    const [push] = pushes as [Captured];
    expect(push.deviceToken).toBe(phone.token);
    // Alerts keep the default push type and topic (apns-push-type alert, priority 10, APNS_TOPIC); like
    // the reference's, the notification names no pushType.
    expect(push.notification.pushType).toBeUndefined();
    expect(push.notification.topic).toBeUndefined();
    expect(push.notification.priority).toBeUndefined();
    const routing = {
      type: 'phone.changes',
      mode: 'alert',
      session_id: 'session-0123456789',
      profile: 'work',
      gateway_id: host.gatewayId,
    };
    expect(push.notification.payload).toEqual({
      aps: {
        alert: {
          title: 'Change to review',
          body: 'Hermes has a change for you to approve.\nProfile: work · Session: …23456789',
        },
        sound: 'default',
        'thread-id': push.notification.threadId,
      },
      body: { conduit: routing },
      conduit: routing,
    });
    // Previews off (the default): nothing of the change's text reaches APNs.
    expect(JSON.stringify(push)).not.toContain('Dentist');
  });

  it('without a mode the nudge is an alert; with show_previews the host’s title and body are shown', async () => {
    const { host } = await pair({ show_previews: true, attention_sound: false });
    const pushes = await pushesDuring(() =>
      post(host, { type: 'phone.changes', event_id: eventId(), title: 'Add “Dentist”', body: 'Friday 9:00' }),
    );
    const aps = pushes[0]?.notification.payload.aps as Record<string, unknown>;
    expect(aps.alert).toEqual({ title: 'Add “Dentist”', body: 'Friday 9:00' });
    expect(aps).not.toHaveProperty('sound');
    expect(pushes[0]?.notification.payload.conduit).toMatchObject({ type: 'phone.changes', mode: 'alert' });
  });

  it('a sealed nudge carries generic copy, mutable-content and the envelope verbatim; plaintext beside it is ignored', async () => {
    const { host } = await pair({ show_previews: true });
    const id = eventId();
    const e2e = envelope(id);
    let reply: Awaited<ReturnType<typeof post>> | undefined;
    const pushes = await pushesDuring(async () => {
      reply = await post(host, { type: 'phone.changes', event_id: id, mode: 'alert', title: 'secret title', e2e });
    });
    expect(reply?.response.status).toBe(202);
    const routing = { type: 'phone.changes', mode: 'alert', e2e: 1, gateway_id: host.gatewayId };
    const payload = pushes[0]?.notification.payload;
    expect(payload).toEqual({
      aps: {
        alert: { title: 'Change to review', body: 'Hermes has a change for you to approve.' },
        'mutable-content': 1,
        sound: 'default',
        'thread-id': pushes[0]?.notification.threadId,
      },
      body: { conduit: routing },
      conduit: routing,
      conduit_e2e: e2e,
    });
    expect(JSON.stringify(payload)).not.toContain('secret title');
  });
});

describe('phone.changes in background mode', () => {
  it('a plaintext nudge is a silent push: content-available, priority 5, only opaque routing ids', async () => {
    const { phone, host } = await pair({ show_previews: true });
    const sentAt = Math.floor(Date.now() / 1000);
    let reply: Awaited<ReturnType<typeof post>> | undefined;
    const pushes = await pushesDuring(async () => {
      reply = await post(host, {
        type: 'phone.changes',
        event_id: eventId(),
        mode: 'background',
        title: 'Add “Gym”',
        body: 'Tuesday',
        profile: 'home',
        session_id: 'session-abcdef',
      });
    });
    expect(reply?.data).toEqual({ accepted: true, delivered: true });
    expect(pushes).toHaveLength(1);
    const push = pushes[0] as Captured;
    expect(push.deviceToken).toBe(phone.token);
    expect(push.notification.payload).toEqual({
      aps: { 'content-available': 1 },
      conduit: { type: 'phone.changes', mode: 'background', gateway_id: host.gatewayId },
    });
    expect(push.notification.pushType).toBe('background');
    expect(push.notification.priority).toBe(5);
    expect(push.notification.topic).toBeUndefined();
    expect(push.notification.collapseId).toBeUndefined();
    expect(push.notification.expiration).toBeGreaterThanOrEqual(sentAt + 86_400);
    expect(push.notification.expiration).toBeLessThanOrEqual(sentAt + 86_400 + 120);
    // Even with previews on, a silent push carries no text, profile or session.
    expect(JSON.stringify(push)).not.toMatch(/Gym|Tuesday|home|session-abcdef/);
  });

  it('a sealed nudge adds only e2e:1 and the envelope', async () => {
    const { host } = await pair();
    const id = eventId();
    const e2e = envelope(id);
    const pushes = await pushesDuring(() =>
      post(host, { type: 'phone.changes', event_id: id, mode: 'background', e2e }),
    );
    expect(pushes[0]?.notification.payload).toEqual({
      aps: { 'content-available': 1 },
      conduit: { type: 'phone.changes', mode: 'background', e2e: 1, gateway_id: host.gatewayId },
      conduit_e2e: e2e,
    });
    expect(pushes[0]?.notification.pushType).toBe('background');
  });

  it('follows the enabled switch in both modes: enabled false answers delivered:false and pushes nothing', async () => {
    const { host } = await pair({ enabled: false });
    const pushes = await pushesDuring(async () => {
      for (const mode of ['alert', 'background'] as const) {
        const reply = await post(host, { type: 'phone.changes', event_id: eventId(), mode });
        expect(reply.response.status).toBe(202);
        expect(reply.data).toEqual({ accepted: true, delivered: false });
      }
    });
    expect(pushes).toEqual([]);
  });
});

describe('location.request', () => {
  it('is an Apple location push to <APNS_TOPIC>.location-query, to the location push token, carrying only the sealed envelope', async () => {
    const { phone, host, locationToken } = await pair({ show_previews: true });
    const id = eventId('locate');
    const e2e = envelope(id);
    const sentAt = Math.floor(Date.now() / 1000);
    let reply: Awaited<ReturnType<typeof post>> | undefined;
    const pushes = await pushesDuring(async () => {
      reply = await post(host, { type: 'location.request', event_id: id, e2e, title: 'ignored', profile: 'p' });
    });
    expect(reply?.response.status).toBe(202);
    expect(reply?.data).toEqual({ accepted: true, delivered: true });
    expect(pushes).toHaveLength(1);
    const push = pushes[0] as Captured;
    expect(push.deviceToken).toBe(locationToken);
    expect(push.deviceToken).not.toBe(phone.token);
    expect(push.notification.pushType).toBe('location');
    expect(push.notification.topic).toBe(`${TOPIC}.location-query`);
    expect(push.notification.priority).toBe(10);
    expect(push.notification.expiration).toBeGreaterThanOrEqual(sentAt + 300);
    expect(push.notification.expiration).toBeLessThanOrEqual(sentAt + 300 + 120);
    expect(push.notification.payload).toEqual({
      aps: {},
      conduit: { type: 'location.request', e2e: 1, gateway_id: host.gatewayId },
      conduit_e2e: e2e,
    });
  });

  it('is not gated by notification preferences (the phone’s location sharing decides)', async () => {
    const { host } = await pair({ enabled: false });
    const id = eventId('locate');
    const pushes = await pushesDuring(() => post(host, { type: 'location.request', event_id: id, e2e: envelope(id) }));
    expect(pushes.map((push) => push.notification.pushType)).toEqual(['location']);
  });

  it('a plaintext request is 400 invalid_e2e, pushes nothing and does not consume the event id', async () => {
    const { host } = await pair();
    const id = eventId('locate');
    const pushes = await pushesDuring(async () => {
      const plain = await post(host, { type: 'location.request', event_id: id, title: 'where are you?' });
      expect(plain.response.status).toBe(400);
      expect(plain.error).toEqual({ error: 'invalid_e2e' });
      const broken = await relay.call('POST', '/v1/events', {
        auth: host.auth,
        body: { type: 'location.request', event_id: id, e2e: { ...envelope(id), msg: 'another-event-id' } },
      });
      expect(broken.status).toBe(400);
      expect(broken.json).toEqual({ error: 'invalid_e2e' });
    });
    expect(pushes).toEqual([]);
    const sealed = await post(host, { type: 'location.request', event_id: id, e2e: envelope(id) });
    expect(sealed.data).toEqual({ accepted: true, delivered: true });
  });
});

describe('location.request without a location push token', () => {
  it('is 409 location_push_unavailable, pushes nothing and leaves the event id for a retry after registration', async () => {
    const { phone, host } = await pairWithoutLocationToken();
    const id = eventId('locate');
    const pushes = await pushesDuring(async () => {
      for (let attempt = 0; attempt < 2; attempt += 1) {
        const reply = await locate(host, id);
        expect(reply.response.status).toBe(409);
        expect(reply.error).toEqual({ error: 'location_push_unavailable' });
      }
    });
    expect(pushes).toEqual([]);
    const locationToken = deviceToken();
    const update = await relay.call('PUT', `/v1/installations/${phone.id}`, {
      auth: phone.auth,
      body: { location_push_token: locationToken },
    });
    expect(update.status).toBe(200);
    const delivered = await pushesDuring(async () => {
      const retry = await locate(host, id);
      expect(retry.data).toEqual({ accepted: true, delivered: true });
    });
    expect(delivered.map((push) => push.deviceToken)).toEqual([locationToken]);
  });

  it('spends none of the global event budget (RELAY_EVENTS_PER_MINUTE=2)', async () => {
    const tight = await startRelay({ ...ROOMY_BUDGETS, RELAY_EVENTS_PER_MINUTE: '2' });
    try {
      const phone = await registerPhone(tight);
      const host = await pairHost(tight, phone);
      const send = (body: Record<string, unknown>) => tight.call('POST', '/v1/events', { auth: host.auth, body });
      for (let i = 0; i < 4; i += 1) {
        const id = eventId('locate');
        const refused = await send({ type: 'location.request', event_id: id, e2e: envelope(id) });
        expect(refused.json).toEqual({ error: 'location_push_unavailable' });
      }
      for (let i = 0; i < 2; i += 1) {
        expect((await send({ type: 'response.ready', event_id: eventId() })).status).toBe(202);
      }
      // The budget really is two a minute: the third counted event is refused.
      const third = await send({ type: 'response.ready', event_id: eventId() });
      expect(third.status).toBe(429);
      expect(third.json).toEqual({ error: 'rate_limited' });
    } finally {
      await tight.stop();
    }
  }, 60_000);

  it('old apps are unaffected: alerts and background nudges still go to the device token', async () => {
    const { phone, host } = await pairWithoutLocationToken();
    const pushes = await pushesDuring(async () => {
      expect((await post(host, { type: 'response.ready', event_id: eventId() })).response.status).toBe(202);
      const nudge = await post(host, { type: 'phone.changes', event_id: eventId(), mode: 'background' });
      expect(nudge.data).toEqual({ accepted: true, delivered: true });
    });
    expect(pushes.map((push) => push.deviceToken)).toEqual([phone.token, phone.token]);
  });

  it('a repeat of an event delivered before the token was cleared is still 200 duplicate', async () => {
    const { phone, host } = await pair();
    const id = eventId('locate');
    expect((await locate(host, id)).response.status).toBe(202);
    const cleared = await relay.call('PUT', `/v1/installations/${phone.id}`, {
      auth: phone.auth,
      body: { location_push_token: null },
    });
    expect(cleared.status).toBe(200);
    const again = await locate(host, id);
    expect(again.response.status).toBe(200);
    expect(again.data).toEqual({ accepted: true, duplicate: true });
    expect((await locate(host)).response.status).toBe(409);
  });
});

describe('location_push_token on the installation', () => {
  const path = (phone: Phone) => `/v1/installations/${phone.id}`;

  /** Where the next location push for this host goes (undefined: 409, nothing pushed). */
  async function locationTarget(host: Host): Promise<string | undefined> {
    let status = 0;
    const pushes = await pushesDuring(async () => {
      status = (await locate(host)).response.status;
    });
    expect(status).toBe(pushes.length === 1 ? 202 : 409);
    return pushes[0]?.deviceToken;
  }

  it('is normalised like the other tokens at registration and on update', async () => {
    const raw = 'AB CD'.repeat(16);
    const phone = await registerPhone(relay, { location_push_token: `<${raw}>` });
    const host = await pairHost(relay, phone);
    expect(await locationTarget(host)).toBe('abcd'.repeat(16));
    const next = deviceToken();
    const update = await relay.call('PUT', path(phone), {
      auth: phone.auth,
      body: { location_push_token: next.toUpperCase() },
    });
    expect(update.status).toBe(200);
    expect(await locationTarget(host)).toBe(next);
  });

  it.each([['short'], ['zz'.repeat(32)], ['ab'.repeat(101)], [12], [true], [{}]])(
    '%j is 400 invalid_location_push_token at registration and on update, and nothing changes',
    async (value) => {
      const rejected = await relay.call('POST', '/v1/installations', {
        body: { bundle_id: TOPIC, device_token: deviceToken(), environment: 'production', location_push_token: value },
      });
      expect(rejected.status).toBe(400);
      expect(rejected.json).toEqual({ error: 'invalid_location_push_token' });
      const { phone, host, locationToken } = await pair();
      const update = await relay.call('PUT', path(phone), {
        auth: phone.auth,
        body: { location_push_token: value, preferences: { enabled: false } },
      });
      expect(update.status).toBe(400);
      expect(update.json).toEqual({ error: 'invalid_location_push_token' });
      expect(await locationTarget(host)).toBe(locationToken);
    },
  );

  it('is checked after the PushKit tokens and before bundle_id', async () => {
    const base = { bundle_id: 'wrong', device_token: deviceToken(), environment: 'production' };
    const cases: [Record<string, unknown>, string][] = [
      [{ ...base, watch_voip_token: 'x', location_push_token: 'x' }, 'invalid_watch_voip_token'],
      [{ ...base, location_push_token: 'x' }, 'invalid_location_push_token'],
    ];
    for (const [body, code] of cases) {
      expect((await relay.call('POST', '/v1/installations', { body })).json).toEqual({ error: code });
    }
  });

  it('null clears it, absent keeps it, and neither touches the device token', async () => {
    const { phone, host, locationToken } = await pair();
    const keep = await relay.call('PUT', path(phone), { auth: phone.auth, body: { voip_token: deviceToken() } });
    expect(keep.status).toBe(200);
    expect(await locationTarget(host)).toBe(locationToken);
    const clear = await relay.call('PUT', path(phone), { auth: phone.auth, body: { location_push_token: null } });
    expect(clear.status).toBe(200);
    expect(await locationTarget(host)).toBeUndefined();
    const alert = await pushesDuring(() => post(host, { type: 'response.ready', event_id: eventId() }));
    expect(alert.map((push) => push.deviceToken)).toEqual([phone.token]);
  });

  it('re-sending the same token (any spelling) is a no-op that keeps updated_at; a new one moves it', async () => {
    const { phone, locationToken } = await pair();
    const first = await relay.call('PUT', path(phone), { auth: phone.auth, body: {} });
    const before = (first.json as { installation: { updated_at: string } }).installation.updated_at;
    await new Promise((resolve) => setTimeout(resolve, 15));
    const same = await relay.call('PUT', path(phone), {
      auth: phone.auth,
      body: { location_push_token: `<${locationToken.toUpperCase()}>` },
    });
    expect(same.status).toBe(200);
    expect((same.json as { installation: { updated_at: string } }).installation.updated_at).toBe(before);
    const changed = await relay.call('PUT', path(phone), {
      auth: phone.auth,
      body: { location_push_token: deviceToken() },
    });
    expect((changed.json as { installation: { updated_at: string } }).installation.updated_at).not.toBe(before);
  });

  it('the installation DTO is unchanged for old clients (no token, no new field)', async () => {
    const phone = await registerPhone(relay, { location_push_token: deviceToken() });
    const reply = await relay.call('PUT', path(phone), { auth: phone.auth, body: {} });
    expect(Object.keys((reply.json as { installation: object }).installation).sort()).toEqual([
      'active',
      'gateways',
      'id',
      'preferences',
      'updated_at',
      'voip',
      'watch_voip',
    ]);
    expect(reply.text).not.toContain('location');
  });
});

describe('idempotency and bad input', () => {
  it.each([
    ['phone.changes alert', { type: 'phone.changes' as const, mode: 'alert' as const }],
    ['phone.changes background', { type: 'phone.changes' as const, mode: 'background' as const }],
    ['location.request', { type: 'location.request' as const }],
  ])('a repeated %s event id is 200 duplicate and pushes once', async (_name, fields) => {
    const { host } = await pair();
    const id = eventId('dup');
    const body = { ...fields, event_id: id, e2e: envelope(id) };
    const pushes = await pushesDuring(async () => {
      expect((await post(host, body)).response.status).toBe(202);
      const again = await post(host, body);
      expect(again.response.status).toBe(200);
      expect(again.data).toEqual({ accepted: true, duplicate: true });
    });
    expect(pushes).toHaveLength(1);
  });

  it.each([['silent'], ['ALERT'], [5], [true], [{}], [['alert']], ['']])(
    'mode %j on phone.changes is 400 invalid_mode and nothing is pushed or consumed',
    async (mode) => {
      const { host } = await pair();
      const id = eventId('mode');
      const pushes = await pushesDuring(async () => {
        const reply = await relay.call('POST', '/v1/events', {
          auth: host.auth,
          body: { type: 'phone.changes', event_id: id, mode },
        });
        expect(reply.status).toBe(400);
        expect(reply.json).toEqual({ error: 'invalid_mode' });
      });
      expect(pushes).toEqual([]);
      // The id was not consumed: the corrected event goes through.
      expect((await post(host, { type: 'phone.changes', event_id: id, mode: 'background' })).response.status).toBe(202);
    },
  );

  it('mode is ignored on other event types (unknown fields are dropped)', async () => {
    const { host } = await pair();
    const reply = await relay.call('POST', '/v1/events', {
      auth: host.auth,
      body: { type: 'response.ready', event_id: eventId(), mode: 'nonsense' },
    });
    expect(reply.status).toBe(202);
  });

  it('the event checks run in order: a bad event id comes before a bad mode', async () => {
    const { host } = await pair();
    const reply = await relay.call('POST', '/v1/events', {
      auth: host.auth,
      body: { type: 'phone.changes', event_id: 'short', mode: 'silent' },
    });
    expect(reply.json).toEqual({ error: 'invalid_event_id' });
  });

  it('a host without a credential is 401 for the new types too', async () => {
    const reply = await relay.call('POST', '/v1/events', { body: { type: 'phone.changes', event_id: eventId() } });
    expect(reply.status).toBe(401);
  });
});

describe('GET /v1/meta', () => {
  it('lists phone-changes-v1 and location-push-v1 beside the core capabilities', async () => {
    const { phone } = await pair();
    const meta = await relay.client.GET('/v1/meta', { headers: { authorization: phone.auth } });
    expect(meta.response.status).toBe(200);
    expect(meta.data?.capabilities).toEqual(
      expect.arrayContaining(['decisions', 'e2e-v1', 'watch-calls', 'phone-changes-v1', 'location-push-v1']),
    );
  });
});
