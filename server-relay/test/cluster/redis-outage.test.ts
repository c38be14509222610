/**
 * Redis goes away under running replicas and comes back: what needs shared state is refused with
 * `503 {"error":"shared_state_unavailable"}` (never a 500, never a crash), and the same processes serve
 * again once Redis answers, without a restart. The replicas use a redis-server of this file's own.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deviceToken, eventId, TOPIC } from '../conformance/relay.js';
import { ownRedis, startCluster, waitFor, type Cluster, type OwnRedis, type Replica } from './cluster.js';

let redis: OwnRedis;
let cluster: Cluster;

beforeAll(async () => {
  redis = await ownRedis();
  await redis.start();
  // The wire contracts do not declare 503 shared_state_unavailable yet, and test builds answer an
  // undeclared reply as 500 undeclared_reply: these replicas check no replies (see the README).
  cluster = await startCluster({ replicas: 2, redisUrl: redis.url, env: { CONDUIT_CHECK_REPLIES: '0' } });
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
    // The same processes: none exited, and none logged a request failure (a 500).
    for (const replica of cluster.replicas) {
      expect(replica.process.child.exitCode).toBeNull();
      expect(replica.process.output()).not.toContain('"request failed"');
    }
    expect(cluster.output()).toContain('redis available again');
  });
});
