/**
 * The relay's wire behaviour (routes 2–15, rings 5–7) through the generated client, against a real
 * app on an ephemeral port, once on SQLite and once on PostgreSQL.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  deviceToken,
  nextIp,
  paired,
  PUBLIC_URL,
  register,
  ROOMY_BUDGETS,
  startRelay,
  STORE_KINDS,
  testDatabase,
  TOPIC,
  type Relay,
} from './support/harness.js';

describe.each(STORE_KINDS)('relay on %s', (kind) => {
  let relay: Relay;
  let release: () => Promise<void>;

  beforeAll(async () => {
    const db = await testDatabase(kind);
    release = db.release;
    relay = await startRelay(db.url, ROOMY_BUDGETS);
  });
  afterAll(async () => {
    await relay?.close();
    await release?.();
  });
  beforeEach(() => relay.apns.reset());

  const post = (path: string, body: string, headers: Record<string, string> = {}) =>
    fetch(`${relay.baseUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': nextIp(), ...headers },
      body,
    });

  describe('POST /v1/installations', () => {
    it('registers a phone: 201 with the public installation, a credential and relay_url', async () => {
      const { body } = await register(relay, {
        voip_token: `<${'AB'.repeat(32)}>`,
        preferences: { show_previews: true },
      });
      expect(body.relay_url).toBe(PUBLIC_URL);
      expect(body.credential).toMatch(/^[0-9a-f-]{36}\.[A-Za-z0-9_-]{43}$/);
      expect(body.installation).toMatchObject({ active: true, gateways: [], voip: true, watch_voip: false });
      expect(body.installation.preferences).toMatchObject({ show_previews: true, enabled: true, decision_cards: true });
      const stored = await relay.store.findInstallation(body.installation.id);
      expect(stored?.voipToken).toBe('ab'.repeat(32));
      // Only the hash of the secret is stored.
      expect(stored?.deviceSecretHash).toMatch(/^[0-9a-f]{64}$/);
      expect(JSON.stringify(stored)).not.toContain(body.credential.split('.')[1]);
    });

    it.each([
      [{ bundle_id: TOPIC, device_token: 'xyz', environment: 'production' }, 'invalid_device_token'],
      [
        { bundle_id: TOPIC, device_token: 'ab'.repeat(32), environment: 'production', voip_token: 'q' },
        'invalid_voip_token',
      ],
      [
        { bundle_id: TOPIC, device_token: 'ab'.repeat(32), environment: 'production', watch_voip_token: 5 },
        'invalid_watch_voip_token',
      ],
      [{ bundle_id: 'com.other', device_token: 'ab'.repeat(32), environment: 'production' }, 'invalid_topic'],
      [{ bundle_id: TOPIC, device_token: 'ab'.repeat(32), environment: 'sandbox' }, 'production_only'],
    ])('rejects %j with 400 %s', async (body, code) => {
      const response = await post('/v1/installations', JSON.stringify(body));
      expect(response.status).toBe(400);
      expect(await response.json()).toEqual({ error: code });
    });

    it.each(['{', 'null', '[]', '"x"', '5'])('a body of %s is 400 invalid_json', async (raw) => {
      const response = await post('/v1/installations', raw);
      expect(response.status).toBe(400);
      expect(await response.json()).toEqual({ error: 'invalid_json' });
    });

    it('a body over 32,768 characters is 413 payload_too_large', async () => {
      const response = await post('/v1/installations', JSON.stringify({ pad: 'x'.repeat(33_000) }));
      expect(response.status).toBe(413);
      expect(await response.json()).toEqual({ error: 'payload_too_large' });
    });

    it('the 13th registration from one address within a minute is 429 rate_limited', async () => {
      const ip = nextIp();
      const statuses: number[] = [];
      for (let i = 0; i < 13; i += 1) {
        const response = await post(
          '/v1/installations',
          JSON.stringify({ bundle_id: TOPIC, device_token: deviceToken(i + 1), environment: 'production' }),
          { 'x-forwarded-for': ip },
        );
        statuses.push(response.status);
      }
      expect(statuses.slice(0, 12).every((status) => status === 201)).toBe(true);
      expect(statuses[12]).toBe(429);
    });
  });

  describe('PUT and DELETE /v1/installations/:id', () => {
    it('merges preferences, clears a PushKit token with null, and a no-op writes nothing', async () => {
      const phone = await register(relay, { voip_token: 'cd'.repeat(32) });
      const auth = { authorization: `Bearer ${phone.credential}` };
      const updated = await relay.client.PUT('/v1/installations/{id}', {
        params: { path: { id: phone.id } },
        headers: auth,
        body: { voip_token: null, preferences: { response_ready: false } },
      });
      expect(updated.response.status).toBe(200);
      expect(updated.data?.installation).toMatchObject({ voip: false });
      expect(updated.data?.installation.preferences).toMatchObject({ response_ready: false, turn_failed: true });
      const before = await relay.store.findInstallation(phone.id);
      relay.clock.advance(1000);
      const again = await relay.client.PUT('/v1/installations/{id}', {
        params: { path: { id: phone.id } },
        headers: auth,
        body: { preferences: { response_ready: false } },
      });
      expect(again.response.status).toBe(200);
      expect((await relay.store.findInstallation(phone.id))?.updatedAt).toBe(before?.updatedAt);
    });

    it('another installation’s credential is 401 unauthorized', async () => {
      const a = await register(relay);
      const b = await register(relay);
      const response = await relay.client.PUT('/v1/installations/{id}', {
        params: { path: { id: a.id } },
        headers: { authorization: `Bearer ${b.credential}` },
        body: {},
      });
      expect(response.response.status).toBe(401);
      expect(response.error).toEqual({ error: 'unauthorized' });
    });

    it('DELETE deactivates (204) and the credential stops working', async () => {
      const phone = await register(relay);
      const auth = { authorization: `Bearer ${phone.credential}` };
      const deleted = await relay.client.DELETE('/v1/installations/{id}', {
        params: { path: { id: phone.id } },
        headers: auth,
      });
      expect(deleted.response.status).toBe(204);
      expect((await relay.store.findInstallation(phone.id))?.active).toBe(false);
      const meta = await relay.client.GET('/v1/meta', { headers: auth });
      expect(meta.response.status).toBe(401);
    });
  });

  describe('pairing', () => {
    it('a code pairs once; the gateway appears in /v1/meta with its dashboard binding', async () => {
      const dashboardId = 'A1B2C3D4-0000-4000-8000-000000000001';
      const { phone, gatewayId, deviceAuth } = await paired(relay, {}, dashboardId);
      const meta = await relay.client.GET('/v1/meta', { headers: deviceAuth });
      // Exactly these keys: what the relay does not know yet is left out, never null.
      expect(meta.data?.gateways.map((gateway) => Object.entries(gateway))).toEqual([
        [
          ['id', gatewayId],
          ['name', 'Test host'],
          ['plugin_capabilities', []],
          ['dashboard_id', dashboardId.toLowerCase()],
        ],
      ]);
      expect(meta.data?.version).toBe('0.11.0');
      expect(meta.data?.capabilities).toEqual(expect.arrayContaining(['decisions', 'e2e-v1', 'calls', 'watch-calls']));
      expect(phone.id).toBeTruthy();
    });

    it('a used, unknown or expired code is 404 invalid_or_expired_pairing; a new code voids the old one', async () => {
      const phone = await register(relay);
      const auth = { authorization: `Bearer ${phone.credential}` };
      const create = () =>
        relay.client.POST('/v1/installations/{id}/pairings', {
          params: { path: { id: phone.id } },
          headers: auth,
          body: {},
        });
      const first = await create();
      expect(first.response.status).toBe(201);
      expect(first.data?.pairing_code).toMatch(/^[A-HJ-NP-Z2-9]{5}-[A-HJ-NP-Z2-9]{5}$/);
      const second = await create();
      const claim = (code: string) =>
        relay.client.POST('/v1/pairings/claim', {
          headers: { 'x-forwarded-for': nextIp() },
          body: { pairing_code: code },
        });
      expect((await claim(first.data?.pairing_code ?? '')).error).toEqual({ error: 'invalid_or_expired_pairing' });
      // Normalisation: lowercase without the dash claims too.
      const ok = await claim((second.data?.pairing_code ?? '').replace('-', '').toLowerCase());
      expect(ok.response.status).toBe(200);
      expect(ok.data?.credential).toMatch(new RegExp(`^${phone.id}\\.${ok.data?.gateway_id}\\.[A-Za-z0-9_-]{43}$`));
      expect((await claim(second.data?.pairing_code ?? '')).response.status).toBe(404);
      const third = await create();
      relay.clock.advance(10 * 60 * 1000 + 1);
      expect((await claim(third.data?.pairing_code ?? '')).response.status).toBe(404);
    });

    it('an invalid or nil dashboard_id is 400 invalid_dashboard_id', async () => {
      const phone = await register(relay);
      for (const dashboard_id of ['nope', '00000000-0000-0000-0000-000000000000']) {
        const response = await relay.client.POST('/v1/installations/{id}/pairings', {
          params: { path: { id: phone.id } },
          headers: { authorization: `Bearer ${phone.credential}` },
          body: { dashboard_id },
        });
        expect(response.error).toEqual({ error: 'invalid_dashboard_id' });
      }
    });

    it('DELETE /v1/gateways/current revokes the gateway credential', async () => {
      const { gatewayAuth } = await paired(relay);
      const revoked = await relay.client.DELETE('/v1/gateways/current', { headers: gatewayAuth });
      expect(revoked.response.status).toBe(204);
      const event = await relay.client.POST('/v1/events', {
        headers: gatewayAuth,
        body: { type: 'response.ready', event_id: 'evt-after-revoke' },
      });
      expect(event.response.status).toBe(401);
    });
  });

  describe('POST /v1/events', () => {
    it('pushes generic copy with the context line, gateway-scoped thread and collapse ids', async () => {
      const { phone, gatewayId, gatewayAuth } = await paired(relay);
      const { data, response } = await relay.client.POST('/v1/events', {
        headers: gatewayAuth,
        body: {
          type: 'response.ready',
          event_id: 'evt-0001-ready',
          title: 'Secret title',
          body: 'Secret body',
          session_id: 'session-1234567890',
          profile: 'work',
          dashboard_id: 'ignored',
        } as never,
      });
      expect(response.status).toBe(202);
      expect(data).toEqual({ accepted: true, delivered: true });
      expect(relay.apns.sent).toHaveLength(1);
      const [sent] = relay.apns.sent;
      expect(sent?.deviceToken).toBe(phone.token);
      const payload = sent?.notification.payload as Record<string, Record<string, unknown>>;
      expect(payload.aps).toMatchObject({
        alert: { title: 'Response ready', body: 'Hermes has finished responding.\nProfile: work · Session: …34567890' },
        sound: 'default',
      });
      expect(JSON.stringify(payload)).not.toContain('Secret');
      expect(payload.conduit).toEqual({
        type: 'response.ready',
        session_id: 'session-1234567890',
        profile: 'work',
        gateway_id: gatewayId,
      });
      expect(payload.aps?.['thread-id']).toMatch(/^[0-9a-f]{16}$/);
      expect(sent?.notification.collapseId).toBe(`response.ready:${String(payload.aps?.['thread-id'])}`);
    });

    it('the same event id from the same gateway is 200 duplicate and pushes nothing more', async () => {
      const { gatewayAuth } = await paired(relay);
      const send = () =>
        relay.client.POST('/v1/events', {
          headers: gatewayAuth,
          body: { type: 'turn.failed', event_id: 'evt-dup-0001' },
        });
      expect((await send()).response.status).toBe(202);
      const again = await send();
      expect(again.response.status).toBe(200);
      expect(again.data).toEqual({ accepted: true, duplicate: true });
      expect(relay.apns.sent).toHaveLength(1);
    });

    it('plugin.hello records the plugin version for /v1/meta and never notifies', async () => {
      const { gatewayAuth, deviceAuth } = await paired(relay);
      const hello = await relay.client.POST('/v1/events', {
        headers: gatewayAuth,
        body: {
          type: 'plugin.hello',
          event_id: 'hello-0001',
          plugin_version: '0.40.1',
          plugin_capabilities: ['e2e', 'bad cap'],
        },
      });
      expect(hello.data).toEqual({ accepted: true, delivered: false });
      expect(relay.apns.sent).toHaveLength(0);
      const meta = await relay.client.GET('/v1/meta', { headers: deviceAuth });
      expect(meta.data?.gateways[0]).toMatchObject({ plugin_version: '0.40.1', plugin_capabilities: ['e2e'] });
      expect(meta.data?.gateways[0]?.last_event_at).toBe(new Date(relay.clock.now()).toISOString());
    });

    it('a type switched off in preferences is accepted but not delivered', async () => {
      const { gatewayAuth } = await paired(relay, { preferences: { turn_failed: false } });
      const { data } = await relay.client.POST('/v1/events', {
        headers: gatewayAuth,
        body: { type: 'turn.failed', event_id: 'evt-off-0001' },
      });
      expect(data).toEqual({ accepted: true, delivered: false });
      expect(relay.apns.sent).toHaveLength(0);
    });

    it.each([
      [{ type: 'nope', event_id: 'evt-00000001' }, 'invalid_event_type'],
      [{ type: 'response.ready', event_id: 'short' }, 'invalid_event_id'],
      [{ type: 'response.ready', event_id: 'evt-e2e-bad', e2e: { v: 2 } }, 'invalid_e2e'],
    ])('%j is 400 %s', async (body, code) => {
      const { gatewayAuth } = await paired(relay);
      const response = await post('/v1/events', JSON.stringify(body), gatewayAuth);
      expect(response.status).toBe(400);
      expect(await response.json()).toEqual({ error: code });
    });

    it('APNs refusing is 502 apns_rejected with reason and status; Unregistered deactivates the phone', async () => {
      const { phone, gatewayAuth } = await paired(relay);
      relay.apns.answer(() => ({ ok: false, status: 400, reason: 'PayloadTooLarge' }));
      const refused = await post(
        '/v1/events',
        JSON.stringify({ type: 'turn.failed', event_id: 'evt-rej-0001' }),
        gatewayAuth,
      );
      expect(refused.status).toBe(502);
      expect(await refused.json()).toEqual({ error: 'apns_rejected', reason: 'PayloadTooLarge', status: 400 });
      expect((await relay.store.findInstallation(phone.id))?.active).toBe(true);
      relay.apns.reset();
      relay.apns.answer(() => ({ ok: false, status: 410, reason: 'Unregistered' }));
      const gone = await post(
        '/v1/events',
        JSON.stringify({ type: 'turn.failed', event_id: 'evt-rej-0002' }),
        gatewayAuth,
      );
      expect(gone.status).toBe(502);
      expect((await relay.store.findInstallation(phone.id))?.active).toBe(false);
    });

    it('APNs unreachable is 502 apns_unreachable', async () => {
      const { gatewayAuth } = await paired(relay);
      relay.apns.answer(() => 'throw');
      const response = await post(
        '/v1/events',
        JSON.stringify({ type: 'turn.failed', event_id: 'evt-thr-0001' }),
        gatewayAuth,
      );
      expect(response.status).toBe(502);
      expect(await response.json()).toEqual({ error: 'apns_unreachable' });
    });

    it('an end-to-end event pushes generic copy, mutable-content and the envelope verbatim', async () => {
      const { gatewayId, gatewayAuth } = await paired(relay);
      const envelope = {
        v: 1,
        kid: 'a'.repeat(32),
        msg: 'evt-e2e-0001',
        iat: Math.floor(relay.clock.now() / 1000),
        tok: '0123456789abcdef',
        z: 0,
        req: '',
        n: 'AAAAAAAAAAAAAAAA',
        ct: 'B'.repeat(40),
      };
      const response = await post(
        '/v1/events',
        JSON.stringify({ type: 'approval.needed', event_id: 'evt-e2e-0001', title: 'plain', e2e: envelope }),
        gatewayAuth,
      );
      expect(response.status).toBe(202);
      const payload = relay.apns.sent[0]?.notification.payload as Record<string, Record<string, unknown>>;
      expect(payload.conduit_e2e).toEqual(envelope);
      expect(payload.aps).toMatchObject({
        alert: { title: 'Approval needed', body: 'Hermes is waiting for your approval.' },
        'mutable-content': 1,
      });
      expect(payload.conduit).toEqual({ type: 'approval.needed', e2e: 1, gateway_id: gatewayId });
      expect(JSON.stringify(payload)).not.toContain('plain');
    });
  });

  describe('decisions', () => {
    const clarify = (eventId: string, requestId: string, questions?: unknown[]) => ({
      type: 'input.needed',
      event_id: eventId,
      decision: { kind: 'clarify', request_id: requestId, question: 'Which one?', choices: ['A', 'B'], questions },
    });

    it('parks a clarify card; the phone answers once; the host polls the answer', async () => {
      const { gatewayId, gatewayAuth, deviceAuth } = await paired(relay);
      const sent = await post('/v1/events', JSON.stringify(clarify('evt-clar-0001', 'req-0001')), gatewayAuth);
      expect(sent.status).toBe(202);
      const payload = relay.apns.sent[0]?.notification.payload as { body: { conduit: Record<string, unknown> } };
      expect(payload.body.conduit.decision).toMatchObject({ kind: 'clarify', request_id: 'req-0001' });
      const poll = () =>
        relay.client.GET('/v1/decisions/{id}', { params: { path: { id: 'req-0001' } }, headers: gatewayAuth });
      expect((await poll()).data).toEqual({ status: 'pending', deliverable: true });
      const answer = (text: string) =>
        relay.client.POST('/v1/decisions/{id}/respond', {
          params: { path: { id: 'req-0001' } },
          headers: deviceAuth,
          body: { answer: text, gateway_id: gatewayId },
        });
      expect((await answer('A')).data).toEqual({ status: 'answered' });
      const late = await answer('B');
      expect(late.response.status).toBe(409);
      expect(late.error).toEqual({ error: 'already_answered' });
      expect((await poll()).data).toEqual({ status: 'answered', answer: 'A' });
      const release = await relay.client.DELETE('/v1/decisions/{id}', {
        params: { path: { id: 'req-0001' } },
        headers: gatewayAuth,
      });
      expect(release.data).toEqual({ status: 'already_completed' });
    });

    it('a batch completes per qid, first answer wins, and unknown qids are 400', async () => {
      const { gatewayAuth, deviceAuth } = await paired(relay);
      const questions = [
        { qid: 'q1', question: 'First?', choices: ['x'] },
        { qid: 'q2', question: 'Second?', choices: ['y'], multi_select: true },
      ];
      await post('/v1/events', JSON.stringify(clarify('evt-batch-001', 'req-batch', questions)), gatewayAuth);
      const answer = (body: { answer: string; question_id?: string }) =>
        relay.client.POST('/v1/decisions/{id}', { params: { path: { id: 'req-batch' } }, headers: deviceAuth, body });
      expect((await answer({ answer: 'x', question_id: 'nope' })).error).toEqual({ error: 'invalid_question_id' });
      expect((await answer({ answer: 'x' })).data).toEqual({ status: 'answered', remaining: ['q2'] });
      expect((await answer({ answer: 'again', question_id: 'q1' })).response.status).toBe(409);
      const poll = await relay.client.GET('/v1/decisions/{id}', {
        params: { path: { id: 'req-batch' } },
        headers: gatewayAuth,
      });
      expect(poll.data).toEqual({ status: 'pending', deliverable: true, remaining: ['q2'], answers: { q1: 'x' } });
      expect((await answer({ answer: 'y', question_id: 'q2' })).data).toEqual({ status: 'answered', remaining: [] });
      const done = await relay.client.GET('/v1/decisions/{id}', {
        params: { path: { id: 'req-batch' } },
        headers: gatewayAuth,
      });
      expect(done.data).toEqual({ status: 'answered', answers: { q1: 'x', q2: 'y' }, remaining: [] });
    });

    it('a released decision polls unknown and a late answer is 410 decision_released', async () => {
      const { gatewayAuth, deviceAuth } = await paired(relay);
      await post('/v1/events', JSON.stringify(clarify('evt-rel-0001', 'req-rel')), gatewayAuth);
      const release = () =>
        relay.client.DELETE('/v1/decisions/{id}', { params: { path: { id: 'req-rel' } }, headers: gatewayAuth });
      expect((await release()).data).toEqual({ status: 'cancelled' });
      expect((await release()).data).toEqual({ status: 'cancelled' });
      const poll = await relay.client.GET('/v1/decisions/{id}', {
        params: { path: { id: 'req-rel' } },
        headers: gatewayAuth,
      });
      expect(poll.data).toEqual({ status: 'unknown' });
      const late = await relay.client.POST('/v1/decisions/{id}/respond', {
        params: { path: { id: 'req-rel' } },
        headers: deviceAuth,
        body: { answer: 'A' },
      });
      expect(late.response.status).toBe(410);
      expect(late.error).toEqual({ error: 'decision_released' });
    });

    it('unknown decisions are 404; an empty answer is 400 invalid_answer; a decision expires after 2 h', async () => {
      const { gatewayAuth, deviceAuth } = await paired(relay);
      const respond = (id: string, answer: string) =>
        relay.client.POST('/v1/decisions/{id}/respond', {
          params: { path: { id } },
          headers: deviceAuth,
          body: { answer },
        });
      expect((await respond('req-missing', 'A')).error).toEqual({ error: 'unknown_decision' });
      await post('/v1/events', JSON.stringify(clarify('evt-ttl-0001', 'req-ttl')), gatewayAuth);
      expect((await respond('req-ttl', '   ')).error).toEqual({ error: 'invalid_answer' });
      relay.clock.advance(2 * 60 * 60 * 1000);
      expect((await respond('req-ttl', 'A')).response.status).toBe(404);
    });

    it('a full installation gets 429 decision_capacity_exceeded without consuming the event id', async () => {
      const { gatewayAuth, deviceAuth, gatewayId } = await paired(relay, { preferences: { input_needed: false } });
      for (let i = 0; i < 32; i += 1) {
        const response = await post(
          '/v1/events',
          JSON.stringify(clarify(`evt-cap-${1000 + i}`, `req-cap-${i}`)),
          gatewayAuth,
        );
        expect(response.status).toBe(202);
        // The event limit is 30/min per installation.
        if (i % 25 === 24) relay.clock.advance(61_000);
      }
      relay.clock.advance(61_000);
      const full = await post('/v1/events', JSON.stringify(clarify('evt-cap-full', 'req-cap-x')), gatewayAuth);
      expect(full.status).toBe(429);
      expect(await full.json()).toEqual({ error: 'decision_capacity_exceeded' });
      await relay.client.POST('/v1/decisions/{id}/respond', {
        params: { path: { id: 'req-cap-0' } },
        headers: deviceAuth,
        body: { answer: 'A', gateway_id: gatewayId },
      });
      const retry = await post('/v1/events', JSON.stringify(clarify('evt-cap-full', 'req-cap-x')), gatewayAuth);
      expect(retry.status).toBe(202);
    });
  });

  describe('calls and rings', () => {
    const call = (eventId: string) => ({
      type: 'call.requested',
      event_id: eventId,
      session_id: 'sess-call-1',
      call: { id: 'call-00000001', kind: 'done', session_ids: ['sess-call-1'], title: 'Job', reason: 'finished' },
    });
    const voip = 'ee'.repeat(32);
    const watchVoip = 'ff'.repeat(32);

    it('rings the phone over VoIP, then the Watch, and settling sends the other device a stop push', async () => {
      const { gatewayAuth } = await paired(relay, { voip_token: voip, watch_voip_token: watchVoip });
      const response = await post('/v1/events', JSON.stringify(call('evt-call-0001')), gatewayAuth);
      expect(await response.json()).toEqual({ accepted: true, delivered: true, rang: true });
      expect(relay.apns.sent.map((s) => [s.deviceToken, s.notification.topic, s.notification.pushType])).toEqual([
        [voip, `${TOPIC}.voip`, 'voip'],
        [watchVoip, `${TOPIC}.watchkitapp.voip`, 'voip'],
      ]);
      const first = relay.apns.sent[0]?.notification;
      expect(first?.expiration).toBe(Math.floor(relay.clock.now() / 1000) + 86_400);
      const ring = (first?.payload.conduit as { ring: { id: string; token: string; url: string } }).ring;
      expect(ring.url).toBe(`${PUBLIC_URL}/v1/rings/${ring.id}/settled`);
      expect((first?.payload.body as { conduit: { call: Record<string, unknown> } }).conduit.call).toEqual({
        id: 'call-00000001',
        kind: 'done',
        session_ids: ['sess-call-1'],
      });
      relay.apns.reset();
      const settle = (by: 'phone' | 'watch', token = ring.token) =>
        relay.client.POST('/v1/rings/{ringId}/settled', {
          params: { path: { ringId: ring.id } },
          headers: { 'x-forwarded-for': nextIp() },
          body: { token, by, outcome: 'answered', start: 'c2VhbGVk' },
        });
      const wrong = await settle('watch', 'A'.repeat(43));
      expect(wrong.response.status).toBe(404);
      const settled = await settle('watch');
      expect(settled.data).toEqual({ settled: true, notified: true });
      expect(relay.apns.sent[0]?.deviceToken).toBe(voip);
      expect(relay.apns.sent[0]?.notification.payload).toEqual({
        aps: {},
        conduit: { ring: { id: ring.id, settled: 'answered', by: 'watch', start: 'c2VhbGVk' } },
      });
      const late = await settle('phone');
      expect(late.response.status).toBe(409);
      expect(late.error).toEqual({ error: 'already_settled', settled: { by: 'watch', outcome: 'answered' } });

      // The phone stores the session; the Watch fetches it with the ring token as bearer.
      const fetchSession = fetch(`${relay.baseUrl}/v1/rings/${ring.id}/session?wait=5`, {
        headers: { authorization: `Bearer ${ring.token}` },
      });
      const stored = await relay.client.PUT('/v1/rings/{ringId}/session', {
        params: { path: { ringId: ring.id } },
        body: { token: ring.token, sealed: 'U0VTU0lPTg' },
      });
      expect(stored.data).toEqual({ stored: true });
      const fetched = await fetchSession;
      expect(fetched.status).toBe(200);
      expect(await fetched.json()).toEqual({ sealed: 'U0VTU0lPTg' });
      const noBearer = await fetch(`${relay.baseUrl}/v1/rings/${ring.id}/session`);
      expect(noBearer.status).toBe(401);
    });

    it('a refused VoIP push falls back to the alert and forgets a gone token', async () => {
      const { phone, gatewayAuth } = await paired(relay, { voip_token: voip });
      relay.apns.answer((_token, n) =>
        n.pushType === 'voip' ? { ok: false, status: 410, reason: 'Unregistered' } : undefined,
      );
      const response = await post('/v1/events', JSON.stringify(call('evt-call-0002')), gatewayAuth);
      expect(await response.json()).toEqual({ accepted: true, delivered: true });
      expect(relay.apns.sent.map((s) => s.notification.pushType)).toEqual(['voip', undefined]);
      expect((relay.apns.sent[1]?.notification.payload.aps as Record<string, unknown>).category).toBe('HERMES_CALL');
      expect((await relay.store.findInstallation(phone.id))?.voipToken).toBeNull();
    });

    it('the Watch token is kept on DeviceTokenNotForTopic, with the operator hint logged', async () => {
      const { phone, gatewayAuth } = await paired(relay, { voip_token: voip, watch_voip_token: watchVoip });
      relay.apns.answer((token) =>
        token === watchVoip ? { ok: false, status: 400, reason: 'DeviceTokenNotForTopic' } : undefined,
      );
      const response = await post('/v1/events', JSON.stringify(call('evt-call-0003')), gatewayAuth);
      expect(await response.json()).toEqual({ accepted: true, delivered: true, rang: true });
      expect((await relay.store.findInstallation(phone.id))?.watchVoipToken).toBe(watchVoip);
      expect(relay.logs.some((line) => line.message === 'apns voip topic refused, check APNS_WATCH_TOPIC')).toBe(true);
    });
  });
});
