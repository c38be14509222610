import { afterEach, describe, expect, it, vi } from 'vitest';
import { b64, sealedCall, startWatchRelay, watchKey, type WatchTestRelay } from './harness.js';

let relay: WatchTestRelay;
afterEach(() => relay.close());

async function openGrant(
  r: WatchTestRelay,
  gateway = r.gateway(),
  body: Partial<{ ttl_s: number; max_calls: number; audio: boolean }> = {},
) {
  const key = watchKey();
  const { data, response } = await r.client.POST('/v1/watch-tools/grants', {
    headers: { authorization: gateway.authorization },
    body: { watch_key_sha256: key.sha256, ttl_s: 600, max_calls: 60, ...body },
  });
  expect(response.status).toBe(201);
  return { gid: data!.grant_id, key, gateway, expiresAt: data!.expires_at };
}

function watchCall(r: WatchTestRelay, gid: string, authorization: string, call = sealedCall(), signal?: AbortSignal) {
  return r.client.POST('/v1/watch-tools/grants/{gid}/calls', {
    params: { path: { gid } },
    headers: { authorization },
    body: call,
    signal,
  });
}

function hostPoll(r: WatchTestRelay, gid: string, authorization: string, waitMs?: string, signal?: AbortSignal) {
  return r.client.GET('/v1/watch-tools/grants/{gid}/calls', {
    params: { path: { gid }, query: waitMs === undefined ? {} : { wait_ms: waitMs } },
    headers: { authorization },
    signal,
  });
}

function hostResult(r: WatchTestRelay, gid: string, rid: string, authorization: string, body: unknown) {
  return r.client.POST('/v1/watch-tools/grants/{gid}/results/{rid}', {
    params: { path: { gid, rid } },
    headers: { authorization },
    body: body as { n: string; ct: string },
  });
}

describe('POST /v1/watch-tools/grants', () => {
  it('opens a grant: 201 {grant_id, expires_at, call_wait_ms, audio}', async () => {
    relay = await startWatchRelay({ callWaitMs: 25_000 });
    const gateway = relay.gateway();
    const { data, response } = await relay.client.POST('/v1/watch-tools/grants', {
      headers: { authorization: gateway.authorization },
      body: { watch_key_sha256: watchKey().sha256, ttl_s: 1800, max_calls: 120 },
    });
    expect(response.status).toBe(201);
    expect(data?.grant_id).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(data).toEqual({
      grant_id: data?.grant_id,
      expires_at: new Date(relay.clock.now + 1_800_000).toISOString(),
      call_wait_ms: 25_000,
      audio: false,
    });
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  });

  it('401 without a valid gateway credential', async () => {
    relay = await startWatchRelay();
    const { response, error } = await relay.client.POST('/v1/watch-tools/grants', {
      headers: { authorization: 'Bearer a.b.c' },
      body: { watch_key_sha256: watchKey().sha256, ttl_s: 600, max_calls: 10 },
    });
    expect(response.status).toBe(401);
    expect(error).toEqual({ error: 'unauthorized' });
  });

  it.each([
    ['a string number', { ttl_s: '600' }],
    ['ttl under 60 s', { ttl_s: 59 }],
    ['ttl over 1800 s', { ttl_s: 1801 }],
    ['fractional ttl', { ttl_s: 600.5 }],
    ['no calls', { max_calls: 0 }],
    ['over 120 calls', { max_calls: 121 }],
    ['upper-case hash', { watch_key_sha256: 'A'.repeat(64) }],
    ['short hash', { watch_key_sha256: 'a'.repeat(63) }],
    ['audio as a string', { audio: 'true' }],
  ])('400 invalid_grant for %s', async (_name, change) => {
    relay = await startWatchRelay();
    const { response, error } = await relay.client.POST('/v1/watch-tools/grants', {
      headers: { authorization: relay.gateway().authorization },
      body: { watch_key_sha256: watchKey().sha256, ttl_s: 600, max_calls: 10, ...change } as never,
    });
    expect(response.status).toBe(400);
    expect(error).toEqual({ error: 'invalid_grant' });
  });

  it('400 invalid_json for a body that is not a JSON object, 413 over 32,768 characters', async () => {
    relay = await startWatchRelay();
    const authorization = relay.gateway().authorization;
    for (const body of ['[1]', '{', 'null']) {
      const response = await fetch(`${relay.baseUrl}/v1/watch-tools/grants`, {
        method: 'POST',
        headers: { authorization, 'content-type': 'application/json' },
        body,
      });
      expect(response.status).toBe(400);
      expect(await response.json()).toEqual({ error: 'invalid_json' });
    }
    const big = await fetch(`${relay.baseUrl}/v1/watch-tools/grants`, {
      method: 'POST',
      headers: { authorization, 'content-type': 'application/json' },
      body: JSON.stringify({ pad: 'x'.repeat(32_800) }),
    });
    expect(big.status).toBe(413);
    expect(await big.json()).toEqual({ error: 'payload_too_large' });
  });

  it('a fifth grant of a gateway closes its oldest as replaced; a held call on it gets 410', async () => {
    relay = await startWatchRelay();
    const gateway = relay.gateway();
    const first = await openGrant(relay, gateway);
    const held = watchCall(relay, first.gid, first.key.authorization);
    for (let i = 0; i < 3; i += 1) await openGrant(relay, gateway);
    await openGrant(relay, gateway);
    const { response, error } = await held;
    expect(response.status).toBe(410);
    expect(error).toEqual({ error: 'grant_closed', reason: 'replaced' });
    const poll = await hostPoll(relay, first.gid, gateway.authorization, '0');
    expect(poll.response.status).toBe(410);
    expect(poll.error).toEqual({ error: 'grant_closed', reason: 'replaced' });
  });

  it('503 watch_grant_capacity at the relay-wide cap; a gateway at its own cap still replaces', async () => {
    relay = await startWatchRelay({ maxGrants: 2, maxGrantsPerGateway: 1 });
    const a = relay.gateway();
    await openGrant(relay, a);
    await openGrant(relay, relay.gateway());
    const { response, error } = await relay.client.POST('/v1/watch-tools/grants', {
      headers: { authorization: relay.gateway().authorization },
      body: { watch_key_sha256: watchKey().sha256, ttl_s: 600, max_calls: 10 },
    });
    expect(response.status).toBe(503);
    expect(error).toEqual({ error: 'watch_grant_capacity' });
    await openGrant(relay, a);
  });

  it('429 rate_limited on the 13th grant of a gateway within a minute (before the body is read)', async () => {
    relay = await startWatchRelay();
    const gateway = relay.gateway();
    for (let i = 0; i < 12; i += 1) await openGrant(relay, gateway);
    const { response, error } = await relay.client.POST('/v1/watch-tools/grants', {
      headers: { authorization: gateway.authorization },
      body: {} as never,
    });
    expect(response.status).toBe(429);
    expect(error).toEqual({ error: 'rate_limited' });
  });
});

describe('Watch calls and the host long poll', () => {
  it('round trip: the held call gets the host’s sealed answer, untouched', async () => {
    relay = await startWatchRelay();
    const { gid, key, gateway } = await openGrant(relay);
    const call = sealedCall();
    const pending = watchCall(relay, gid, key.authorization, call);
    const poll = await hostPoll(relay, gid, gateway.authorization);
    expect(poll.response.status).toBe(200);
    expect(poll.data).toEqual({ calls: [call] });
    const answer = { n: b64(12), ct: b64(3000) };
    const delivered = await hostResult(relay, gid, call.rid, gateway.authorization, answer);
    expect(delivered.response.status).toBe(200);
    expect(delivered.data).toEqual({ status: 'delivered' });
    const { data, response } = await pending;
    expect(response.status).toBe(200);
    expect(data).toEqual(answer);
    const again = await hostResult(relay, gid, call.rid, gateway.authorization, answer);
    expect(again.response.status).toBe(404);
    expect(again.error).toEqual({ error: 'unknown_call' });
  });

  it('a waiting poll answers as soon as a call arrives; queued calls are answered at once', async () => {
    relay = await startWatchRelay();
    const { gid, key, gateway } = await openGrant(relay);
    const poll = hostPoll(relay, gid, gateway.authorization);
    const first = sealedCall();
    void watchCall(relay, gid, key.authorization, first);
    expect((await poll).data).toEqual({ calls: [first] });
    const second = sealedCall();
    void watchCall(relay, gid, key.authorization, second);
    await vi.waitFor(async () => {
      expect((await hostPoll(relay, gid, gateway.authorization, '0')).data).toEqual({ calls: [second] });
    });
  });

  it('504 host_timeout when the host does not answer in WATCH_CALL_WAIT_MS; a late result is 404 unknown_call', async () => {
    relay = await startWatchRelay({ callWaitMs: 150 });
    const { gid, key, gateway } = await openGrant(relay);
    const call = sealedCall();
    const pending = watchCall(relay, gid, key.authorization, call);
    await hostPoll(relay, gid, gateway.authorization);
    const { response, error } = await pending;
    expect(response.status).toBe(504);
    expect(error).toEqual({ error: 'host_timeout' });
    const late = await hostResult(relay, gid, call.rid, gateway.authorization, { n: b64(12), ct: b64(30) });
    expect(late.response.status).toBe(404);
  });

  it('503 host_offline at once when no poll waits and the host is unseen for WATCH_HOST_GONE_MS', async () => {
    relay = await startWatchRelay({ hostGoneMs: 40_000, callWaitMs: 200 });
    const { gid, key, gateway } = await openGrant(relay);
    relay.clock.now += 40_001;
    const { response, error } = await watchCall(relay, gid, key.authorization);
    expect(response.status).toBe(503);
    expect(error).toEqual({ error: 'host_offline' });
    // A poll arriving marks the host seen again.
    await hostPoll(relay, gid, gateway.authorization, '0');
    relay.clock.now += 39_000;
    expect((await watchCall(relay, gid, key.authorization)).response.status).toBe(504);
  });

  it('a waiting poll keeps the host online however long ago it was seen', async () => {
    relay = await startWatchRelay({ hostGoneMs: 1_000 });
    const { gid, key, gateway } = await openGrant(relay);
    const poll = hostPoll(relay, gid, gateway.authorization);
    await vi.waitFor(() => expect(relay.hits).toContain(`watch-poll:${gid}`));
    relay.clock.now += 60_000;
    const call = sealedCall();
    const pending = watchCall(relay, gid, key.authorization, call);
    expect((await poll).data).toEqual({ calls: [call] });
    await hostResult(relay, gid, call.rid, gateway.authorization, { n: b64(12), ct: b64(30) });
    expect((await pending).response.status).toBe(200);
  });

  it('a dropped poll does not mark the host seen', async () => {
    relay = await startWatchRelay({ hostGoneMs: 1_000, callWaitMs: 300 });
    const { gid, key, gateway } = await openGrant(relay);
    relay.clock.now += 5_000;
    const abort = new AbortController();
    const poll = hostPoll(relay, gid, gateway.authorization, undefined, abort.signal).catch(() => 'aborted');
    await vi.waitFor(() => expect(relay.hits).toContain(`watch-poll:${gid}`));
    relay.clock.now += 5_000;
    abort.abort();
    expect(await poll).toBe('aborted');
    // The relay learns of the drop from the socket closing; give it a moment.
    await new Promise((resolve) => setTimeout(resolve, 100));
    const call = await watchCall(relay, gid, key.authorization);
    expect(call.response.status).toBe(503);
    expect(call.error).toEqual({ error: 'host_offline' });
  });

  it('a newer poll answers the older with {calls: []}', async () => {
    relay = await startWatchRelay();
    const { gid, gateway } = await openGrant(relay);
    const older = hostPoll(relay, gid, gateway.authorization);
    await vi.waitFor(() => expect(relay.hits.filter((k) => k === `watch-poll:${gid}`)).toHaveLength(1));
    const newer = hostPoll(relay, gid, gateway.authorization, '100');
    expect((await older).data).toEqual({ calls: [] });
    expect((await newer).data).toEqual({ calls: [] });
  });

  it('wait_ms is capped by WATCH_HOST_POLL_WAIT_MS and invalid values mean the cap', async () => {
    relay = await startWatchRelay({ hostPollWaitMs: 100 });
    const { gid, gateway } = await openGrant(relay);
    for (const wait of ['999999', 'abc', '', '-5', undefined]) {
      const started = performance.now();
      const { data } = await hostPoll(relay, gid, gateway.authorization, wait);
      expect(data).toEqual({ calls: [] });
      // Held for the cap, not for the requested 999,999 ms (generous upper bound, no lower-bound race).
      expect(performance.now() - started).toBeLessThan(5_000);
    }
  });

  it('429 too_many_calls for a third waiting call; 429 grant_exhausted after max_calls; 409 duplicate_call', async () => {
    relay = await startWatchRelay({ callWaitMs: 300 });
    const { gid, key, gateway } = await openGrant(relay, undefined, { max_calls: 3 });
    const first = sealedCall();
    const held = [watchCall(relay, gid, key.authorization, first), watchCall(relay, gid, key.authorization)];
    await vi.waitFor(() => expect(relay.hits.filter((k) => k === `watch-call:${gid}`)).toHaveLength(2));
    const third = await watchCall(relay, gid, key.authorization);
    expect(third.response.status).toBe(429);
    expect(third.error).toEqual({ error: 'too_many_calls' });
    await hostPoll(relay, gid, gateway.authorization, '0');
    await Promise.all(held);
    const dup = await watchCall(relay, gid, key.authorization, first);
    expect(dup.response.status).toBe(409);
    expect(dup.error).toEqual({ error: 'duplicate_call' });
    expect((await watchCall(relay, gid, key.authorization)).response.status).toBe(504);
    const exhausted = await watchCall(relay, gid, key.authorization);
    expect(exhausted.response.status).toBe(429);
    expect(exhausted.error).toEqual({ error: 'grant_exhausted' });
  });

  it('401 for a missing or wrong key, 404 not_found for a malformed grant id', async () => {
    relay = await startWatchRelay();
    const { gid } = await openGrant(relay);
    expect((await watchCall(relay, gid, watchKey().authorization)).response.status).toBe(401);
    const none = await relay.client.POST('/v1/watch-tools/grants/{gid}/calls', {
      params: { path: { gid } },
      body: sealedCall(),
    });
    expect(none.response.status).toBe(401);
    expect(none.error).toEqual({ error: 'unauthorized' });
    const bad = await fetch(`${relay.baseUrl}/v1/watch-tools/grants/short/calls`, { method: 'POST', body: '{}' });
    expect(bad.status).toBe(404);
    expect(await bad.json()).toEqual({ error: 'not_found' });
  });

  it.each([
    ['a short rid', { rid: 'x'.repeat(21) }],
    ['a nonce of 15 characters', { n: 'x'.repeat(15) }],
    ['a ciphertext of 21 characters', { ct: 'x'.repeat(21) }],
    ['a ciphertext over 5,483 characters', { ct: 'x'.repeat(5_484) }],
    ['non-base64url ciphertext', { ct: `${'x'.repeat(30)}+` }],
    ['a numeric nonce', { n: 1234567890123456 }],
  ])('400 invalid_call for %s', async (_name, change) => {
    relay = await startWatchRelay();
    const { gid, key } = await openGrant(relay);
    const { response, error } = await watchCall(relay, gid, key.authorization, { ...sealedCall(), ...change } as never);
    expect(response.status).toBe(400);
    expect(error).toEqual({ error: 'invalid_call' });
  });

  it('rate limits watch-call:<grant> at 30 a minute before the body is read, and charges watch-call-ip first', async () => {
    relay = await startWatchRelay();
    const { gid, key } = await openGrant(relay, undefined, { max_calls: 120 });
    for (let i = 0; i < 30; i += 1) {
      expect((await watchCall(relay, gid, key.authorization, {} as never)).response.status).toBe(400);
    }
    const limited = await watchCall(relay, gid, key.authorization, {} as never);
    expect(limited.response.status).toBe(429);
    expect(limited.error).toEqual({ error: 'rate_limited' });
    // The 31st call charged the per-IP bucket, then the grant's, and stopped there.
    expect(relay.hits.slice(-2)).toEqual([expect.stringMatching(/^watch-call-ip:/), `watch-call:${gid}`]);
    expect(relay.hits.filter((k) => k.startsWith('watch-call-ip:'))).toHaveLength(31);
  });

  it('400 invalid_result for a malformed answer; 410 for another gateway’s grant', async () => {
    relay = await startWatchRelay();
    const { gid, key, gateway } = await openGrant(relay);
    const call = sealedCall();
    void watchCall(relay, gid, key.authorization, call);
    await hostPoll(relay, gid, gateway.authorization);
    const bad = await hostResult(relay, gid, call.rid, gateway.authorization, { n: b64(12), ct: 'x'.repeat(24_001) });
    expect(bad.response.status).toBe(400);
    expect(bad.error).toEqual({ error: 'invalid_result' });
    const foreign = relay.gateway(gateway.installationId);
    const other = await hostResult(relay, gid, call.rid, foreign.authorization, { n: b64(12), ct: b64(20) });
    expect(other.response.status).toBe(410);
    const poll = await hostPoll(relay, gid, foreign.authorization, '0');
    expect(poll.response.status).toBe(410);
    expect((await hostPoll(relay, gid, 'Bearer nope')).response.status).toBe(401);
  });

  it('a Watch that disconnects drops its queued call', async () => {
    relay = await startWatchRelay();
    const { gid, key, gateway } = await openGrant(relay);
    const abort = new AbortController();
    const pending = watchCall(relay, gid, key.authorization, sealedCall(), abort.signal).catch(() => 'aborted');
    await vi.waitFor(() => expect(relay.hits).toContain(`watch-call:${gid}`));
    abort.abort();
    expect(await pending).toBe('aborted');
    await new Promise((resolve) => setTimeout(resolve, 50));
    await vi.waitFor(async () => {
      expect((await hostPoll(relay, gid, gateway.authorization, '0')).data).toEqual({ calls: [] });
    });
  });
});

describe('closing and expiry', () => {
  it('the host closes with DELETE (204): held calls get 410 {reason:"host"}, later requests too', async () => {
    relay = await startWatchRelay();
    const { gid, key, gateway } = await openGrant(relay);
    const held = watchCall(relay, gid, key.authorization);
    await vi.waitFor(() => expect(relay.hits).toContain(`watch-call:${gid}`));
    const closed = await relay.client.DELETE('/v1/watch-tools/grants/{gid}', {
      params: { path: { gid } },
      headers: { authorization: gateway.authorization },
    });
    expect(closed.response.status).toBe(204);
    expect((await held).error).toEqual({ error: 'grant_closed', reason: 'host' });
    const later = await watchCall(relay, gid, key.authorization);
    expect(later.response.status).toBe(410);
    expect(later.error).toEqual({ error: 'grant_closed', reason: 'host' });
  });

  it('the Watch closes with its key (reason "watch"); a wrong key or foreign gateway gets 204 and changes nothing', async () => {
    relay = await startWatchRelay();
    const { gid, key, gateway } = await openGrant(relay);
    const del = (authorization: string) =>
      relay.client.DELETE('/v1/watch-tools/grants/{gid}', { params: { path: { gid } }, headers: { authorization } });
    expect((await del(watchKey().authorization)).response.status).toBe(204);
    expect((await del(relay.gateway().authorization)).response.status).toBe(204);
    expect((await del('Bearer nonsense')).response.status).toBe(204);
    expect((await hostPoll(relay, gid, gateway.authorization, '0')).response.status).toBe(200);
    expect((await del(key.authorization)).response.status).toBe(204);
    const poll = await hostPoll(relay, gid, gateway.authorization, '0');
    expect(poll.error).toEqual({ error: 'grant_closed', reason: 'watch' });
  });

  it('a grant past its ttl is closed as expired, also for a poll it was holding', async () => {
    relay = await startWatchRelay();
    const { gid, key, gateway } = await openGrant(relay, undefined, { ttl_s: 60 });
    relay.clock.now += 60_000;
    const call = await watchCall(relay, gid, key.authorization);
    expect(call.response.status).toBe(410);
    expect(call.error).toEqual({ error: 'grant_closed', reason: 'expired' });
    expect((await hostPoll(relay, gid, gateway.authorization, '0')).error).toEqual({
      error: 'grant_closed',
      reason: 'expired',
    });
  });

  it('closing the app answers held calls and polls so shutdown does not wait', async () => {
    relay = await startWatchRelay();
    const { gid, key, gateway } = await openGrant(relay);
    const other = await openGrant(relay, gateway);
    const held = watchCall(relay, gid, key.authorization);
    const poll = hostPoll(relay, other.gid, gateway.authorization);
    await vi.waitFor(() => expect(relay.hits).toContain(`watch-call:${gid}`));
    await vi.waitFor(() => expect(relay.hits).toContain(`watch-poll:${other.gid}`));
    const closing = relay.app.close();
    expect((await held).response.status).toBe(503);
    expect((await poll).data).toEqual({ calls: [] });
    await closing;
    relay = { ...relay, close: () => Promise.resolve() };
  });
});
