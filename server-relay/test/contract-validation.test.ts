/**
 * One source of truth for request bodies: the relay refuses exactly the bodies its contract's body
 * schema refuses, with the code and status the contract gives the first failing check (bodyErrorCodes,
 * invalidBodyCode, the status the code is declared under), and accepts every body the schema accepts.
 * Bodies are random mutations of a valid one (fast-check, fixed seed), so the reference's order of
 * checks is compared wherever two fields fail at once.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  claimPairing,
  createPairing,
  postEvent,
  registerInstallation,
  respondDecision,
  settleRing,
  storeRingSession,
  updateInstallation,
} from '@conduit/contracts/relay/index';
import { iatWithinWindow } from '@conduit/contracts/relay/events';
import type { RouteContract } from '@conduit/contracts/route';
import { bodyErrorCode, declaredStatusOf } from '@conduit/contracts/server';
import {
  deviceToken,
  nextIp,
  paired,
  ROOMY_BUDGETS,
  startRelay,
  testDatabase,
  TOPIC,
  type Relay,
} from './support/harness.js';

let relay: Relay;
let release: () => Promise<void>;
let phone: Awaited<ReturnType<typeof paired>>;
let sequence = 0;

beforeAll(async () => {
  const db = await testDatabase('sqlite');
  release = db.release;
  relay = await startRelay(db.url, { ...ROOMY_BUDGETS, RELAY_CALLS_PER_INSTALLATION_PER_DAY: '100000' });
  phone = await paired(relay);
});

afterAll(async () => {
  await relay.close();
  await release();
});

type Verdict = { accepted: true } | { accepted: false; status: number; code: string };

/** What the contract says of a body, as bindRoute answers it. */
function contractVerdict(route: RouteContract, schema: z.ZodType, body: unknown): Verdict {
  const parsed = schema.safeParse(body);
  if (parsed.success) return { accepted: true };
  const code = bodyErrorCode(route, parsed.error);
  return { accepted: false, status: declaredStatusOf(route, code) ?? 400, code };
}

/** The codes a route's body schema can produce: an accepted body must never be answered with one. */
function bodyCodes(route: RouteContract): string[] {
  const fields = Object.values((route.bodyErrorCodes ?? {}) as Record<string, string>);
  return [...fields, ...(route.invalidBodyCode ? [route.invalidBodyCode] : [])];
}

function bodyOf<R extends RouteContract>(route: R): NonNullable<R['body']> {
  if (!route.body) throw new Error(`${route.operationId} declares no body`);
  return route.body as NonNullable<R['body']>;
}

interface Case {
  route: RouteContract;
  /** The contract's schema with what the relay adds from its configuration and clock (narrowBody). */
  schema: () => z.ZodType;
  valid: () => Record<string, unknown>;
  send: (body: unknown) => Promise<Response>;
  /** Body codes the route also answers from its state after the body (an unknown pairing code). */
  alsoFromState?: string[];
}

const hex = (byte: string) => byte.repeat(32);
const iatNow = () => Math.floor(relay.clock.now() / 1000);
const eventId = () => `evt-contract-${String((sequence += 1)).padStart(6, '0')}`;
const ringId = 'AAAAAAAAAAAAAAAAAAAAAA';
const ringToken = 'B'.repeat(43);

function request(method: string, path: string, headers: Record<string, string> = {}) {
  return (body: unknown) =>
    fetch(`${relay.baseUrl}${path}`, {
      method,
      headers: { 'content-type': 'application/json', 'x-forwarded-for': nextIp(), ...headers },
      body: JSON.stringify(body),
    });
}

const CASES: Record<string, Case> = {
  register: {
    route: registerInstallation,
    // The relay's narrowBody: bundle_id is its APNS_TOPIC.
    schema: () => bodyOf(registerInstallation).extend({ bundle_id: z.literal(TOPIC) }),
    valid: () => ({
      bundle_id: TOPIC,
      device_token: deviceToken(17),
      environment: 'production',
      voip_token: `<${hex('AB')}>`,
      preferences: { show_previews: true },
    }),
    send: request('POST', '/v1/installations'),
  },
  update: {
    route: updateInstallation,
    schema: () => bodyOf(updateInstallation),
    valid: () => ({ device_token: deviceToken(18), watch_voip_token: null, preferences: { enabled: true } }),
    send: (body) => request('PUT', `/v1/installations/${phone.phone.id}`, phone.deviceAuth)(body),
  },
  pairing: {
    route: createPairing,
    schema: () => bodyOf(createPairing),
    valid: () => ({ dashboard_id: 'A1B2C3D4-0000-4000-8000-000000000001' }),
    send: (body) => request('POST', `/v1/installations/${phone.phone.id}/pairings`, phone.deviceAuth)(body),
  },
  claim: {
    route: claimPairing,
    schema: () => bodyOf(claimPairing),
    valid: () => ({ pairing_code: 'ABCDE-FGHJK', gateway_name: 'Host' }),
    send: request('POST', '/v1/pairings/claim'),
    alsoFromState: ['invalid_or_expired_pairing'],
  },
  event: {
    route: postEvent,
    schema: () =>
      bodyOf(postEvent).superRefine((event, check) => {
        // The relay's narrowBody: the envelope's time against its clock.
        if (event.e2e && !iatWithinWindow(event.e2e.iat, relay.clock.now())) {
          check.addIssue({ code: 'custom', path: ['e2e', 'iat'], message: 'window' });
        }
      }),
    valid: () => ({ type: 'response.ready', event_id: eventId(), title: 'T', body: 'B', session_id: 's-1' }),
    send: (body) => request('POST', '/v1/events', phone.gatewayAuth)(body),
  },
  sealedEvent: {
    route: postEvent,
    schema: () => CASES.event!.schema(),
    valid: () => {
      const id = eventId();
      return {
        type: 'input.needed',
        event_id: id,
        e2e: {
          v: 1,
          kid: '0123456789abcdef0123456789abcdef',
          msg: id,
          iat: iatNow(),
          tok: 'fedcba9876543210',
          z: 0,
          req: 'req-contract',
          n: 'AAAAAAAAAAAAAAAA',
          ct: 'C'.repeat(64),
        },
        clarify: { request_id: 'req-contract', qids: ['q1', ' q2 '], card: true },
      };
    },
    send: (body) => request('POST', '/v1/events', phone.gatewayAuth)(body),
  },
  respond: {
    route: respondDecision,
    schema: () => bodyOf(respondDecision),
    valid: () => ({ answer: 'yes', question_id: 'q1', gateway_id: phone.gatewayId }),
    send: (body) => request('POST', '/v1/decisions/req-unknown-1/respond', phone.deviceAuth)(body),
  },
  settle: {
    route: settleRing,
    schema: () => bodyOf(settleRing),
    valid: () => ({ token: ringToken, by: 'watch', outcome: 'answered', start: 'abc' }),
    send: request('POST', `/v1/rings/${ringId}/settled`),
  },
  session: {
    route: storeRingSession,
    schema: () => bodyOf(storeRingSession),
    valid: () => ({ token: ringToken, sealed: 'c2VhbGVk' }),
    send: request('PUT', `/v1/rings/${ringId}/session`),
  },
};

/** Values near and far from what each field takes: other types, edge lengths, the reference's spellings. */
const fieldValue = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.constantFrom(
    null,
    '',
    ' ',
    '\u0000\u0001',
    'production',
    'sandbox',
    TOPIC,
    'phone.changes',
    'location.request',
    'input.needed',
    'background',
    'quiet',
    'evt-short',
    'x'.repeat(8),
    hex('ab'),
    `<${hex('CD')}>`,
    `${hex('ab')} zz`,
    [hex('ab')],
    'A1B2C3D4-0000-4000-8000-000000000001',
    '00000000-0000-0000-0000-000000000000',
    'ABCDE-FGHJK',
    'B'.repeat(43),
    'watch',
    'declined',
    'e2e1.0123456789abcdef0123456789abcdef.AAAAAAAAAAAAAAAA.' + 'C'.repeat(22),
    { v: 1 },
    { request_id: 'req-contract' },
    1,
    1.5,
    true,
  ),
);

const mutation = fc.record({
  set: fc.dictionary(
    fc.constantFrom(
      'type',
      'event_id',
      'mode',
      'e2e',
      'clarify',
      'title',
      'plugin_capabilities',
      'decision',
      'device_token',
      'voip_token',
      'watch_voip_token',
      'location_push_token',
      'bundle_id',
      'environment',
      'preferences',
      'dashboard_id',
      'pairing_code',
      'gateway_name',
      'answer',
      'question_id',
      'gateway_id',
      'token',
      'by',
      'outcome',
      'start',
      'sealed',
    ),
    fieldValue,
    { maxKeys: 3 },
  ),
  drop: fc.array(fc.constantFrom('type', 'event_id', 'device_token', 'answer', 'token', 'pairing_code'), {
    maxLength: 1,
  }),
  /** Mutate a field of the envelope or clarify routing instead of the top level. */
  nested: fc.option(
    fc.record({
      in: fc.constantFrom('e2e', 'clarify'),
      key: fc.constantFrom('v', 'kid', 'msg', 'iat', 'tok', 'z', 'req', 'n', 'ct', 'request_id', 'qids', 'card'),
      value: fieldValue,
    }),
  ),
});

type Mutation = typeof mutation extends fc.Arbitrary<infer M> ? M : never;

function mutate(base: Record<string, unknown>, change: Mutation): Record<string, unknown> {
  const body: Record<string, unknown> = { ...base, ...change.set };
  for (const key of change.drop) delete body[key];
  if (change.nested) {
    const inner = body[change.nested.in];
    if (typeof inner === 'object' && inner !== null && !Array.isArray(inner)) {
      body[change.nested.in] = { ...inner, [change.nested.key]: change.nested.value };
    }
  }
  return body;
}

describe('the relay refuses exactly what the contract refuses', () => {
  it.each(Object.keys(CASES))('%s', async (name) => {
    const kase = CASES[name]!;
    const schema = kase.schema();
    const codes = bodyCodes(kase.route).filter((code) => !kase.alsoFromState?.includes(code));
    // The valid body itself is accepted.
    expect(contractVerdict(kase.route, schema, kase.valid())).toEqual({ accepted: true });
    await fc.assert(
      fc.asyncProperty(mutation, async (change) => {
        // A minute on, so no per-minute window of the relay answers before the body does.
        relay.clock.advance(61_000);
        const body = mutate(kase.valid(), change);
        const verdict = contractVerdict(kase.route, schema, body);
        const response = await kase.send(body);
        const answer = response.status === 204 ? undefined : ((await response.json()) as { error?: string });
        if (verdict.accepted) {
          expect(codes, `${JSON.stringify(body)} → ${response.status} ${JSON.stringify(answer)}`).not.toContain(
            answer?.error,
          );
          expect(response.status).toBeLessThan(500);
        } else {
          expect({ status: response.status, code: answer?.error }, JSON.stringify(body)).toEqual({
            status: verdict.status,
            code: verdict.code,
          });
        }
      }),
      { numRuns: 120, seed: 20261202 },
    );
  });

  it('a body with several failing fields gets the code of the first the reference checks', async () => {
    // Token before topic before environment (API.md §1.1); one request each way round.
    const both = await request('POST', '/v1/installations')({ bundle_id: 'x', device_token: 'zz', environment: 'x' });
    expect(await both.json()).toEqual({ error: 'invalid_device_token' });
    const topicFirst = await request(
      'POST',
      '/v1/installations',
    )({
      bundle_id: 'x',
      device_token: hex('ab'),
      environment: 'x',
    });
    expect(await topicFirst.json()).toEqual({ error: 'invalid_topic' });
    // mode before the envelope on phone.changes; ignored on other types.
    relay.clock.advance(61_000);
    const mode = await request(
      'POST',
      '/v1/events',
      phone.gatewayAuth,
    )({
      type: 'phone.changes',
      event_id: eventId(),
      mode: 'quiet',
      e2e: 'broken',
    });
    expect(await mode.json()).toEqual({ error: 'invalid_mode' });
    const ignored = await request(
      'POST',
      '/v1/events',
      phone.gatewayAuth,
    )({
      type: 'response.ready',
      event_id: eventId(),
      mode: 'quiet',
    });
    expect(ignored.status).toBe(202);
    // A pairing code that is not text is the claim's 404, like an unknown one.
    const claim = await request('POST', '/v1/pairings/claim')({ pairing_code: 12345 });
    expect([claim.status, await claim.json()]).toEqual([404, { error: 'invalid_or_expired_pairing' }]);
  });
});
