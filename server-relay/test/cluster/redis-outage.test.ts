/**
 * Redis goes away under running replicas and comes back: what needs shared state is refused with
 * `503 {"error":"shared_state_unavailable"}` (never a 500, never a crash), and the same processes serve
 * again once Redis answers, without a restart. The replicas use a redis-server of this file's own.
 * The replicas check their replies against the contracts (as test builds do), so every 503 here is one
 * the contracts declare.
 */
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deviceToken, eventId, TOPIC } from '../conformance/relay.js';
import { ownRedis, startCluster, waitFor, type Cluster, type OwnRedis, type Replica } from './cluster.js';

let redis: OwnRedis;
let cluster: Cluster;

beforeAll(async () => {
  redis = await ownRedis();
  await redis.start();
  // Replies are checked against the contracts (test builds do): 503 shared_state_unavailable is declared.
  cluster = await startCluster({ replicas: 2, redisUrl: redis.url });
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
  await redis?.stop();
});

async function pairedHost(on: Pick<Replica, 'call'>): Promise<string> {
  const registered = await on.call('POST', '/v1/installations', {
    body: { bundle_id: TOPIC, device_token: deviceToken(), environment: 'production' },
  });
  expect(registered.status, registered.text).toBe(201);
  const phone = registered.json as { installation: { id: string }; credential: string };
  const created = await on.call('POST', `/v1/installations/${phone.installation.id}/pairings`, {
    auth: `Bearer ${phone.credential}`,
    body: {},
  });
  const code = (created.json as { pairing_code: string }).pairing_code;
  const claimed = await on.call('POST', '/v1/pairings/claim', { body: { pairing_code: code } });
  expect(claimed.status, claimed.text).toBe(200);
  return `Bearer ${(claimed.json as { credential: string }).credential}`;
}

describe('Redis unavailable', () => {
  it('answers 503 shared_state_unavailable while Redis is down and recovers without a restart', async () => {
    const [one, two] = cluster.replicas as [Replica, Replica];
    const gateway = await pairedHost(one);
    expect(
      (await one.call('POST', '/v1/events', { auth: gateway, body: { type: 'response.ready', event_id: eventId() } }))
        .status,
    ).toBe(202);

    await redis.stop();
    for (const replica of [one, two]) {
      let last = { status: 0, text: '', headers: new Headers() };
      await waitFor(
        async () => {
          last = await replica.call('POST', '/v1/events', {
            auth: gateway,
            body: { type: 'response.ready', event_id: eventId() },
          });
          // Until the replica notices, an event may still be answered; never with a 5xx other than 503.
          expect([202, 503], last.text).toContain(last.status);
          return last.status === 503;
        },
        'a 503 while Redis is down',
        5_000,
      );
      expect(JSON.parse(last.text)).toEqual({ error: 'shared_state_unavailable' });
      expect(last.headers.get('retry-after')).toBe('1');
      const registration = await replica.call('POST', '/v1/installations', {
        body: { bundle_id: TOPIC, device_token: deviceToken(), environment: 'production' },
      });
      expect(registration.status).toBe(503);
      expect(registration.json).toEqual({ error: 'shared_state_unavailable' });
      // A Watch grant (its home replica is recorded in Redis) and a ring settle are refused alike.
      const grant = await replica.call('POST', '/v1/watch-tools/grants', {
        auth: gateway,
        body: { watch_key_sha256: 'a'.repeat(64), ttl_s: 600, max_calls: 5 },
      });
      expect(grant.status, grant.text).toBe(503);
      expect(grant.json).toEqual({ error: 'shared_state_unavailable' });
      const settle = await replica.call('POST', `/v1/rings/${'r'.repeat(22)}/settled`, {
        body: { token: 't'.repeat(43), by: 'phone', outcome: 'declined' },
      });
      expect(settle.status, settle.text).toBe(503);
      // What needs no shared state still answers.
      expect((await replica.call('GET', '/healthz')).status).toBe(200);
    }

    await redis.start();
    for (const replica of [one, two]) {
      await waitFor(
        async () =>
          (
            await replica.call('POST', '/v1/events', {
              auth: gateway,
              body: { type: 'response.ready', event_id: eventId() },
            })
          ).status === 202,
        'events delivered again after Redis came back',
        10_000,
      );
    }
    // The replicas reach each other again (their channels resubscribed): a Watch call made on replica 2
    // reaches the host polling replica 1 for a grant opened on replica 1.
    const key = randomBytes(32).toString('base64url');
    let opened = { status: 0, json: undefined as unknown };
    await waitFor(async () => {
      opened = await one.call('POST', '/v1/watch-tools/grants', {
        auth: gateway,
        body: { watch_key_sha256: createHash('sha256').update(key, 'ascii').digest('hex'), ttl_s: 600, max_calls: 5 },
      });
      return opened.status === 201;
    }, 'a grant opened after Redis came back');
    const gid = (opened.json as { grant_id: string }).grant_id;
    const polling = one.call('GET', `/v1/watch-tools/grants/${gid}/calls?wait_ms=20000`, { auth: gateway });
    const call = {
      rid: randomBytes(16).toString('base64url'),
      n: randomBytes(12).toString('base64url'),
      ct: randomBytes(32).toString('base64url'),
    };
    const calling = two.call('POST', `/v1/watch-tools/grants/${gid}/calls`, { auth: `Bearer ${key}`, body: call });
    expect((await polling).json).toEqual({ calls: [call] });
    const result = { n: randomBytes(12).toString('base64url'), ct: 'cmVzdWx0' };
    expect(
      (await one.call('POST', `/v1/watch-tools/grants/${gid}/results/${call.rid}`, { auth: gateway, body: result }))
        .status,
    ).toBe(200);
    expect((await calling).json).toEqual(result);

    // The same processes: none exited, and none logged a request failure (a 500).
    for (const replica of cluster.replicas) {
      expect(replica.process.child.exitCode).toBeNull();
      expect(replica.process.output()).not.toContain('"request failed"');
    }
    expect(cluster.output()).toContain('redis available again');
  });
});
