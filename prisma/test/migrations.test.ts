import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createDb, migrate, listMigrations } from '../src/index.js';
import { derivePostgresSchema, PRISMA_DIR, readSchema } from '../src/providers.js';
import { createMigration } from '../src/migration-new.js';
import { acquirePostgres, type TestDatabase } from '../src/testing/postgres.js';

const scratch = mkdtempSync(path.join(os.tmpdir(), 'conduit-prisma-test-'));
const held: TestDatabase[] = [];
afterAll(async () => {
  for (const db of held) await db.release();
  rmSync(scratch, { recursive: true, force: true });
});

async function roundTrip(url: string) {
  const db = createDb(url);
  try {
    await db.storeMeta.create({ data: { key: 'format', value: '1' } });
    const row = await db.storeMeta.findUnique({ where: { key: 'format' } });
    expect(row?.value).toBe('1');
    expect(row?.updatedAt).toBeInstanceOf(Date);
  } finally {
    await db.$disconnect();
  }
}

describe('migrations', () => {
  it('migrate a fresh SQLite file from zero, then round-trip a row', async () => {
    const file = path.join(scratch, 'nested', 'relay.sqlite');
    const first = await migrate(file);
    expect(first.applied).toEqual(listMigrations('sqlite').map((m) => m.name));
    expect(first.applied.length).toBeGreaterThan(0);
    expect((await migrate(file)).applied).toEqual([]);
    expect(statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
    await roundTrip(file);
  });

  it('migrate a fresh PostgreSQL database from zero, then round-trip a row', async () => {
    const db = await acquirePostgres();
    held.push(db);
    const first = await migrate(db.url);
    expect(first.applied).toEqual(listMigrations('postgres').map((m) => m.name));
    expect((await migrate(db.url)).alreadyApplied).toEqual(first.applied);
    await roundTrip(db.url);
  });

  it('an unreachable DATABASE_URL_PG is a failure, not a skip', async () => {
    await expect(acquirePostgres({ DATABASE_URL_PG: 'postgresql://postgres@127.0.0.1:1/test' })).rejects.toThrow(
      /unreachable/,
    );
  });

  it('refuses a migration that was edited after it was applied', async () => {
    const file = path.join(scratch, 'edited.sqlite');
    const migrations = listMigrations('sqlite');
    await migrate(file);
    const { migrateSqlite } = await import('../src/migrate.js');
    const edited = migrations.map((m, i) => (i === 0 ? { ...m, checksum: 'different' } : m));
    expect(() => migrateSqlite(file, edited)).toThrow(/edited after it was applied/);
  });

  it('the PostgreSQL schema is the derived twin of schema.prisma', () => {
    expect(readSchema('postgres')).toBe(derivePostgresSchema(readSchema('sqlite')));
  });

  it('the committed migrations produce exactly schema.prisma (no change left unmigrated)', async () => {
    const pgDb = await acquirePostgres();
    held.push(pgDb);
    const copy = path.join(scratch, 'prisma-copy');
    cpSync(PRISMA_DIR, copy, { recursive: true, filter: (src) => !/node_modules|generated/.test(src) });
    expect(await createMigration('unexpected', { root: copy, postgresUrl: pgDb.url })).toEqual([]);
  });

  it('adding a model produces one migration per provider that applies cleanly', async () => {
    const pgDb = await acquirePostgres();
    held.push(pgDb);
    const copy = path.join(scratch, 'prisma-add');
    cpSync(PRISMA_DIR, copy, { recursive: true, filter: (src) => !/node_modules|generated/.test(src) });
    const schema = path.join(copy, 'schema.prisma');
    const added = readFileSync(schema, 'utf8') + '\nmodel Widget {\n  id   Int    @id\n  name String\n}\n';
    execFileSync('sh', ['-c', `cat > "${schema}"`], { input: added });
    const created = await createMigration('add_widget', { root: copy, postgresUrl: pgDb.url });
    expect(created).toHaveLength(2);
    const sqliteSql = readFileSync(path.join(copy, created[0] ?? '', 'migration.sql'), 'utf8');
    expect(sqliteSql).toContain('CREATE TABLE "Widget"');
    const { migrateSqlite, migratePostgres } = await import('../src/migrate.js');
    const sqliteResult = migrateSqlite(
      path.join(scratch, 'widget.sqlite'),
      listMigrations('sqlite', path.join(copy, 'migrations/sqlite')),
    );
    expect(sqliteResult.applied.at(-1)).toMatch(/_add_widget$/);
    const pgResult = await migratePostgres(
      pgDb.url,
      listMigrations('postgres', path.join(copy, 'migrations/postgres')),
    );
    expect(pgResult.applied.at(-1)).toMatch(/_add_widget$/);
  });

  it('db:migrate exits non-zero with a clear message when PostgreSQL is unreachable', () => {
    const result = spawnSync('npx', ['tsx', 'src/cli.ts', 'migrate', 'postgresql://postgres@127.0.0.1:1/test'], {
      cwd: PRISMA_DIR,
      encoding: 'utf8',
    });
    expect(result.status).not.toBe(0);
    expect(result.stderr).toMatch(/ECONNREFUSED|connect/i);
  });
});
