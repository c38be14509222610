import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPrismaStore, type PrismaStore } from '../src/store/prisma-store.js';
import type { GatewayRecord } from '../src/store/records.js';
import { STORE_KINDS, testDatabase } from './support/harness.js';

describe.each(STORE_KINDS)('claiming a pairing code on %s', (kind) => {
  let release: () => Promise<void>;
  let store: PrismaStore;

  beforeAll(async () => {
    const db = await testDatabase(kind);
    release = db.release;
    store = await openPrismaStore(db.url);
  });

  afterAll(async () => {
    await store?.close();
    await release?.();
  });

  it('ten claims racing for one code: exactly one adds its gateway, stored field for field', async () => {
    const installationId = randomUUID();
    const codeHash = 'c'.repeat(64);
    await store.replacePairing({ codeHash, installationId, expiresAt: Date.now() + 60_000, dashboardId: 'dash-1' });
    const gateways: GatewayRecord[] = Array.from({ length: 10 }, (_, i) => ({
      installationId,
      id: randomUUID(),
      name: `host ${i}`,
      secretHash: String(i).repeat(64),
      dashboardId: 'dash-1',
      createdAt: Date.UTC(2026, 10, 29, 12, 0, 0, i),
      pluginVersion: null,
      pluginCapabilities: null,
      lastEventAt: null,
    }));
    const results = await Promise.all(gateways.map((gateway) => store.claimPairing(codeHash, gateway)));
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
    const gateway: GatewayRecord = {
      installationId,
      id: randomUUID(),
      name: 'Hermes gateway',
      secretHash: 'e'.repeat(64),
      dashboardId: null,
      createdAt: Date.UTC(2026, 0, 2, 3, 4, 5, 678),
      pluginVersion: null,
      pluginCapabilities: null,
      lastEventAt: null,
    };
    expect(await store.claimPairing(codeHash, gateway)).toBe(true);
    expect(await store.findGateway(installationId, gateway.id)).toEqual(gateway);
  });
});
