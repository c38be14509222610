/**
 * APNs failures that need their own relay process: APNS_VOIP_FAILURE (the phone's PushKit token refused as
 * Unregistered) with APNs otherwise accepting.
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
  type Relay,
} from './relay.js';
import { jsonLines, waitForLine } from '../support/log-lines.js';

let relay: Relay;
let watchRefused: Relay;

beforeAll(async () => {
  [relay, watchRefused] = await Promise.all([
    startRelay({ ...ROOMY_BUDGETS, APNS_VOIP_FAILURE: 'Unregistered', APNS_VOIP_FAILURE_TOPIC: `${TOPIC}.voip` }),
    startRelay({
      ...ROOMY_BUDGETS,
      APNS_VOIP_FAILURE: 'TopicDisallowed',
      APNS_VOIP_FAILURE_TOPIC: `${TOPIC}.watchkitapp.voip`,
    }),
  ]);
});
afterAll(() => Promise.all([relay.stop(), watchRefused.stop()]));

describe('VoIP failure', () => {
  it('a phone PushKit token refused as Unregistered is forgotten, the Watch is not rung, and the alert is sent', async () => {
    const watch = deviceToken();
    const phone = await registerPhone(relay, { voip_token: deviceToken(), watch_voip_token: watch });
    const host = await pairHost(relay, phone);
    const call = { id: 'call-fail-0001', kind: 'done', session_ids: ['s'] };
    const before = relay.captures().length;
    const reply = await relay.call('POST', '/v1/events', {
      auth: host.auth,
      body: { type: 'call.requested', event_id: eventId(), call },
    });
    expect(reply.status).toBe(202);
    expect(reply.json).toEqual({ accepted: true, delivered: true });
    const pushes = relay.captures().slice(before);
    expect(pushes.map((push) => push.deviceToken)).not.toContain(watch);
    const alert = pushes.find((push) => push.deviceToken === phone.token);
    expect((alert?.notification.payload.aps as Record<string, unknown>).category).toBe('HERMES_CALL');
    const state = await relay.call('PUT', `/v1/installations/${phone.id}`, { auth: phone.auth, body: {} });
    expect((state.json as { installation: { voip: boolean; watch_voip: boolean } }).installation).toMatchObject({
      voip: false,
      watch_voip: true,
    });
    // Without a phone PushKit token the next call goes straight to the alert.
    const next = await relay.call('POST', '/v1/events', {
      auth: host.auth,
      body: { type: 'call.requested', event_id: eventId(), call },
    });
    expect(next.json).toEqual({ accepted: true, delivered: true });
  });
});

describe('stop push to a Watch whose topic APNs refuses', () => {
  it('settle answers notified:true: the Watch has a PushKit token, so a stop push went to it (the seed)', async () => {
    const watch = deviceToken();
    const phone = await registerPhone(watchRefused, { voip_token: deviceToken(), watch_voip_token: watch });
    const host = await pairHost(watchRefused, phone);
    const before = watchRefused.captures().length;
    const rang = await watchRefused.call('POST', '/v1/events', {
      auth: host.auth,
      body: {
        type: 'call.requested',
        event_id: eventId(),
        call: { id: 'call-stop-0001', kind: 'done', session_ids: ['s'] },
      },
    });
    expect(rang.json).toEqual({ accepted: true, delivered: true, rang: true });
    const ringPush = watchRefused.captures().slice(before)[0];
    const ticket = (ringPush?.notification.payload.conduit as { ring: { id: string; token: string } }).ring;
    const capturedBefore = watchRefused.captures().length;
    const logFrom = watchRefused.output().length;
    const settled = await watchRefused.call('POST', `/v1/rings/${ticket.id}/settled`, {
      body: { token: ticket.token, by: 'phone', outcome: 'answered' },
    });
    expect(settled.status).toBe(200);
    expect(settled.json).toEqual({ settled: true, notified: true });
    // The stop push was attempted on the Watch VoIP topic and refused there: logged as the reference
    // logs it, and (like every refused push) not written to the capture file.
    await waitForLine(watchRefused, (line) => line.message === 'apns key not allowed for this topic', logFrom);
    expect(jsonLines(watchRefused, logFrom)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          level: 'warn',
          message: 'apns voip send refused',
          device: 'watch',
          status: 400,
          reason: 'TopicDisallowed',
        }),
        expect.objectContaining({ message: 'apns key not allowed for this topic', topic: `${TOPIC}.watchkitapp.voip` }),
      ]),
    );
    expect(watchRefused.captures()).toHaveLength(capturedBefore);
    expect(watchRefused.captures().map((push) => push.deviceToken)).not.toContain(watch);
  });
});
