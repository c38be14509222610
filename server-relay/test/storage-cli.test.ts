/**
 * The operator CLIs as the reference's tools are used (`node src/storage-status.mjs PATH`, or
 * DATA_PATH): the data path as the first argument or DATA_PATH, the reference's output shape, and
 * never a new empty database or a table in someone else's: a path that does not exist, a malformed
 * relay.json, an empty or foreign database is a one-line error with exit 1 that changes nothing.
 * Real processes on real SQLite files and a real PostgreSQL database.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '@conduit/contracts/testing';
import { createDb } from '@conduit/prisma';
import { acquirePostgres } from '@conduit/prisma/testing/postgres';
import { normalizePreferences } from '../src/domain/preferences.js';
import { openPrismaStore } from '../src/store/prisma-store.js';
import { startRelay, testDatabase, TOPIC, type Relay } from './support/harness.js';
import { runRelayAsync } from './support/relay-process.js';

const sha = (value: string) => createHash('sha256').update(value).digest('hex');
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'relay-storage-cli-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The environment of `docker compose exec`: no DATA_PATH unless a test gives one. */
const env = (extra: Record<string, string> = {}) => ({
  PUBLIC_URL: 'https://relay.example.test',
  APNS_TOPIC: TOPIC,
  APNS_MODE: 'accept',
  DATA_PATH: '',
  DATABASE_URL: '',
  ...extra,
});

function folder(name: string): string {
  const made = path.join(dir, name);
  mkdirSync(made);
  return made;
}

/**
 * A relay database with `active` active and `inactive` inactive installations, all last changed
 * `ageMs` ago (none eligible for pruning unless that is 30 days or more). Aged rows were paired then, so
 * a relay serving the database keeps them (it removes only never-paired installations on its own).
 */
async function relayDatabase(url: string, active: number, inactive: number, ageMs = 0): Promise<void> {
  const store = await openPrismaStore(url);
  try {
    const now = Date.now() - ageMs;
    for (let i = 0; i < active + inactive; i += 1) {
      await store.insertInstallation({
        id: `inst-${i}`,
        bundleId: TOPIC,
        deviceToken: 'ab'.repeat(32),
        voipToken: null,
        watchVoipToken: null,
        locationPushToken: null,
        environment: 'production',
        deviceSecretHash: sha(`secret-${i}`),
        active: i < active,
        preferences: normalizePreferences({}),
        createdAt: now,
        updatedAt: now,
        pairedAt: ageMs > 0 ? now : null,
        lastSeenAt: null,
      });
    }
  } finally {
    await store.close();
  }
}

/** Every file in `folder` with its bytes' digest: what "nothing changed" means for a folder. */
function snapshot(folderPath: string): Record<string, string> {
  return Object.fromEntries(
    readdirSync(folderPath).map((name) => [name, sha(readFileSync(path.join(folderPath, name)).toString('base64'))]),
  );
}

async function expectRefused(args: string[], extraEnv: Record<string, string>, message: string | RegExp) {
  const result = await runRelayAsync(args, env(extraEnv));
  expect(result.status).toBe(1);
  expect(result.stdout).toBe('');
  const lines = result.stderr.trim().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(message);
}

describe('storage:status', () => {
  it('takes the data path as its argument or DATA_PATH and prints {"installations":{total, active, inactive, capacity}}', async () => {
    const sqlite = path.join(folder('status'), 'relay.sqlite');
    await relayDatabase(sqlite, 2, 1);
    const byArgument = await runRelayAsync(['storage:status', sqlite], env());
    expect(byArgument.stderr).toBe('');
    expect(byArgument.status).toBe(0);
    expect(JSON.parse(byArgument.stdout)).toEqual({
      installations: { total: 3, active: 2, inactive: 1, capacity: 50_000, expired: 0 },
    });
    const byEnv = await runRelayAsync(['storage:status'], env({ DATA_PATH: sqlite }));
    expect(byEnv.stdout).toBe(byArgument.stdout);
    // The relay.json a reference deployment's DATA_PATH names leads to the database beside it.
    const byJsonPath = await runRelayAsync(
      ['storage:status', path.join(path.dirname(sqlite), 'relay.json')],
      env({ RELAY_MAX_INSTALLATIONS: '1024' }),
    );
    expect(JSON.parse(byJsonPath.stdout)).toEqual({
      installations: { total: 3, active: 2, inactive: 1, capacity: 1_024, expired: 0 },
    });
  });

  it('a reference relay.json not imported yet is counted as the reference counts it, and left as it is', async () => {
    const here = folder('reference-json');
    const file = path.join(here, 'relay-data.json');
    // The reference's own storage-status test data.
    writeFileSync(
      file,
      `${JSON.stringify({
        version: 1,
        installations: {
          active: { active: true, deviceToken: 'DEVICE_TOKEN_MUST_NOT_PRINT', deviceSecretHash: 'DIGEST' },
          inactive: { active: false, gateways: { gateway: { secretHash: 'GATEWAY_DIGEST_MUST_NOT_PRINT' } } },
          legacy: { gateways: {} },
        },
        pairings: {},
        pendingDecisions: {},
      })}\n`,
    );
    const before = snapshot(here);
    const result = await runRelayAsync(['storage:status', file], env());
    expect(result.status).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({
      installations: { total: 3, active: 1, inactive: 2, capacity: 50_000, expired: 0 },
    });
    expect(result.stdout + result.stderr).not.toMatch(/MUST_NOT_PRINT/);
    expect(snapshot(here)).toEqual(before);
  });

  it('a path that does not exist is an error, and no database appears there', async () => {
    const here = folder('missing');
    await expectRefused(['storage:status', path.join(here, 'relay.sqlite')], {}, /relay\.sqlite does not exist/);
    await expectRefused(['storage:status'], { DATA_PATH: path.join(here, 'relay.json') }, /relay\.json does not exist/);
    await expectRefused(['storage:prune-inactive', path.join(here, 'relay.sqlite')], {}, /does not exist/);
    await expectRefused(['storage:status', path.join(here, 'nested', 'relay.sqlite')], {}, /does not exist/);
    expect(readdirSync(here)).toEqual([]);
    await expectRefused(['storage:status'], {}, /needs the relay's data path/);
  });

  it('a malformed relay.json is an error that names the file, not its content', async () => {
    const here = folder('malformed');
    const file = path.join(here, 'relay.json');
    writeFileSync(file, 'MALFORMED_PRIVATE_STORE_CONTENT');
    await expectRefused(
      ['storage:status', file],
      {},
      /relay\.json is not a reference relay store: it is not valid JSON\.$/,
    );
    writeFileSync(file, '{"version":3,"installations":{}}');
    await expectRefused(['storage:status', file], {}, /^Unsupported relay data format\.$/);
    expect(readdirSync(here)).toEqual(['relay.json']);
  });

  it('a SQLite file of another application is refused, byte for byte untouched; so is an empty file and a text file', async () => {
    const here = folder('foreign');
    const foreign = path.join(here, 'app.db');
    const other = createDb(foreign);
    await other.$executeRawUnsafe('CREATE TABLE "users" ("id" INTEGER PRIMARY KEY, "name" TEXT)');
    await other.$executeRawUnsafe(`INSERT INTO "users" ("name") VALUES ('someone')`);
    await other.$disconnect();
    writeFileSync(path.join(here, 'empty.sqlite'), '');
    writeFileSync(path.join(here, 'notes.sqlite'), 'not a database at all\n');
    const before = snapshot(here);
    await expectRefused(['storage:status', foreign], {}, /app\.db is not a relay database/);
    await expectRefused(
      ['storage:prune-inactive', foreign, '--apply', '--relay-stopped'],
      {},
      /is not a relay database/,
    );
    await expectRefused(['storage:status', path.join(here, 'notes.sqlite')], {}, /is not a relay database/);
    await expectRefused(['storage:status', path.join(here, 'empty.sqlite')], {}, /holds no relay database/);
    // The relay itself refuses to start on it too, before creating or migrating anything.
    const boot = await runRelayAsync([], env({ DATA_PATH: foreign }));
    expect(boot.status).toBe(1);
    expect(boot.stderr.trim()).toMatch(/app\.db is not a relay database/);
    expect(snapshot(here)).toEqual(before);
    const check = createDb(foreign);
    try {
      const tables = await check.$queryRawUnsafe<{ name: string }[]>(
        `SELECT "name" FROM "sqlite_master" WHERE "type" = 'table' ORDER BY "name"`,
      );
      expect(tables.map((table) => table.name)).toEqual(['users']);
    } finally {
      await check.$disconnect();
    }
  }, 120_000);

  it('PostgreSQL: DATABASE_URL naming a database without the relay’s tables is refused and stays empty', async () => {
    const database = await acquirePostgres();
    try {
      await expectRefused(['storage:status'], { DATABASE_URL: database.url }, /holds no relay database/);
      const db = createDb(database.url);
      try {
        const tables = await db.$queryRawUnsafe<{ n: bigint }[]>(
          `SELECT count(*) AS "n" FROM "information_schema"."tables" WHERE "table_schema" = current_schema()`,
        );
        expect(Number(tables[0]?.n)).toBe(0);
      } finally {
        await db.$disconnect();
      }
      await relayDatabase(database.url, 1, 1);
      const result = await runRelayAsync(['storage:status'], env({ DATABASE_URL: database.url }));
      expect(JSON.parse(result.stdout)).toEqual({
        installations: { total: 2, active: 1, inactive: 1, capacity: 50_000, expired: 0 },
      });
    } finally {
      await database.release();
    }
  }, 120_000);
});

describe('storage:prune-inactive', () => {
  it('takes the data path as its argument and prints the reference’s {eligible, removed, remaining}', async () => {
    const sqlite = path.join(folder('prune'), 'relay.sqlite');
    await relayDatabase(sqlite, 1, 1);
    const preview = await runRelayAsync(['storage:prune-inactive', sqlite], env());
    expect(preview.status).toBe(0);
    expect(JSON.parse(preview.stdout)).toEqual({ eligible: 0, removed: 0, remaining: 2, preview: true });
    await expectRefused(['storage:prune-inactive', sqlite, '--apply'], {}, /--relay-stopped/);
    await expectRefused(['storage:prune-inactive', sqlite, '--force'], {}, /^usage: storage:prune-inactive/);
    await expectRefused(['storage:status', sqlite, 'another-path'], {}, /^usage: storage:status/);
  });
});

describe('through a running relay’s admin API (RELAY_ADMIN_URL and ADMIN_TOKEN)', () => {
  const ADMIN_TOKEN = 'storage-cli-admin-token-'.padEnd(48, '0');
  let relay: Relay;
  /** The database the relay serves, and an offline copy of the same rows the direct path reads. */
  let served: string;
  let offline: string;
  const viaApi = (extra: Record<string, string> = {}) =>
    // No DATA_PATH and no DATABASE_URL: the direct path would have no store to open.
    env({ RELAY_ADMIN_URL: relay.baseUrl, ADMIN_TOKEN, ...extra });
  beforeAll(async () => {
    served = path.join(folder('admin-served'), 'relay.sqlite');
    offline = path.join(folder('admin-offline'), 'relay.sqlite');
    // One active installation and two inactive ones unchanged for 40 days: those two are eligible.
    for (const url of [served, offline]) await relayDatabase(url, 1, 2, 40 * 24 * 60 * 60 * 1000);
    relay = await startRelay(served, { ADMIN_TOKEN });
  }, 120_000);
  afterAll(async () => {
    await relay?.close();
  });

  it('storage:status and the prune preview print exactly what the direct path prints, with no data path', async () => {
    const status = await runRelayAsync(['storage:status'], viaApi());
    expect(status.stderr).toBe('');
    expect(status.status).toBe(0);
    expect(status.stdout).toBe((await runRelayAsync(['storage:status', offline], env())).stdout);
    expect(JSON.parse(status.stdout)).toEqual({
      installations: { total: 3, active: 1, inactive: 2, capacity: 50_000, expired: 0 },
    });
    const preview = await runRelayAsync(['storage:prune-inactive'], viaApi());
    expect(preview.status).toBe(0);
    expect(preview.stdout).toBe((await runRelayAsync(['storage:prune-inactive', offline], env())).stdout);
    expect(JSON.parse(preview.stdout)).toEqual({ eligible: 2, removed: 0, remaining: 3, preview: true });
  });

  it('--apply needs no --relay-stopped: the running relay prunes its own store after a 0600 backup beside it', async () => {
    const applied = await runRelayAsync(['storage:prune-inactive', '--apply'], viaApi());
    expect(applied.stderr).toBe('');
    expect(applied.status).toBe(0);
    const result = JSON.parse(applied.stdout) as { backupPath?: string };
    expect(path.dirname(result.backupPath ?? '')).toBe(path.dirname(served));
    expect(statSync(result.backupPath ?? '').mode & 0o777).toBe(0o600);
    // The same rows pruned offline (stopped relay) print the same fields in the same order.
    const direct = await runRelayAsync(['storage:prune-inactive', offline, '--apply', '--relay-stopped'], env());
    const offlineResult = JSON.parse(direct.stdout) as { backupPath?: string };
    expect(Object.keys(result)).toEqual(Object.keys(offlineResult));
    expect({ ...result, backupPath: null }).toEqual({ ...offlineResult, backupPath: null });
    expect(result).toMatchObject({ eligible: 2, removed: 2, remaining: 1 });
    // The relay's own view changed: it did the removing.
    expect((await relay.store.findInstallation('inst-1')) ?? null).toBeNull();
    const after = await runRelayAsync(['storage:status'], viaApi());
    expect(JSON.parse(after.stdout)).toEqual({
      installations: { total: 1, active: 1, inactive: 0, capacity: 50_000, expired: 0 },
    });
    // --relay-stopped is accepted, and changes nothing through the API.
    const again = await runRelayAsync(['storage:prune-inactive', '--apply', '--relay-stopped'], viaApi());
    expect(JSON.parse(again.stdout)).toEqual({ eligible: 0, removed: 0, remaining: 1 });
  });

  it('a wrong token, a relay without the admin API, an unreachable relay: one line, exit 1, never a token', async () => {
    const wrongToken = 'w'.repeat(40);
    const withoutApi = await testDatabase('sqlite');
    const closed = await startRelay(withoutApi.url);
    const unused = await freePort();
    try {
      const cases: [string[], Record<string, string>, RegExp][] = [
        [['storage:status'], viaApi({ ADMIN_TOKEN: wrongToken }), /refused ADMIN_TOKEN \(401 unauthorized\)/],
        [['storage:prune-inactive', '--apply'], viaApi({ ADMIN_TOKEN: wrongToken }), /refused ADMIN_TOKEN \(401/],
        [['storage:status'], viaApi({ RELAY_ADMIN_URL: closed.baseUrl }), /no relay admin API at .* \(404\)/],
        [
          ['storage:prune-inactive'],
          viaApi({ RELAY_ADMIN_URL: `http://127.0.0.1:${unused}` }),
          /could not be reached \(ECONNREFUSED\)/,
        ],
        [['storage:status'], viaApi({ ADMIN_TOKEN: '' }), /^RELAY_ADMIN_URL needs ADMIN_TOKEN/],
        [['storage:status'], viaApi({ RELAY_ADMIN_URL: 'ftp://relay.example' }), /^RELAY_ADMIN_URL must be/],
        [['storage:status', served], viaApi(), /give no PATH/],
      ];
      for (const [args, extraEnv, message] of cases) {
        const result = await runRelayAsync(args, extraEnv);
        expect(result.status).toBe(1);
        expect(result.stdout).toBe('');
        const lines = result.stderr.trim().split('\n');
        expect(lines).toHaveLength(1);
        expect(lines[0]).toMatch(message);
        expect(result.stderr).not.toContain(ADMIN_TOKEN);
        expect(result.stderr).not.toContain(wrongToken);
      }
    } finally {
      await closed.close();
      await withoutApi.release();
    }
  });
});
