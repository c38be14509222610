/**
 * Applies the committed migrations (prisma/migrations/<provider>/<name>/migration.sql) in name order,
 * each inside one transaction together with its row in `_conduit_migrations`. A migration that was
 * applied is never re-run; one whose file changed since is refused (its checksum is recorded).
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { migrationsDir, type Provider } from './providers.js';

export interface Migration {
  name: string;
  sql: string;
  checksum: string;
}

export interface MigrateResult {
  applied: string[];
  alreadyApplied: string[];
}

export function listMigrations(provider: Provider, dir = migrationsDir(provider)): Migration[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort()
    .map((name) => {
      const sql = readFileSync(path.join(dir, name, 'migration.sql'), 'utf8');
      return { name, sql, checksum: createHash('sha256').update(sql).digest('hex') };
    });
}

function checkHistory(history: Map<string, string>, migrations: Migration[]): void {
  for (const migration of migrations) {
    const recorded = history.get(migration.name);
    if (recorded && recorded !== migration.checksum) {
      throw new Error(`migration ${migration.name} was edited after it was applied; add a new migration instead`);
    }
  }
}

/** The file path inside a `file:` URL (or a bare path). */
export function sqlitePath(url: string): string {
  return url.startsWith('file:') ? url.slice('file:'.length) : url;
}

export function migrateSqlite(url: string, migrations = listMigrations('sqlite')): MigrateResult {
  const file = sqlitePath(url);
  if (file !== ':memory:') mkdirSync(path.dirname(path.resolve(file)), { recursive: true, mode: 0o700 });
  const db = new Database(file);
  try {
    db.pragma('journal_mode = WAL');
    db.exec(
      'CREATE TABLE IF NOT EXISTS "_conduit_migrations" ("name" TEXT PRIMARY KEY, "checksum" TEXT NOT NULL, "appliedAt" TEXT NOT NULL)',
    );
    const result: MigrateResult = { applied: [], alreadyApplied: [] };
    // IMMEDIATE takes the write lock up front, so two processes migrating at once run one after the other.
    const run = db.transaction(() => {
      const rows = db.prepare('SELECT "name", "checksum" FROM "_conduit_migrations"').all() as {
        name: string;
        checksum: string;
      }[];
      const history = new Map(rows.map((row) => [row.name, row.checksum]));
      checkHistory(history, migrations);
      for (const migration of migrations) {
        if (history.has(migration.name)) {
          result.alreadyApplied.push(migration.name);
          continue;
        }
        db.exec(migration.sql);
        db.prepare('INSERT INTO "_conduit_migrations" ("name", "checksum", "appliedAt") VALUES (?, ?, ?)').run(
          migration.name,
          migration.checksum,
          new Date().toISOString(),
        );
        result.applied.push(migration.name);
      }
    });
    run.immediate();
    return result;
  } finally {
    db.close();
  }
}

export async function migratePostgres(url: string, migrations = listMigrations('postgres')): Promise<MigrateResult> {
  // Loaded here, not at the top: `pg` costs a process on SQLite a fifth of a second of its start
  // (it loads Node's fetch implementation to look for a Cloudflare runtime).
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('BEGIN');
    // One migrator at a time per database, whatever the number of relay replicas starting together.
    await client.query('SELECT pg_advisory_xact_lock(7263551)');
    await client.query(
      'CREATE TABLE IF NOT EXISTS "_conduit_migrations" ("name" TEXT PRIMARY KEY, "checksum" TEXT NOT NULL, "appliedAt" TIMESTAMPTZ NOT NULL)',
    );
    const { rows } = await client.query<{ name: string; checksum: string }>(
      'SELECT "name", "checksum" FROM "_conduit_migrations"',
    );
    const history = new Map(rows.map((row) => [row.name, row.checksum]));
    checkHistory(history, migrations);
    const result: MigrateResult = { applied: [], alreadyApplied: [] };
    for (const migration of migrations) {
      if (history.has(migration.name)) {
        result.alreadyApplied.push(migration.name);
        continue;
      }
      await client.query(migration.sql);
      await client.query('INSERT INTO "_conduit_migrations" ("name", "checksum", "appliedAt") VALUES ($1, $2, now())', [
        migration.name,
        migration.checksum,
      ]);
      result.applied.push(migration.name);
    }
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    await client.end();
  }
}

/** Which provider a database URL names. */
export function providerOf(url: string): Provider {
  return /^postgres(ql)?:\/\//i.test(url) ? 'postgres' : 'sqlite';
}

export async function migrate(url: string): Promise<MigrateResult> {
  return providerOf(url) === 'postgres' ? migratePostgres(url) : migrateSqlite(url);
}
