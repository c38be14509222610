/**
 * Property: whatever body, header or id a client sends, the relay answers without a 5xx, and a
 * rejected request (4xx) leaves the store exactly as it was.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nextIp, paired, ROOMY_BUDGETS, startRelay, testDatabase, TOPIC, type Relay } from './support/harness.js';
import { sealedEnvelope } from './support/sealed-event.js';

let relay: Relay;
let release: () => Promise<void>;
let phone: Awaited<ReturnType<typeof paired>>;
let ring: { id: string; token: string };

/**
 * Every persistent row, in a stable order, except the gateways' deferred activity columns: those are
 * written by the 5 s flush timer of earlier accepted events, whenever it fires.
 */
async function snapshot(): Promise<string> {
  const db = relay.store.db;
  const [installations, gateways, pairings, decisions] = await Promise.all([
    db.installation.findMany({ orderBy: { id: 'asc' } }),
    db.gateway.findMany({
      orderBy: [{ installationId: 'asc' }, { id: 'asc' }],
      omit: { lastEventAt: true, pluginVersion: true, pluginCapabilities: true },
    }),
    db.pairing.findMany({ orderBy: { codeHash: 'asc' } }),
    db.decision.findMany({ orderBy: { key: 'asc' } }),
  ]);
  return JSON.stringify({ installations, gateways, pairings, decisions });
}

beforeAll(async () => {
  const db = await testDatabase('sqlite');
  release = db.release;
  relay = await startRelay(db.url, { ...ROOMY_BUDGETS, RELAY_CALLS_PER_INSTALLATION_PER_DAY: '100000' });
  phone = await paired(relay, {
    voip_token: 'ee'.repeat(32),
    watch_voip_token: 'ff'.repeat(32),
    location_push_token: 'dd'.repeat(32),
  });
  await relay.client.POST('/v1/events', {
    headers: phone.gatewayAuth,
    body: {
      type: 'input.needed',
      event_id: 'evt-prop-clarify',
      decision: { kind: 'clarify', request_id: 'req-prop', question: 'Q?', choices: ['a'] },
    },
  });
  await relay.client.POST('/v1/events', {
    headers: phone.gatewayAuth,
    body: {
      type: 'call.requested',
      event_id: 'evt-prop-call',
      call: { id: 'call-prop-0001', kind: 'done', session_ids: ['s1'] },
    },
  });
  const pushed = relay.apns.sent.find((sent) => sent.notification.pushType === 'voip');
  ring = (pushed?.notification.payload.conduit as { ring: { id: string; token: string } }).ring;
});
afterAll(async () => {
  await relay?.close();
  await release?.();
});

interface Target {
  method: string;
  path: () => string;
  valid: Record<string, unknown>;
}

const targets = (): Target[] => [
  {
    method: 'POST',
    path: () => '/v1/installations',
    valid: { bundle_id: TOPIC, device_token: 'ab'.repeat(32), environment: 'production' },
  },
  { method: 'PUT', path: () => `/v1/installations/${phone.phone.id}`, valid: { preferences: { show_previews: true } } },
  { method: 'DELETE', path: () => `/v1/installations/${phone.phone.id}`, valid: {} },
  { method: 'POST', path: () => `/v1/installations/${phone.phone.id}/pairings`, valid: {} },
  { method: 'POST', path: () => '/v1/pairings/claim', valid: { pairing_code: 'ABCDE-FGHJK' } },
  { method: 'POST', path: () => '/v1/events', valid: { type: 'response.ready', event_id: 'evt-prop-valid' } },
  {
    method: 'POST',
    path: () => '/v1/events',
    valid: { type: 'phone.changes', event_id: 'evt-prop-changes', mode: 'background' },
  },
  {
    method: 'POST',
    path: () => '/v1/events',
    valid: { type: 'location.request', event_id: 'evt-prop-locate', e2e: sealedEnvelope('evt-prop-locate') },
  },
  { method: 'POST', path: () => '/v1/decisions/req-prop/respond', valid: { answer: 'a' } },
  { method: 'POST', path: () => '/v1/decisions/req-prop', valid: { answer: 'a' } },
  { method: 'GET', path: () => '/v1/decisions/req-prop', valid: {} },
  { method: 'DELETE', path: () => '/v1/decisions/req-prop', valid: {} },
  { method: 'DELETE', path: () => '/v1/gateways/current', valid: {} },
  { method: 'GET', path: () => '/v1/meta', valid: {} },
  {
    method: 'POST',
    path: () => `/v1/rings/${ring.id}/settled`,
    valid: { token: ring.token, by: 'phone', outcome: 'declined' },
  },
  { method: 'PUT', path: () => `/v1/rings/${ring.id}/session`, valid: { token: ring.token, sealed: 'abc' } },
];

/** A valid body with one field replaced, dropped or added; or something else entirely. */
const bodyFor = (valid: Record<string, unknown>) =>
  fc.oneof(
    fc.constantFrom(...Object.keys(valid).concat(['extra'])).chain((key) =>
      fc.oneof(
        fc.jsonValue().map((value) => JSON.stringify({ ...valid, [key]: value })),
        fc.constant(JSON.stringify(Object.fromEntries(Object.entries(valid).filter(([k]) => k !== key)))),
      ),
    ),
    fc.jsonValue().map((value) => JSON.stringify(value)),
    fc.string({ maxLength: 200 }),
    fc.constant('x'.repeat(40_000)),
    fc.constant(''),
  );

const authFor = () =>
  fc.constantFrom<Record<string, string>>(
    {},
    phone.deviceAuth,
    phone.gatewayAuth,
    { authorization: 'Bearer garbage' },
    { authorization: `Bearer ${phone.phone.id}.${'A'.repeat(43)}` },
    { authorization: `Bearer ${ring.token}` },
  );

describe('random and mutated requests at every route', () => {
  it('never answer 5xx, and a rejected request changes nothing stored', async () => {
    const routes = targets();
    await fc.assert(
      fc.asyncProperty(
        fc
          .integer({ min: 0, max: routes.length - 1 })
          .chain((index) => fc.tuple(fc.constant(index), bodyFor(routes[index]?.valid ?? {}), authFor(), fc.boolean())),
        async ([index, body, auth, garbleId]) => {
          const route = routes[index];
          if (!route) return;
          // Keep the paired phone usable: its own DELETE routes run only with a wrong credential.
          const destructive = route.method === 'DELETE' && !route.path().includes('decisions');
          const headers: Record<string, string> = destructive ? { authorization: 'Bearer garbage' } : auth;
          const path = garbleId ? route.path().replace(/[0-9a-f]{8}-/, 'zz') : route.path();
          const before = await snapshot();
          const response = await fetch(`${relay.baseUrl}${path}`, {
            method: route.method,
            headers: { 'content-type': 'application/json', 'x-forwarded-for': nextIp(), ...headers },
            ...(route.method === 'GET' ? {} : { body }),
          });
          expect(response.status, `${route.method} ${path} ${body.slice(0, 80)}`).toBeLessThan(500);
          await response.arrayBuffer();
          if (response.status >= 400) expect(await snapshot()).toBe(before);
          // Per-installation windows would otherwise make every later request a 429.
          relay.clock.advance(61_000);
        },
      ),
      { numRuns: 250, seed: 20261129 },
    );
  });
});
