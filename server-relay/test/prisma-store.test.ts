import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LAST_SEEN_ROWS_PER_STATEMENT } from '../src/store/last-seen-statements.js';
import { IndexedStore } from '../src/store/indexed-store.js';
import { openPrismaStore, type PrismaStore } from '../src/store/prisma-store.js';
import { normalizePreferences } from '../src/domain/preferences.js';
import type { GatewayRecord, InstallationRecord } from '../src/store/records.js';
import { GatewayLimitReached } from '../src/store/relay-store.js';
import { STORE_KINDS, testDatabase } from './support/harness.js';

function gateway(installationId: string, createdAt: number): GatewayRecord {
  return {
    installationId,
    id: randomUUID(),
    name: 'gateway',
    secretHash: 'a'.repeat(64),
    dashboardId: null,
    createdAt,
    pluginVersion: null,
    pluginCapabilities: null,
    lastEventAt: null,
  };
}

function installation(locationPushToken: string | null): InstallationRecord {
  return {
    id: randomUUID(),
    bundleId: 'com.example.conduit',
    deviceToken: 'ab'.repeat(32),
    voipToken: null,
    watchVoipToken: null,
    locationPushToken,
    environment: 'production',
    deviceSecretHash: 'b'.repeat(64),
    active: true,
    preferences: normalizePreferences({}),
    createdAt: Date.UTC(2026, 10, 29, 12, 0, 0, 1),
    updatedAt: Date.UTC(2026, 10, 29, 12, 0, 0, 1),
    pairedAt: null,
    lastSeenAt: Date.UTC(2026, 10, 29, 12, 0, 0, 1),
  };
}

/** A fresh gateway row as the database holds it, written directly (the store has no bare insert). */
function row(g: GatewayRecord) {
  return {
    installationId: g.installationId,
    id: g.id,
    name: g.name,
    secretHash: g.secretHash,
    createdAt: new Date(g.createdAt),
  };
}

describe.each(STORE_KINDS)('Prisma store on %s', (kind) => {
  let release: () => Promise<void>;
  let store: PrismaStore;
  /** A second connection pool on the same database: another relay process (PostgreSQL; SQLite is one process's). */
  let other: PrismaStore;

  beforeAll(async () => {
    const db = await testDatabase(kind);
    release = db.release;
    store = await openPrismaStore(db.url);
    other = kind === 'postgres' ? await openPrismaStore(db.url) : store;
  });

  afterAll(async () => {
    if (other !== store) await other?.close();
    await store?.close();
    await release?.();
  });

  it('claims of several live codes racing (on two connections on PostgreSQL) at the gateway limit add exactly the free slots', async () => {
    const phone = installation(null);
    await store.insertInstallation(phone);
    await store.db.gateway.create({ data: row(gateway(phone.id, Date.UTC(2026, 10, 29, 12))) });
    // Several live codes at once (the store keeps one, but a client may hold an old one through a race).
    const codes = Array.from({ length: 8 }, (_, i) => `${i}`.repeat(64).slice(0, 64));
    for (const codeHash of codes) {
      await store.db.pairing.create({
        data: { codeHash, installationId: phone.id, expiresAt: new Date(Date.now() + 60_000), dashboardId: null },
      });
    }
    const results = await Promise.allSettled(
      codes.map((codeHash, i) =>
        (i % 2 === 0 ? store : other).claimPairing(codeHash, gateway(phone.id, Date.UTC(2026, 10, 29, 13, i)), 3),
      ),
    );
    const claimed = results.filter((result) => result.status === 'fulfilled' && result.value === true);
    const full = results.filter((result) => result.status === 'rejected');
    expect(claimed).toHaveLength(2);
    expect(full).toHaveLength(6);
    for (const refusal of full) {
      expect(refusal.status === 'rejected' && refusal.reason).toBeInstanceOf(GatewayLimitReached);
    }
    expect(await store.countGateways(phone.id)).toBe(3);
    // A refused claim keeps its code: the phone can free a slot and the host retry.
    expect(await store.db.pairing.count({ where: { installationId: phone.id } })).toBe(6);
  });

  it('a bulk flush of more gateways than one statement holds writes every last-seen time to the millisecond', async () => {
    const installationId = randomUUID();
    const count = LAST_SEEN_ROWS_PER_STATEMENT * 2 + 7;
    const base = Date.UTC(2026, 10, 29, 23, 59, 59, 123);
    const gateways = Array.from({ length: count }, () => gateway(installationId, base - 60_000));
    await store.db.gateway.createMany({
      data: gateways.map(row),
    });
    const revoked = gateway(installationId, base);
    await store.recordGatewayActivities([
      ...gateways.map((g, i) => ({ installationId, gatewayId: g.id, activity: { lastEventAt: base + i } })),
      // Revoked before the flush: matches no row and creates none.
      { installationId, gatewayId: revoked.id, activity: { lastEventAt: base } },
    ]);
    const stored = await store.listGateways(installationId);
    expect(stored).toHaveLength(count);
    const byId = new Map(stored.map((g) => [g.id, g]));
    gateways.forEach((g, i) => {
      expect(byId.get(g.id)?.lastEventAt).toBe(base + i);
      expect(byId.get(g.id)?.createdAt).toBe(base - 60_000);
    });
  });

  it('plugin metadata and bare last-seen times in one flush are both written; other gateways are untouched', async () => {
    const installationId = randomUUID();
    const [hello, seen, idle] = [0, 1, 2].map(() => gateway(installationId, Date.UTC(2026, 0, 1)));
    for (const g of [hello!, seen!, idle!]) {
      await store.db.gateway.create({ data: row(g) });
    }
    await store.recordGatewayActivities([
      {
        installationId,
        gatewayId: hello!.id,
        activity: { pluginVersion: '1.2.3', pluginCapabilities: ['e2e'], lastEventAt: Date.UTC(2026, 5, 1, 12) },
      },
      { installationId, gatewayId: seen!.id, activity: { lastEventAt: Date.UTC(2026, 5, 1, 13, 0, 0, 1) } },
    ]);
    expect(await store.findGateway(installationId, hello!.id)).toMatchObject({
      pluginVersion: '1.2.3',
      pluginCapabilities: ['e2e'],
      lastEventAt: Date.UTC(2026, 5, 1, 12),
    });
    expect(await store.findGateway(installationId, seen!.id)).toMatchObject({
      pluginVersion: null,
      lastEventAt: Date.UTC(2026, 5, 1, 13, 0, 0, 1),
    });
    expect(await store.findGateway(installationId, idle!.id)).toMatchObject({ lastEventAt: null });
  });

  it('the index keeps a flushed gateway with its new values and never brings back a revoked one', async () => {
    const phone = installation(null);
    await store.insertInstallation(phone);
    const installationId = phone.id;
    const kept = gateway(installationId, Date.UTC(2026, 0, 1));
    const gone = gateway(installationId, Date.UTC(2026, 0, 1));
    for (const g of [kept, gone]) await store.db.gateway.create({ data: row(g) });
    const cached = new IndexedStore(store);
    await cached.loadIndex();
    for (const g of [kept, gone]) expect(await cached.findGateway(installationId, g.id)).not.toBeNull();
    await cached.deleteGateway(installationId, gone.id);
    const at = Date.UTC(2026, 2, 3, 4, 5, 6, 789);
    await cached.recordGatewayActivities([
      { installationId, gatewayId: kept.id, activity: { lastEventAt: at, pluginVersion: '2.0.0' } },
      { installationId, gatewayId: gone.id, activity: { lastEventAt: at } },
    ]);
    // Changed underneath the index: a read from the index must not see this, proving where it came from.
    await store.db.gateway.updateMany({ where: { installationId, id: kept.id }, data: { name: 'renamed' } });
    expect(await cached.findGateway(installationId, kept.id)).toMatchObject({
      name: 'gateway',
      lastEventAt: at,
      pluginVersion: '2.0.0',
    });
    expect(await cached.findGateway(installationId, gone.id)).toBeNull();
  });

  it('ten claims racing for one code: exactly one adds its gateway, stored field for field', async () => {
    const installationId = randomUUID();
    const codeHash = 'c'.repeat(64);
    await store.replacePairing({ codeHash, installationId, expiresAt: Date.now() + 60_000, dashboardId: 'dash-1' });
    const gateways = Array.from({ length: 10 }, (_, i) => ({
      ...gateway(installationId, Date.UTC(2026, 10, 29, 12, 0, 0, i)),
      name: `host ${i}`,
      dashboardId: 'dash-1',
    }));
    const results = await Promise.all(gateways.map((g) => store.claimPairing(codeHash, g)));
    expect(results.filter(Boolean)).toHaveLength(1);
    const winner = gateways[results.indexOf(true)];
    expect(await store.listGateways(installationId)).toEqual([winner]);
    expect(await store.findPairing(codeHash)).toBeNull();
    // A spent code claims nothing.
    expect(await store.claimPairing(codeHash, { ...gateways[0]!, id: randomUUID() })).toBe(false);
    expect(await store.countGateways(installationId)).toBe(1);
  });

  it('an unbound gateway keeps a null dashboard id', async () => {
    const installationId = randomUUID();
    const codeHash = 'd'.repeat(64);
    await store.replacePairing({ codeHash, installationId, expiresAt: Date.now() + 60_000, dashboardId: null });
    const unbound = gateway(installationId, Date.UTC(2026, 0, 2, 3, 4, 5, 678));
    expect(await store.claimPairing(codeHash, unbound)).toBe(true);
    expect(await store.findGateway(installationId, unbound.id)).toEqual(unbound);
  });

  it('the location push token round-trips: stored, replaced, cleared only while unchanged, absent stays null', async () => {
    const cached = new IndexedStore(store);
    await cached.loadIndex();
    const first = 'cd'.repeat(32);
    const second = 'ef'.repeat(40);
    const phone = installation(first);
    await cached.insertInstallation(phone);
    expect(await store.findInstallation(phone.id)).toEqual(phone);
    expect((await cached.findInstallation(phone.id))?.locationPushToken).toBe(first);

    await cached.updateInstallation(phone.id, { locationPushToken: second, updatedAt: phone.updatedAt + 1 });
    expect((await cached.findInstallation(phone.id))?.locationPushToken).toBe(second);
    // APNs refused the old token after the phone sent a new one: the new one stays.
    await cached.clearTokenIfUnchanged(phone.id, 'locationPushToken', first);
    expect((await cached.findInstallation(phone.id))?.locationPushToken).toBe(second);
    await cached.clearTokenIfUnchanged(phone.id, 'locationPushToken', second);
    const cleared = await cached.findInstallation(phone.id);
    expect(cleared).toMatchObject({ locationPushToken: null, deviceToken: phone.deviceToken, active: true });

    const without = installation(null);
    await store.insertInstallation(without);
    expect((await store.findInstallation(without.id))?.locationPushToken).toBeNull();
  });
});
