/**
 * APNS_CAPTURE_PATH lines as the reference relay writes them (its APNS_MODE=accept seam appends
 * `JSON.stringify({deviceToken, notification})` for each push it delivered): client developers diff
 * these files in their own tests, so the bytes are pinned here, built in the reference's key order —
 * an alert's notification is `{collapseId, payload, threadId}` with no pushType, a VoIP push's is
 * `{payload, pushType, topic, expiration}` — and a push APNs refused is not written at all.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sealedEnvelope } from '../support/sealed-event.js';
import { deviceToken, eventId, pairHost, registerPhone, startRelay, TOPIC, type Relay } from './relay.js';

/** The reference's scopeToken: sha256(gatewayId + ':' + seed), first 16 hex digits. */
const scope = (gatewayId: string, seed: string) =>
  createHash('sha256').update(`${gatewayId}:${seed}`).digest('hex').slice(0, 16);

/** The raw lines of a relay's capture file. */
function rawLines(relay: Relay): string[] {
  const file = path.join(relay.dir, 'apns.jsonl');
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').slice(0, -1) : [];
}

const SESSION = 'session-0123456789';
const CALL = { id: 'call-00000001', kind: 'done', session_ids: [SESSION] };

describe('capture lines of a relay that delivers', () => {
  let relay: Relay;
  beforeAll(async () => {
    relay = await startRelay();
  }, 90_000);
  afterAll(() => relay?.stop());

  it('a plain alert: {collapseId, payload, threadId}, no pushType, byte for byte', async () => {
    const phone = await registerPhone(relay);
    const host = await pairHost(relay, phone);
    const before = rawLines(relay).length;
    const reply = await relay.call('POST', '/v1/events', {
      auth: host.auth,
      body: { type: 'response.ready', event_id: eventId(), profile: 'work', session_id: SESSION, body: 'hidden' },
    });
    expect(reply.status).toBe(202);
    const thread = scope(host.gatewayId, SESSION);
    const routing = { type: 'response.ready', session_id: SESSION, profile: 'work', gateway_id: host.gatewayId };
    const expected = JSON.stringify({
      deviceToken: phone.token,
      notification: {
        collapseId: `response.ready:${thread}`,
        payload: {
          aps: {
            alert: {
              title: 'Response ready',
              body: 'Hermes has finished responding.\nProfile: work · Session: …23456789',
            },
            sound: 'default',
            'thread-id': thread,
          },
          body: { conduit: routing },
          conduit: routing,
        },
        threadId: thread,
      },
    });
    expect(rawLines(relay).slice(before)).toEqual([expected]);
  });

  it('a sealed alert: the envelope after aps, mutable-content before thread-id, byte for byte', async () => {
    const phone = await registerPhone(relay);
    const host = await pairHost(relay, phone);
    const before = rawLines(relay).length;
    const id = eventId();
    const e2e = sealedEnvelope(id);
    const reply = await relay.call('POST', '/v1/events', {
      auth: host.auth,
      body: { type: 'input.needed', event_id: id, e2e },
    });
    expect(reply.status).toBe(202);
    const thread = scope(host.gatewayId, e2e.tok);
    const routing = { type: 'input.needed', e2e: 1, gateway_id: host.gatewayId };
    const expected = JSON.stringify({
      deviceToken: phone.token,
      notification: {
        collapseId: `input.needed:${thread}`,
        payload: {
          aps: {
            alert: { title: 'Input needed', body: 'Hermes needs your response before it can continue.' },
            sound: 'default',
            'mutable-content': 1,
            'thread-id': thread,
          },
          conduit_e2e: e2e,
          body: { conduit: routing },
          conduit: routing,
        },
        threadId: thread,
      },
    });
    expect(rawLines(relay).slice(before)).toEqual([expected]);
  });

  it('a call ringing the phone: {payload, pushType, topic, expiration}, sent_at in seconds, byte for byte', async () => {
    const voip = deviceToken();
    const phone = await registerPhone(relay, { voip_token: voip });
    const host = await pairHost(relay, phone);
    const before = rawLines(relay).length;
    const reply = await relay.call('POST', '/v1/events', {
      auth: host.auth,
      body: { type: 'call.requested', event_id: eventId(), profile: 'work', session_id: SESSION, call: CALL },
    });
    expect(reply.json).toEqual({ accepted: true, delivered: true, rang: true });
    const [line] = rawLines(relay).slice(before);
    // The one value the test cannot know in advance; everything else is pinned around it.
    const sentAt = (JSON.parse(line ?? '{}') as { notification: { payload: { conduit: { sent_at: number } } } })
      .notification.payload.conduit.sent_at;
    expect(Number.isInteger(sentAt)).toBe(true);
    const routing = { type: 'call.requested', session_id: SESSION, profile: 'work', gateway_id: host.gatewayId };
    const expected = JSON.stringify({
      deviceToken: voip,
      notification: {
        payload: {
          aps: {},
          body: { conduit: { ...routing, call: CALL, sent_at: sentAt } },
          conduit: { ...routing, sent_at: sentAt },
        },
        pushType: 'voip',
        topic: `${TOPIC}.voip`,
        expiration: sentAt + 86_400,
      },
    });
    expect(rawLines(relay).slice(before)).toEqual([expected]);
  });
});

describe('a push APNs refused is not written', () => {
  it('a VoIP push refused (APNS_VOIP_FAILURE): only the alert it fell back to is written', async () => {
    const relay = await startRelay({ APNS_VOIP_FAILURE: 'Unregistered' });
    try {
      const phone = await registerPhone(relay, { voip_token: deviceToken() });
      const host = await pairHost(relay, phone);
      const reply = await relay.call('POST', '/v1/events', {
        auth: host.auth,
        body: { type: 'call.requested', event_id: eventId(), session_id: SESSION, call: CALL },
      });
      expect(reply.json).toEqual({ accepted: true, delivered: true });
      const lines = rawLines(relay).map((line) => JSON.parse(line) as { deviceToken: string; notification: object });
      expect(lines).toHaveLength(1);
      expect(lines[0]?.deviceToken).toBe(phone.token);
      expect(lines[0]?.notification).not.toHaveProperty('pushType');
      expect(lines[0]?.notification).toMatchObject({ payload: { aps: { category: 'HERMES_CALL' } } });
    } finally {
      await relay.stop();
    }
  });

  it('APNS_MODE=reject: the event is 502 apns_rejected and the capture file holds nothing', async () => {
    const relay = await startRelay({ APNS_MODE: 'reject' });
    try {
      const host = await pairHost(relay, await registerPhone(relay));
      const reply = await relay.call('POST', '/v1/events', {
        auth: host.auth,
        body: { type: 'response.ready', event_id: eventId() },
      });
      expect(reply.status).toBe(502);
      expect(reply.json).toEqual({ error: 'apns_rejected', reason: 'InvalidProviderToken', status: 403 });
      expect(rawLines(relay)).toEqual([]);
    } finally {
      await relay.stop();
    }
  });
});
