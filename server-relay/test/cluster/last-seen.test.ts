/**
 * Deferred last-seen writes between replicas (issue 22 item 2): each replica holds a gateway's latest
 * event time and writes it on its own timer or at shutdown, so a replica holding an older time may
 * write after one holding a newer time. The stored time must be the latest event's, not the latest
 * write's. Both replicas are stopped (SIGTERM flushes), older-holder last, so the order is certain.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deviceToken, eventId, ROOMY_BUDGETS, TOPIC } from '../conformance/relay.js';
import { startCluster, stopProcess, type Cluster, type Replica } from './cluster.js';

let cluster: Cluster;

beforeAll(async () => {
  cluster = await startCluster({ replicas: 2, env: ROOMY_BUDGETS });
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
});

/** Resolves once the clock has moved past `ms`, so two events get distinct millisecond times. */
async function clockPast(ms: number): Promise<void> {
  while (Date.now() <= ms) await new Promise((resolve) => setImmediate(resolve));
}

describe('deferred last-seen writes', () => {
  it('a replica flushing an older time after another flushed a newer one does not move last-seen back', async () => {
    const [newer, older] = cluster.replicas as [Replica, Replica];
    const registered = await older.call('POST', '/v1/installations', {
      body: { bundle_id: TOPIC, device_token: deviceToken(), environment: 'production' },
    });
    const phone = registered.json as { installation: { id: string }; credential: string };
    const created = await older.call('POST', `/v1/installations/${phone.installation.id}/pairings`, {
      auth: `Bearer ${phone.credential}`,
      body: {},
    });
    const claimed = await older.call('POST', '/v1/pairings/claim', {
      body: { pairing_code: (created.json as { pairing_code: string }).pairing_code },
    });
    const host = claimed.json as { gateway_id: string; credential: string };
    const gateway = `Bearer ${host.credential}`;

    expect(
      (await older.call('POST', '/v1/events', { auth: gateway, body: { type: 'response.ready', event_id: eventId() } }))
        .status,
    ).toBe(202);
    // The older event's time is at most this; the newer one's is later.
    const afterFirst = Date.now();
    await clockPast(afterFirst);
    const second = Date.now();
    expect(
      (await newer.call('POST', '/v1/events', { auth: gateway, body: { type: 'response.ready', event_id: eventId() } }))
        .status,
    ).toBe(202);

    // The newer time is written first, the older last (each replica flushes at SIGTERM).
    await stopProcess(newer.process.child, newer.process.exited);
    await stopProcess(older.process.child, older.process.exited);

    const db = new pg.Client({ connectionString: cluster.databaseUrl });
    await db.connect();
    try {
      const { rows } = await db.query<{ last: Date }>('SELECT "lastEventAt" AS last FROM "Gateway" WHERE "id" = $1', [
        host.gateway_id,
      ]);
      // timestamp(3) without time zone holding UTC: read back as UTC wall time.
      const storedMs = rows[0]!.last.getTime() - rows[0]!.last.getTimezoneOffset() * 60_000;
      expect(storedMs).toBeGreaterThanOrEqual(second);
    } finally {
      await db.end();
    }
  });
});
