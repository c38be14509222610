import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb } from '@conduit/prisma';
import { createRelayClient } from '@conduit/sdk/relay';
import { deviceToken, STORE_KINDS, testDatabase, TOPIC } from './support/harness.js';
import { startRelayProcess, type RelayProcess } from './support/relay-process.js';
import { openPrismaStore } from '../src/store/prisma-store.js';
import { IndexedStore } from '../src/store/indexed-store.js';
import type { InstallationRecord } from '../src/store/records.js';
import type { RelayStore } from '../src/store/relay-store.js';
import { normalizePreferences } from '../src/domain/preferences.js';

const CAPACITY = 10;
const RACERS = 50;

describe.each(STORE_KINDS)('registration capacity on %s', (kind) => {
  let db: { url: string; release: () => Promise<void> };
  let dir: string;
  let relay: RelayProcess;

  beforeAll(async () => {
    db = await testDatabase(kind);
    dir = mkdtempSync(path.join(os.tmpdir(), 'relay-capacity-'));
    relay = await startRelayProcess({
      PUBLIC_URL: 'https://relay.example.test',
      APNS_TOPIC: TOPIC,
      APNS_MODE: 'accept',
      TRUST_PROXY: '1',
      ...(kind === 'postgres'
        ? { DATA_PATH: path.join(dir, 'unused'), DATABASE_URL: db.url }
        : { DATA_PATH: db.url, DATABASE_URL: '' }),
      RELAY_MAX_INSTALLATIONS: String(CAPACITY),
      // The global budget stays out of the way: only the capacity may refuse here.
      RELAY_REGISTRATIONS_PER_MINUTE: '1000',
    });
  }, 120_000);

  afterAll(async () => {
    if (relay) {
      relay.child.kill('SIGTERM');
      await relay.exited;
    }
    rmSync(dir, { recursive: true, force: true });
    await db?.release();
  });

  it(`${RACERS} racing registrations against a capacity of ${CAPACITY} admit exactly ${CAPACITY}`, async () => {
    const client = createRelayClient({ baseUrl: relay.url });
    const results = await Promise.all(
      Array.from({ length: RACERS }, (_, i) =>
        client.POST('/v1/installations', {
          // One address each, so the per-address limit (12 a minute) never answers instead.
          headers: { 'x-forwarded-for': `10.77.0.${i + 1}` },
          body: { bundle_id: TOPIC, device_token: deviceToken(i + 16), environment: 'production' },
        }),
      ),
    );
    const statuses = results.map((result) => result.response.status);
    expect(statuses.filter((status) => status === 201)).toHaveLength(CAPACITY);
    expect(statuses.filter((status) => status === 429)).toHaveLength(RACERS - CAPACITY);
    for (const result of results.filter((r) => r.response.status === 429)) {
      expect(result.error).toEqual({ error: 'installation_limit_reached' });
    }

    const store = createDb(db.url);
    try {
      const rows = await store.installation.findMany({ select: { id: true } });
      expect(rows).toHaveLength(CAPACITY);
      const admitted = results.flatMap((result) => (result.data ? [result.data.installation.id] : []));
      expect(new Set(rows.map((row) => row.id))).toEqual(new Set(admitted));
    } finally {
      await store.$disconnect();
    }

    // Full stays full: a later registration is refused too.
    const late = await client.POST('/v1/installations', {
      headers: { 'x-forwarded-for': '10.77.1.1' },
      body: { bundle_id: TOPIC, device_token: deviceToken(200), environment: 'production' },
    });
    expect(late.response.status).toBe(429);
    expect(late.error).toEqual({ error: 'installation_limit_reached' });
  }, 120_000);
});

function installation(i: number): InstallationRecord {
  return {
    id: `capacity-${i}`,
    bundleId: TOPIC,
    deviceToken: deviceToken(i + 16),
    voipToken: null,
    watchVoipToken: null,
    locationPushToken: null,
    environment: 'production',
    deviceSecretHash: 'b'.repeat(64),
    active: true,
    preferences: normalizePreferences({}),
    createdAt: 0,
    updatedAt: 0,
    pairedAt: null,
    lastSeenAt: null,
  };
}

describe.each(STORE_KINDS)('store admission on %s', (kind) => {
  it('the bare store and the indexed store each admit exactly the capacity under a race', async () => {
    const db = await testDatabase(kind);
    const store = await openPrismaStore(db.url);
    try {
      const race = (target: RelayStore, capacity: number, from: number) =>
        Promise.allSettled(
          Array.from({ length: 20 }, (_, i) =>
            target.insertInstallationIfAdmitted(installation(from + i), (count) => {
              if (count >= capacity) throw new Error('full');
            }),
          ),
        );
      const bare = await race(store, 5, 0);
      expect(bare.filter((r) => r.status === 'fulfilled')).toHaveLength(5);
      expect(await store.countInstallations()).toBe(5);

      // The indexed store starts from the 5 stored rows: capacity 8 leaves 3 slots.
      const indexed = new IndexedStore(store);
      const more = await race(indexed, 8, 100);
      expect(more.filter((r) => r.status === 'fulfilled')).toHaveLength(3);
      expect(await store.countInstallations()).toBe(8);
      expect(await indexed.countInstallations()).toBe(8);
    } finally {
      await store.close();
      await db.release();
    }
  }, 120_000);
});
