/**
 * Anonymous registrations cannot hold installation capacity for ever (issue 12, item 4): an
 * installation no host paired and whose phone has not used its credential within
 * RELAY_UNPAIRED_INSTALLATION_TTL_HOURS is removed when the relay is full (and by the periodic
 * sweep), and `storage:status` counts the removals. The real relay app on an ephemeral port with a
 * controllable clock, on SQLite and PostgreSQL; `storage:status` runs as the operator runs it.
 */
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  deviceToken,
  nextIp,
  paired,
  register,
  ROOMY_BUDGETS,
  STORE_KINDS,
  startRelay,
  testDatabase,
  TOPIC,
  type Relay,
} from './support/harness.js';
import { runRelayAsync } from './support/relay-process.js';
import { createDb, listMigrations, migrate, migratePostgres, migrateSqlite } from '@conduit/prisma';
import { dateTimeParam } from '../src/store/last-seen-statements.js';
import { openPrismaStore } from '../src/store/prisma-store.js';

const HOUR_MS = 60 * 60 * 1000;
const CAPACITY = 6;

describe.each(STORE_KINDS)('unpaired installations expire on %s', (kind) => {
  let db: { url: string; release: () => Promise<void> };
  let relay: Relay;

  beforeAll(async () => {
    db = await testDatabase(kind);
    relay = await startRelay(db.url, {
      ...ROOMY_BUDGETS,
      RELAY_MAX_INSTALLATIONS: String(CAPACITY),
      RELAY_UNPAIRED_INSTALLATION_TTL_HOURS: '24',
    });
  }, 120_000);
  afterAll(async () => {
    await relay?.close();
    await db?.release();
  });

  const registerOne = (seed: number) =>
    relay.client.POST('/v1/installations', {
      headers: { 'x-forwarded-for': nextIp() },
      body: { bundle_id: TOPIC, device_token: deviceToken(seed), environment: 'production' },
    });

  const meta = (credential: string) =>
    relay.client.GET('/v1/meta', { headers: { authorization: `Bearer ${credential}` } });

  it('a flood of registrations nobody pairs fills the relay only until the TTL; paired and used phones stay', async () => {
    const host = await paired(relay); // paired: never expires here
    const revoked = await paired(relay); // paired once, host since revoked: still not "never paired"
    const revoke = await relay.client.DELETE('/v1/gateways/current', { headers: revoked.gatewayAuth });
    expect(revoke.response.status).toBe(204);
    const used = await register(relay); // registered, not paired yet, but the app is opened
    const flood = [await register(relay), await register(relay), await register(relay)];

    // Full: the attacker's rows hold the last slots.
    const refused = await registerOne(200);
    expect(refused.response.status).toBe(429);
    expect(refused.error).toEqual({ error: 'installation_limit_reached' });

    relay.clock.advance(12 * HOUR_MS);
    expect((await meta(used.credential)).response.status).toBe(200); // seen: its TTL starts again
    relay.clock.advance(13 * HOUR_MS); // the flood is 25 h old, `used` was seen 13 h ago

    // The relay is full, so this registration first reclaims the expired rows, then is admitted.
    const admitted = [await registerOne(201), await registerOne(202), await registerOne(203)];
    expect(admitted.map((reply) => reply.response.status)).toEqual([201, 201, 201]);
    // Exactly the three flood slots came back: the next one is refused again.
    expect((await registerOne(204)).response.status).toBe(429);

    for (const phone of flood) expect((await meta(phone.credential)).response.status).toBe(401);
    expect((await meta(used.credential)).response.status).toBe(200);
    expect((await meta(revoked.phone.credential)).response.status).toBe(200);
    const event = await relay.client.POST('/v1/events', {
      headers: host.gatewayAuth,
      body: { type: 'response.ready', event_id: 'evt-still-paired' },
    });
    expect(event.response.status).toBe(202);
    expect(relay.logs).toContainEqual({ level: 'info', message: 'expired unpaired installations', count: 3 });

    // The operator sees the removals; the existing fields keep their meaning.
    const status = await runRelayAsync(['storage:status'], {
      RELAY_MAX_INSTALLATIONS: String(CAPACITY),
      ...(kind === 'postgres' ? { DATABASE_URL: db.url, DATA_PATH: '' } : { DATA_PATH: db.url, DATABASE_URL: '' }),
    });
    expect(status.status).toBe(0);
    expect(JSON.parse(status.stdout)).toEqual({
      installations: { total: CAPACITY, active: CAPACITY, inactive: 0, capacity: CAPACITY, expired: 3 },
    });
  }, 120_000);
});

describe('RELAY_UNPAIRED_INSTALLATION_TTL_HOURS', () => {
  it('a bad value stops the relay at boot naming it', async () => {
    const result = await runRelayAsync([], {
      PUBLIC_URL: 'https://relay.example.test',
      APNS_TOPIC: TOPIC,
      APNS_MODE: 'accept',
      DATABASE_URL: '',
      DATA_PATH: path.join(os.tmpdir(), 'never-created', 'relay.sqlite'),
      RELAY_UNPAIRED_INSTALLATION_TTL_HOURS: '7d',
    });
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain('RELAY_UNPAIRED_INSTALLATION_TTL_HOURS must be a positive integer.');
  });
});

describe.each(STORE_KINDS)('upgrading a %s store', (kind) => {
  it('installations with a host count as paired; every existing one counts as seen at the upgrade', async () => {
    const db = await testDatabase(kind);
    try {
      // The store as the previous relay left it: every migration but the one adding the columns.
      if (kind === 'sqlite') migrateSqlite(db.url, listMigrations('sqlite').slice(0, -1));
      else await migratePostgres(db.url, listMigrations('postgres').slice(0, -1));
      const longAgo = Date.UTC(2026, 0, 1);
      const old = dateTimeParam(kind, longAgo);
      const p = (n: number) => (kind === 'postgres' ? `$${n}` : '?');
      const ts = kind === 'postgres' ? '::timestamp(3)' : '';
      const raw = createDb(db.url);
      try {
        for (const id of ['with-host', 'without-host']) {
          await raw.$executeRawUnsafe(
            `INSERT INTO "Installation" ("id", "bundleId", "deviceToken", "environment", "deviceSecretHash", ` +
              `"active", "preferences", "createdAt", "updatedAt") VALUES (${p(1)}, ${p(2)}, ${p(3)}, 'production', ` +
              `${p(4)}, true, '{}', ${p(5)}${ts}, ${p(6)}${ts})`,
            id,
            TOPIC,
            deviceToken(7),
            'b'.repeat(64),
            old,
            old,
          );
        }
        await raw.$executeRawUnsafe(
          `INSERT INTO "Gateway" ("installationId", "id", "name", "secretHash", "createdAt") ` +
            `VALUES ('with-host', 'g1', 'Host', ${p(1)}, ${p(2)}${ts})`,
          'c'.repeat(64),
          old,
        );
      } finally {
        await raw.$disconnect();
      }

      const upgradedAt = Date.now();
      await migrate(db.url);
      const store = await openPrismaStore(db.url);
      try {
        const withHost = await store.findInstallation('with-host');
        const withoutHost = await store.findInstallation('without-host');
        expect(withHost?.pairedAt).toBe(longAgo);
        expect(withoutHost?.pairedAt).toBeNull();
        for (const record of [withHost, withoutHost]) {
          expect(record?.lastSeenAt).toBeGreaterThanOrEqual(upgradedAt - 60_000);
          expect(record?.lastSeenAt).toBeLessThanOrEqual(Date.now() + 60_000);
        }
        // The backfilled times compare correctly with the ones Prisma writes: a sweep an hour before
        // the upgrade's stamp removes nothing, one after it removes only the installation without a host.
        expect(await store.expireUnpairedInstallations(upgradedAt - 60 * 60_000, Date.now())).toEqual([]);
        expect(await store.expireUnpairedInstallations(Date.now() + 60 * 60_000, Date.now())).toEqual(['without-host']);
      } finally {
        await store.close();
      }
    } finally {
      await db.release();
    }
  });
});
