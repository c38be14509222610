import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { b64, sealedCall, startWatchRelay, watchKey, type WatchTestRelay } from './harness.js';

/**
 * Random and mutated bodies at every Watch route: never a 5xx, always a JSON `{error}` for a refusal,
 * and a refused Watch call consumes nothing of its grant.
 */
let relay: WatchTestRelay;
let gid: string;
let watchAuthorization: string;
let gatewayAuthorization: string;
let deviceAuthorization: string;
/** Another host: grants it opens must not replace the shared grant (4 per gateway). */
let grantingAuthorization: string;

beforeAll(async () => {
  relay = await startWatchRelay({ callWaitMs: 100 }, undefined, { unlimited: true });
  const phone = relay.device();
  const gateway = relay.gateway(phone.installationId);
  const key = watchKey();
  const { data } = await relay.client.POST('/v1/watch-tools/grants', {
    headers: { authorization: gateway.authorization },
    body: { watch_key_sha256: key.sha256, ttl_s: 1800, max_calls: 1 },
  });
  gid = data!.grant_id;
  watchAuthorization = key.authorization;
  gatewayAuthorization = gateway.authorization;
  deviceAuthorization = phone.authorization;
  grantingAuthorization = relay.gateway().authorization;
});
afterAll(() => relay.close());

const validBodies = {
  grant: () => ({ watch_key_sha256: watchKey().sha256, ttl_s: 600, max_calls: 10 }),
  call: () => sealedCall(),
  result: () => ({ n: b64(12), ct: b64(40) }),
  activity: () => ({ push_token: 'ab'.repeat(32), session_ids: ['s'] }),
  progress: () => ({ session_id: 's', phase: 'tool', tool_count: 1, started_at: 1_800_000_000 }),
};

/** A valid body with one field replaced by an arbitrary JSON value, or dropped, or an extra one added. */
function mutated(valid: () => Record<string, unknown>): fc.Arbitrary<unknown> {
  const keys = Object.keys(valid());
  return fc.oneof(
    fc.tuple(fc.constantFrom(...keys), fc.jsonValue()).map(([k, v]) => ({ ...valid(), [k]: v })),
    fc.constantFrom(...keys).map((k) => {
      const body = valid();
      delete body[k];
      return body;
    }),
    fc.tuple(fc.string(), fc.jsonValue()).map(([k, v]) => ({ ...valid(), [k]: v })),
  );
}

const rawBody = (valid: () => Record<string, unknown>): fc.Arbitrary<string> =>
  fc.oneof(
    fc.jsonValue().map((v) => JSON.stringify(v) ?? 'null'),
    mutated(valid).map((v) => JSON.stringify(v)),
    fc.string(),
  );

async function send(method: string, path: string, authorization: string, body: string) {
  const response = await fetch(`${relay.baseUrl}${path}`, {
    method,
    headers: { authorization, 'content-type': 'application/json' },
    body,
  });
  const text = await response.text();
  return { status: response.status, text };
}

describe('bad input at the Watch routes', () => {
  const routes = [
    { name: 'grant', method: 'POST', path: () => '/v1/watch-tools/grants', auth: () => grantingAuthorization },
    { name: 'call', method: 'POST', path: () => `/v1/watch-tools/grants/${gid}/calls`, auth: () => watchAuthorization },
    {
      name: 'result',
      method: 'POST',
      path: () => `/v1/watch-tools/grants/${gid}/results/${'R'.repeat(22)}`,
      auth: () => gatewayAuthorization,
    },
    { name: 'activity', method: 'PUT', path: () => '/v1/live-activities', auth: () => deviceAuthorization },
    { name: 'progress', method: 'POST', path: () => '/v1/live-activities/progress', auth: () => gatewayAuthorization },
  ] as const;

  for (const route of routes) {
    it(`${route.method} ${route.name}: no 5xx, refusals are {error}`, async () => {
      await fc.assert(
        fc.asyncProperty(rawBody(validBodies[route.name]), async (body) => {
          // A call that passes validation is held for 100 ms (WATCH_CALL_WAIT_MS) and times out.
          const { status, text } = await send(route.method, route.path(), route.auth(), body);
          if (status >= 400) expect(JSON.parse(text)).toEqual(expect.objectContaining({ error: expect.any(String) }));
          // A valid call with no host answering is held and times out: the declared 504 (or 503 once the host is unseen).
          if (status >= 500)
            expect([JSON.parse(text), route.name]).toEqual([
              { error: status === 504 ? 'host_timeout' : 'host_offline' },
              'call',
            ]);
        }),
        { numRuns: route.name === 'call' ? 60 : 120 },
      );
    });
  }

  it('refused calls consumed nothing: the grant still has its one call', async () => {
    // Only bodies the schema refuses; one accepted call would use the grant's single call.
    await fc.assert(
      fc.asyncProperty(
        rawBody(validBodies.call).filter((b) => !/"rid":"[A-Za-z0-9_-]{22}"/.test(b)),
        async (body) => {
          const { status } = await send('POST', `/v1/watch-tools/grants/${gid}/calls`, watchAuthorization, body);
          expect([400, 413]).toContain(status);
        },
      ),
      { numRuns: 80 },
    );
    const fresh = await startWatchRelay({ callWaitMs: 100 }, undefined, { unlimited: true });
    try {
      const gateway = fresh.gateway();
      const key = watchKey();
      const { data } = await fresh.client.POST('/v1/watch-tools/grants', {
        headers: { authorization: gateway.authorization },
        body: { watch_key_sha256: key.sha256, ttl_s: 1800, max_calls: 1 },
      });
      for (let i = 0; i < 20; i += 1) {
        const bad = await fresh.client.POST('/v1/watch-tools/grants/{gid}/calls', {
          params: { path: { gid: data!.grant_id } },
          headers: { authorization: key.authorization },
          body: { ...sealedCall(), ct: 'short' },
        });
        expect(bad.response.status).toBe(400);
      }
      const good = await fresh.client.POST('/v1/watch-tools/grants/{gid}/calls', {
        params: { path: { gid: data!.grant_id } },
        headers: { authorization: key.authorization },
        body: sealedCall(),
      });
      // Held and timed out (no host answered): it was accepted, not refused as grant_exhausted.
      expect(good.response.status).toBe(504);
    } finally {
      await fresh.close();
    }
  });
});
