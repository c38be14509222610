/**
 * The push types phone.changes and location.request add, on the HTTP/2 wire: a real relay process
 * (src/main.ts, configured only by its environment) sends through its HTTP/2 APNs client to the
 * local APNs simulator, which checks the provider token and every apns-* header as Apple does and
 * only allows this relay's topics. Also: APNs' 410 Unregistered on a phone.changes push deactivates
 * the installation; on a location push it forgets only the location push token; a refusal that is
 * not about the token does neither.
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
  type Relay,
} from '../conformance/relay.js';
import { sealedEnvelope, type EventBody } from '../support/sealed-event.js';
import { providerKeyPair } from './keys.js';

const KEY_ID = 'NEWTYPEKEY';
const TEAM_ID = 'NEWTYPETEAM';
const key = providerKeyPair();
const dir = mkdtempSync(join(tmpdir(), 'relay-new-push-types-'));
let simulator: ApnsSimulator;
let relay: Relay;

beforeAll(async () => {
  simulator = await ApnsSimulator.start({
    publicKey: key.publicPem,
    keyId: KEY_ID,
    teamId: TEAM_ID,
    allowedTopics: [TOPIC, `${TOPIC}.location-query`],
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

/** A phone with a location push token of its own (`locationToken`), paired with one host. */
async function pair() {
  const locationToken = deviceToken();
  const phone = await registerPhone(relay, { location_push_token: locationToken });
  return { phone, host: await pairHost(relay, phone), locationToken };
}

function post(auth: string, body: EventBody) {
  return relay.client.POST('/v1/events', { headers: { authorization: auth }, body });
}

/** A location.request from this host, through the untyped client so 409 and 502 bodies are readable. */
function locate(auth: string) {
  const id = eventId('locate');
  return relay.call('POST', '/v1/events', {
    auth,
    body: { type: 'location.request', event_id: id, e2e: envelope(id) },
  });
}

const envelope = (id: string) => sealedEnvelope(id, { tok: '0011223344556677', z: 1, ct: 'D'.repeat(80) });

/** The apns-expiration header lies `seconds` after `sentAt` (with two minutes for a slow machine). */
function expectExpiresIn(request: SimulatedRequest, sentAt: number, seconds: number): void {
  const expiration = Number(request.headers['apns-expiration']);
  expect(expiration).toBeGreaterThanOrEqual(sentAt + seconds);
  expect(expiration).toBeLessThanOrEqual(sentAt + seconds + 120);
}

function only(requests: SimulatedRequest[]): SimulatedRequest {
  expect(requests).toHaveLength(1);
  return requests[0] as SimulatedRequest;
}

/**
 * Posts one event from a freshly paired host; APNs took exactly one push, for the phone's device
 * token (location pushes: for its location push token).
 */
async function deliveredOnce(make: (id: string) => EventBody) {
  const { phone, host, locationToken } = await pair();
  const sentAt = Math.floor(Date.now() / 1000);
  const body = make(eventId());
  const reply = await post(host.auth, body);
  expect(reply.data).toEqual({ accepted: true, delivered: true });
  const request = only(simulator.requests);
  expect(request.answer).toBe(200);
  expect(request.deviceToken).toBe(body.type === 'location.request' ? locationToken : phone.token);
  return { host, request, sentAt, body };
}

describe('headers of the new push types at APNs', () => {
  it('phone.changes background: apns-push-type background, priority 5, the app topic, a day’s expiration', async () => {
    const { host, request, sentAt } = await deliveredOnce((id) => ({
      type: 'phone.changes',
      event_id: id,
      mode: 'background',
    }));
    expect(request.headers).toMatchObject({
      'apns-push-type': 'background',
      'apns-priority': '5',
      'apns-topic': TOPIC,
    });
    expect(request.headers).not.toHaveProperty('apns-collapse-id');
    expectExpiresIn(request, sentAt, 86_400);
    expect(request.payload).toEqual({
      aps: { 'content-available': 1 },
      conduit: { type: 'phone.changes', mode: 'background', gateway_id: host.gatewayId },
    });
    expect(request.jwtHeader).toEqual({ alg: 'ES256', kid: KEY_ID });
  });

  it('phone.changes alert (sealed): apns-push-type alert, priority 10, a collapse id, the envelope in the body', async () => {
    const { request, body } = await deliveredOnce((id) => ({
      type: 'phone.changes',
      event_id: id,
      mode: 'alert',
      e2e: envelope(id),
    }));
    expect(request.headers).toMatchObject({ 'apns-push-type': 'alert', 'apns-priority': '10', 'apns-topic': TOPIC });
    expect(request.headers['apns-collapse-id']).toMatch(/^phone\.changes:[0-9a-f]{16}$/);
    expect(request.payload).toMatchObject({ aps: { 'mutable-content': 1 }, conduit_e2e: body.e2e });
  });

  it('location.request: apns-push-type location, <topic>.location-query, priority 10, five minutes to live', async () => {
    const { host, request, sentAt, body } = await deliveredOnce((id) => ({
      type: 'location.request',
      event_id: id,
      e2e: envelope(id),
    }));
    expect(request.headers).toMatchObject({
      'apns-push-type': 'location',
      'apns-priority': '10',
      'apns-topic': `${TOPIC}.location-query`,
    });
    expect(request.headers).not.toHaveProperty('apns-collapse-id');
    expectExpiresIn(request, sentAt, 300);
    expect(request.payload).toEqual({
      aps: {},
      conduit: { type: 'location.request', e2e: 1, gateway_id: host.gatewayId },
      conduit_e2e: body.e2e,
    });
  });
});

describe('APNs refusals on the new push types', () => {
  it.each([
    [
      'phone.changes background',
      (id: string) => ({ type: 'phone.changes' as const, event_id: id, mode: 'background' as const }),
    ],
    ['phone.changes alert', (id: string) => ({ type: 'phone.changes' as const, event_id: id, mode: 'alert' as const })],
  ])('410 Unregistered on %s answers 502 apns_rejected and deactivates the installation', async (_name, body) => {
    const { phone, host } = await pair();
    simulator.answerFor(phone.token, { status: 410, reason: 'Unregistered' });
    const reply = await relay.call('POST', '/v1/events', { auth: host.auth, body: body(eventId('gone')) });
    expect(reply.status).toBe(502);
    expect(reply.json).toEqual({ error: 'apns_rejected', reason: 'Unregistered', status: 410 });
    expect(only(simulator.requests).answer).toBe(410);
    // An inactive installation's credentials stop working: the phone must register again.
    const meta = await relay.call('GET', '/v1/meta', { auth: phone.auth });
    expect(meta.status).toBe(401);
    const next = await relay.call('POST', '/v1/events', { auth: host.auth, body: body(eventId('after')) });
    expect(next.status).toBe(401);
    expect(simulator.requests).toHaveLength(1);
  });

  it('a connection APNs drops mid-push is 502 apns_unreachable and leaves the installation active', async () => {
    const { phone, host } = await pair();
    simulator.answerFor(phone.token, 'drop-connection');
    const reply = await relay.call('POST', '/v1/events', {
      auth: host.auth,
      body: { type: 'phone.changes', event_id: eventId('drop'), mode: 'background' },
    });
    expect(reply.status).toBe(502);
    expect(reply.json).toEqual({ error: 'apns_unreachable' });
    expect((await relay.call('GET', '/v1/meta', { auth: phone.auth })).status).toBe(200);
  });

  it('DeviceTokenNotForTopic on a location push is 502 apns_rejected and keeps the installation and its token', async () => {
    const { phone, host, locationToken } = await pair();
    simulator.answerFor(locationToken, { status: 400, reason: 'DeviceTokenNotForTopic' });
    const reply = await locate(host.auth);
    expect(reply.status).toBe(502);
    expect(reply.json).toEqual({ error: 'apns_rejected', reason: 'DeviceTokenNotForTopic', status: 400 });
    expect((await relay.call('GET', '/v1/meta', { auth: phone.auth })).status).toBe(200);
    // Not a gone token: the next location push still goes to it.
    simulator.answerFor(locationToken, { status: 200 });
    expect((await locate(host.auth)).status).toBe(202);
    expect(simulator.requests.map((request) => request.deviceToken)).toEqual([locationToken, locationToken]);
  });

  it.each([
    [410, 'Unregistered'],
    [400, 'BadDeviceToken'],
  ])(
    '%i %s on a location push forgets only the location push token: alerts still reach the device token',
    async (status, reason) => {
      const { phone, host, locationToken } = await pair();
      simulator.answerFor(locationToken, { status, reason });
      const reply = await locate(host.auth);
      expect(reply.status).toBe(502);
      expect(reply.json).toEqual({ error: 'apns_rejected', reason, status });
      expect(only(simulator.requests).deviceToken).toBe(locationToken);
      // The installation stays: its credential works and the device token still takes alerts.
      expect((await relay.call('GET', '/v1/meta', { auth: phone.auth })).status).toBe(200);
      const alert = await post(host.auth, { type: 'phone.changes', event_id: eventId('after'), mode: 'background' });
      expect(alert.data).toEqual({ accepted: true, delivered: true });
      // The forgotten token is never pushed again; the relay says so until the phone sends a new one.
      const next = await locate(host.auth);
      expect(next.status).toBe(409);
      expect(next.json).toEqual({ error: 'location_push_unavailable' });
      expect(simulator.requests.map((request) => request.deviceToken)).toEqual([locationToken, phone.token]);
      const fresh = deviceToken();
      const update = await relay.call('PUT', `/v1/installations/${phone.id}`, {
        auth: phone.auth,
        body: { location_push_token: fresh },
      });
      expect(update.status).toBe(200);
      expect((await locate(host.auth)).status).toBe(202);
      expect(simulator.requests.at(-1)?.deviceToken).toBe(fresh);
    },
  );
});
