/**
 * What the reference relay puts in pushes, checked where Apple would see it: a real relay process
 * (src/main.ts) sends through its HTTP/2 client to the local APNs simulator. The facts were confirmed
 * against the reference with real clients (spec/relay/API.md, last section):
 *
 * - call.requested VoIP pushes (phone and Watch) carry `sent_at` as integer UNIX seconds, in
 *   `body.conduit` and `conduit`, plain and sealed;
 * - the generic alert copy (previews off, or a sealed event) is the reference's, word for word, with
 *   the `\nProfile: p · Session: …last8` context line on plaintext events, also with previews on
 *   when the event has no body.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ApnsSimulator, type SimulatedRequest } from '../../src/apns/simulator.js';
import {
  deviceToken,
  eventId,
  pairHost,
  registerPhone,
  ROOMY_BUDGETS,
  startRelay,
  TOPIC,
  type Host,
  type Relay,
} from '../conformance/relay.js';
import { sealedEnvelope } from '../support/sealed-event.js';
import { providerKeyPair } from './keys.js';

const KEY_ID = 'REFPUSHKEY';
const TEAM_ID = 'REFPUSHTEAM';
const key = providerKeyPair();
const dir = mkdtempSync(join(tmpdir(), 'relay-reference-pushes-'));
let simulator: ApnsSimulator;
let relay: Relay;

beforeAll(async () => {
  simulator = await ApnsSimulator.start({
    publicKey: key.publicPem,
    keyId: KEY_ID,
    teamId: TEAM_ID,
    allowedTopics: [TOPIC, `${TOPIC}.voip`, `${TOPIC}.watchkitapp.voip`],
  });
  relay = await startRelay({
    ...ROOMY_BUDGETS,
    APNS_MODE: '',
    APNS_CAPTURE_PATH: '',
    APNS_KEY_PATH: writeTemp('apns.p8', key.privatePem),
    APNS_KEY_ID: KEY_ID,
    APNS_TEAM_ID: TEAM_ID,
    APNS_ORIGIN: simulator.origin,
    NODE_EXTRA_CA_CERTS: writeTemp('simulator-ca.pem', simulator.ca),
  });
}, 90_000);
afterAll(async () => {
  await relay?.stop();
  await simulator?.close();
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => {
  simulator.requests.length = 0;
});

function writeTemp(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text, { mode: 0o600 });
  return path;
}

const CALL = { id: 'call-00000001', kind: 'done', session_ids: ['session-0123456789'] };

interface VoipPayload {
  aps: Record<string, unknown>;
  body: { conduit: Record<string, unknown> };
  conduit: Record<string, unknown>;
  conduit_e2e?: unknown;
}

async function postEvent(host: Host, body: Record<string, unknown>) {
  const reply = await relay.call('POST', '/v1/events', { auth: host.auth, body });
  expect(reply.status).toBe(202);
  return reply.json;
}

/** A phone that rings on itself and on its Watch, paired with one host. */
async function ringingPhone() {
  const voip = deviceToken();
  const watch = deviceToken();
  const phone = await registerPhone(relay, { voip_token: voip, watch_voip_token: watch });
  return { voip, watch, host: await pairHost(relay, phone) };
}

/**
 * The two VoIP pushes of one call (phone, then Watch) as APNs received them, each checked for
 * `sent_at`: one integer number of seconds in both copies, taken while the event was handled, and
 * the same clock as the apns-expiration header (a day later).
 */
function expectSentAtInSeconds(requests: SimulatedRequest[], startedMs: number, endedMs: number): number {
  const sentAts = requests.map((request) => {
    const payload = request.payload as VoipPayload;
    const sentAt = payload.conduit.sent_at;
    expect(Number.isInteger(sentAt)).toBe(true);
    expect(payload.body.conduit.sent_at).toBe(sentAt);
    expect(sentAt).toBeGreaterThanOrEqual(Math.floor(startedMs / 1000));
    expect(sentAt).toBeLessThanOrEqual(Math.ceil(endedMs / 1000));
    expect(Number(request.headers['apns-expiration'])).toBe((sentAt as number) + 86_400);
    return sentAt as number;
  });
  // Phone and Watch carry the very same payload.
  expect(new Set(sentAts).size).toBe(1);
  return sentAts[0] as number;
}

describe('call.requested VoIP pushes carry sent_at in integer UNIX seconds', () => {
  it('plain: phone and Watch, in body.conduit and conduit', async () => {
    const { voip, watch, host } = await ringingPhone();
    const started = Date.now();
    const reply = await postEvent(host, {
      type: 'call.requested',
      event_id: eventId('call'),
      session_id: 'session-0123456789',
      profile: 'work',
      call: CALL,
    });
    const ended = Date.now();
    expect(reply).toEqual({ accepted: true, delivered: true, rang: true });
    const voips = simulator.requests.filter((request) => request.headers['apns-push-type'] === 'voip');
    expect(voips.map((request) => [request.deviceToken, request.headers['apns-topic']])).toEqual([
      [voip, `${TOPIC}.voip`],
      [watch, `${TOPIC}.watchkitapp.voip`],
    ]);
    const sentAt = expectSentAtInSeconds(voips, started, ended);
    const payload = voips[0]?.payload as VoipPayload;
    expect(payload.conduit).toEqual({
      type: 'call.requested',
      session_id: 'session-0123456789',
      profile: 'work',
      gateway_id: host.gatewayId,
      sent_at: sentAt,
      ring: payload.conduit.ring,
    });
  });

  it('sealed: phone and Watch, beside the envelope', async () => {
    const { host } = await ringingPhone();
    const id = eventId('sealed-call');
    const started = Date.now();
    const reply = await postEvent(host, { type: 'call.requested', event_id: id, e2e: sealedEnvelope(id) });
    const ended = Date.now();
    expect(reply).toEqual({ accepted: true, delivered: true, rang: true });
    const voips = simulator.requests.filter((request) => request.headers['apns-push-type'] === 'voip');
    expect(voips).toHaveLength(2);
    const sentAt = expectSentAtInSeconds(voips, started, ended);
    const payload = voips[0]?.payload as VoipPayload;
    expect(payload.conduit).toEqual({
      type: 'call.requested',
      e2e: 1,
      gateway_id: host.gatewayId,
      sent_at: sentAt,
      ring: payload.conduit.ring,
    });
    expect(payload.conduit_e2e).toEqual(sealedEnvelope(id));
  });
});

/** The reference's generic bodies (API.md, facts confirmed with real clients). */
const REFERENCE_COPY: [string, string, string][] = [
  ['input.needed', 'Input needed', 'Hermes needs your response before it can continue.'],
  ['response.ready', 'Response ready', 'Hermes has finished responding.'],
  ['turn.failed', 'Turn failed', 'A Hermes turn could not be completed.'],
  ['background_task.finished', 'Background task finished', 'A delegated task has finished.'],
];

async function alertOf(host: Host, body: Record<string, unknown>): Promise<Record<string, unknown>> {
  expect(await postEvent(host, body)).toEqual({ accepted: true, delivered: true });
  const alerts = simulator.requests.filter((request) => request.headers['apns-push-type'] === 'alert');
  expect(alerts).toHaveLength(1);
  simulator.requests.length = 0;
  return (alerts[0]?.payload as { aps: { alert: Record<string, unknown> } }).aps.alert;
}

describe('generic alert copy is the reference’s', () => {
  it.each(REFERENCE_COPY)(
    '%s with previews off: the reference’s words and the context line',
    async (type, title, body) => {
      const host = await pairHost(relay, await registerPhone(relay));
      const alert = await alertOf(host, {
        type,
        event_id: eventId(),
        title: 'Private title',
        body: 'Private body',
        profile: 'work',
        session_id: 'session-0123456789',
      });
      expect(alert).toEqual({ title, body: `${body}\nProfile: work · Session: …23456789` });
    },
  );

  it.each(REFERENCE_COPY)('%s sealed: the reference’s words alone', async (type, title, body) => {
    const host = await pairHost(relay, await registerPhone(relay));
    const id = eventId();
    expect(await alertOf(host, { type, event_id: id, e2e: sealedEnvelope(id) })).toEqual({ title, body });
  });

  it.each(REFERENCE_COPY)(
    '%s with previews on and no event body: the reference’s words with the context line',
    async (type, _title, body) => {
      const host = await pairHost(relay, await registerPhone(relay, { preferences: { show_previews: true } }));
      const alert = await alertOf(host, {
        type,
        event_id: eventId(),
        title: 'Release prep',
        profile: 'work',
        session_id: 'session-0123456789',
      });
      expect(alert).toEqual({ title: 'Release prep', body: `${body}\nProfile: work · Session: …23456789` });
    },
  );

  it('with previews on, an event body is shown as it is; a short session id is shown whole', async () => {
    const host = await pairHost(relay, await registerPhone(relay, { preferences: { show_previews: true } }));
    expect(
      await alertOf(host, { type: 'response.ready', event_id: eventId(), body: 'Done.', session_id: 'abc123' }),
    ).toEqual({ title: 'Response ready', body: 'Done.' });
    expect(await alertOf(host, { type: 'turn.failed', event_id: eventId(), session_id: 'abc123' })).toEqual({
      title: 'Turn failed',
      body: 'A Hermes turn could not be completed.\nSession: abc123',
    });
  });
});
