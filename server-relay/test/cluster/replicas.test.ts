/**
 * Three relay processes on one PostgreSQL and one Redis behave as one relay (issue 22 item 2): each
 * test below fails if the piece it names were per process. One cluster serves the whole file.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { deviceToken, eventId, nextIp, TOPIC } from '../conformance/relay.js';
import { waitFor, type Replica } from './cluster.js';
import { clusterForFile, pairedPhone, type Caller } from './fixtures.js';

/** Installations this file may hold in all: the capacity test (last) fills what the others leave. */
const CAPACITY = 10;

const { cluster } = clusterForFile({ replicas: 3, env: { RELAY_MAX_INSTALLATIONS: String(CAPACITY) } });

function postEvent(on: Caller, auth: string, id = eventId('cluster')) {
  return on.call('POST', '/v1/events', { auth, body: { type: 'response.ready', event_id: id } });
}

/** Polls `probe` every 10 ms until it answers `status`; fails after `withinMs`. Returns the time it took. */
async function untilStatus(
  probe: () => Promise<{ status: number }>,
  status: number,
  withinMs: number,
): Promise<number> {
  const started = Date.now();
  let last = 0;
  await waitFor(
    async () => {
      last = (await probe()).status;
      return last === status;
    },
    () => `status ${status} (last ${last})`,
    withinMs,
  );
  return Date.now() - started;
}

describe('the event-id ledger is shared', () => {
  it('an event id delivered through replica 1 is a duplicate on replicas 2 and 3', async () => {
    const [one, two, three] = cluster.replicas as [Replica, Replica, Replica];
    const phone = await pairedPhone(one, two);
    const id = eventId('ledger');
    const first = await postEvent(one, phone.gateway, id);
    expect(first.status, first.text).toBe(202);
    expect(first.json).toEqual({ accepted: true, delivered: true });
    for (const other of [two, three]) {
      const again = await postEvent(other, phone.gateway, id);
      expect(again.status, again.text).toBe(200);
      expect(again.json).toEqual({ accepted: true, duplicate: true });
    }
    // Only that id: the host's next event is delivered by whichever replica takes it.
    const fresh = await postEvent(three, phone.gateway, eventId('ledger'));
    expect(fresh.status).toBe(202);
  });

  it('the same id sent to all three replicas at once is delivered exactly once', async () => {
    const [one, two, three] = cluster.replicas as [Replica, Replica, Replica];
    const phone = await pairedPhone(two, three);
    const id = eventId('race');
    const replies = await Promise.all([one, two, three, one, two, three].map((on) => postEvent(on, phone.gateway, id)));
    expect(replies.map((reply) => reply.status).sort()).toEqual([200, 200, 200, 200, 200, 202]);
  });
});

describe('rate windows are shared', () => {
  it('the 30/min event window of one installation, spread over 3 replicas, admits exactly 30', async () => {
    const phone = await pairedPhone(cluster, cluster);
    // Through the balancer: 45 events land 15 on each replica; per process each would admit all 15.
    const replies: number[] = [];
    for (let i = 0; i < 45; i += 1) replies.push((await postEvent(cluster, phone.gateway)).status);
    expect(replies.filter((status) => status === 202)).toHaveLength(30);
    expect(replies.filter((status) => status === 429)).toHaveLength(15);
    expect(replies.slice(30).every((status) => status === 429)).toBe(true);
  });

  it('a per-IP window (claim 20/min) counts one address across replicas', async () => {
    const ip = nextIp();
    const replies: number[] = [];
    for (let i = 0; i < 24; i += 1) {
      // Unknown codes: 404 until the window is spent, then 429 whichever replica answers.
      replies.push(
        (await cluster.call('POST', '/v1/pairings/claim', { ip, body: { pairing_code: 'ABCDE-FGHJK' } })).status,
      );
    }
    expect(replies.filter((status) => status === 404)).toHaveLength(20);
    expect(replies.slice(20)).toEqual([429, 429, 429, 429]);
  });
});

describe('the credential index is invalidated on every replica', () => {
  it('a gateway revoked on replica 1 is refused by replicas 2 and 3 within 1 s', async () => {
    const [one, two, three] = cluster.replicas as [Replica, Replica, Replica];
    const phone = await pairedPhone(one, one);
    // Warm on the others: their indexes hold the gateway and answer without the database.
    expect((await postEvent(two, phone.gateway)).status).toBe(202);
    expect((await postEvent(three, phone.gateway)).status).toBe(202);
    const revoked = await one.call('DELETE', '/v1/gateways/current', { auth: phone.gateway });
    expect(revoked.status).toBe(204);
    for (const other of [two, three]) {
      const tookMs = await untilStatus(
        () => other.call('GET', '/v1/decisions/req-cluster-1', { auth: phone.gateway }),
        401,
        1_000,
      );
      expect(tookMs).toBeLessThan(1_000);
    }
  });

  it('an installation deactivated on replica 2 is refused by replicas 1 and 3 within 1 s (device and gateway)', async () => {
    const [one, two, three] = cluster.replicas as [Replica, Replica, Replica];
    const phone = await pairedPhone(three, three);
    expect((await one.call('GET', '/v1/meta', { auth: phone.device })).status).toBe(200);
    expect((await postEvent(one, phone.gateway)).status).toBe(202);
    expect((await three.call('GET', '/v1/meta', { auth: phone.device })).status).toBe(200);
    const deleted = await two.call('DELETE', `/v1/installations/${phone.installationId}`, { auth: phone.device });
    expect(deleted.status).toBe(204);
    await untilStatus(() => one.call('GET', '/v1/meta', { auth: phone.device }), 401, 1_000);
    await untilStatus(() => three.call('GET', '/v1/meta', { auth: phone.device }), 401, 1_000);
    await untilStatus(() => one.call('GET', '/v1/decisions/req-cluster-2', { auth: phone.gateway }), 401, 1_000);
  });
});

describe('installation capacity is atomic in PostgreSQL', () => {
  it('50 racing registrations across the replicas fill the capacity exactly (10 installations in all)', async () => {
    const db = new pg.Client({ connectionString: cluster.databaseUrl });
    await db.connect();
    try {
      const count = async () =>
        Number((await db.query<{ n: string }>('SELECT count(*)::text AS n FROM "Installation"')).rows[0]?.n);
      const before = await count();
      expect(before).toBeLessThan(CAPACITY);
      const replies = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          (cluster.replicas[i % 3] as Replica).call('POST', '/v1/installations', {
            body: { bundle_id: TOPIC, device_token: deviceToken(), environment: 'production' },
          }),
        ),
      );
      const created = replies.filter((reply) => reply.status === 201).length;
      expect(created).toBe(CAPACITY - before);
      expect(replies.filter((reply) => reply.status === 429).map((reply) => reply.json)).toEqual(
        Array.from({ length: 50 - created }, () => ({ error: 'installation_limit_reached' })),
      );
      expect(await count()).toBe(CAPACITY);
    } finally {
      await db.end();
    }
  });
});
