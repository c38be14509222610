import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Db, Provider } from '@conduit/prisma';
import { ConfigError, loadConfig, sqlitePathFor, type RelayConfig } from './config.js';
import { LimitError, readLimits } from './limits.js';

// The database and the app are imported after the configuration is checked, so a bad environment
// fails in a blink instead of after loading Prisma and Fastify.
const failures: (new (...args: never[]) => Error)[] = [ConfigError, LimitError];

/**
 * `npm run relay` — serve, configured only by the environment (README).
 * `npm run relay -- import-json FILE` — import a reference relay's JSON store once.
 * `npm run storage:status [-- PATH]` / `npm run storage:prune-inactive [-- PATH] [--apply --relay-stopped]` —
 * maintenance; PATH defaults to DATA_PATH, as the reference's tools take it. With RELAY_ADMIN_URL and
 * ADMIN_TOKEN they ask that running relay's admin API instead (no PATH; `--apply` needs no `--relay-stopped`).
 */

function databaseUrlFromEnv(): string {
  const url = process.env.DATABASE_URL?.trim();
  if (url) return url;
  const dataPath = process.env.DATA_PATH?.trim();
  if (!dataPath) throw new ConfigError('DATA_PATH or DATABASE_URL is required.');
  return path.resolve(sqlitePathFor(dataPath));
}

async function loadDatabaseState() {
  const module = await import('./store/database-state.js');
  failures.push(module.ForeignDatabaseError);
  return module;
}

/** Opens the relay's database for a command: a foreign SQLite file is refused, migrations are applied. */
async function withDb<T>(url: string, work: (db: Db, provider: Provider) => Promise<T>): Promise<T> {
  const { createDb, migrate, providerOf } = await import('@conduit/prisma');
  const { assertRelayMayUse } = await loadDatabaseState();
  const { secureSqliteFiles } = await import('./store/sqlite-files.js');
  await assertRelayMayUse(url);
  secureSqliteFiles(url);
  await migrate(url);
  const db = createDb(url);
  try {
    return await work(db, providerOf(url));
  } finally {
    await db.$disconnect();
  }
}

/**
 * A reference deployment points DATA_PATH at relay.json: import it on first boot, then use the
 * database. The file is read and checked before anything is created, so a malformed relay.json stops
 * the boot with its one-line reason and leaves no empty database beside it.
 */
async function importOnBoot(config: RelayConfig): Promise<void> {
  if (!config.dataPath.endsWith('.json') || !existsSync(config.dataPath)) return;
  const { alreadyImported, importReferenceJson, readReferenceStore } = await loadImporter();
  const { databaseState, ForeignDatabaseError, foreignDatabaseMessage } = await loadDatabaseState();
  const { providerOf } = await import('@conduit/prisma');
  const state = await databaseState(config.databaseUrl);
  // A PostgreSQL database may hold other applications' tables beside the relay's (database-state.ts).
  if (state === 'foreign' && providerOf(config.databaseUrl) === 'sqlite') {
    throw new ForeignDatabaseError(foreignDatabaseMessage(config.databaseUrl));
  }
  if (state === 'ours') {
    const { createDb } = await import('@conduit/prisma');
    // Checked without migrating: a relay database has StoreMeta from its first migration.
    const db = createDb(config.databaseUrl);
    try {
      if (await alreadyImported(db)) return;
    } finally {
      await db.$disconnect();
    }
  }
  const store = readReferenceStore(config.dataPath);
  const summary = await withDb(config.databaseUrl, (db, provider) =>
    importReferenceJson(db, provider, config.dataPath, { store }),
  );
  console.log(JSON.stringify({ level: 'info', message: 'imported reference store', ...summary }));
}

/** `PATH` and flags of a storage CLI; anything else is a usage error (as the reference's tools refuse it). */
function storageArguments(command: string, rest: string[], allowed: string[]): { path?: string; flags: Set<string> } {
  const flags = rest.filter((arg) => arg.startsWith('--'));
  const paths = rest.filter((arg) => !arg.startsWith('--'));
  const unknown = flags.find((flag) => !allowed.includes(flag));
  if (unknown !== undefined || paths.length > 1 || new Set(flags).size !== flags.length) {
    const usage = [`${command}`, '[PATH]', ...allowed.map((flag) => `[${flag}]`)].join(' ');
    throw new ConfigError(`usage: ${usage} (PATH defaults to DATA_PATH)`);
  }
  return { ...(paths[0] !== undefined ? { path: paths[0] } : {}), flags: new Set(flags) };
}

async function loadStorageTarget() {
  const module = await import('./cli/storage-target.js');
  failures.push(module.StorageTargetError);
  return module;
}

/**
 * With RELAY_ADMIN_URL the storage commands ask that running relay's admin API (README, Operator CLIs)
 * and never open a database; without it, null: they work on the database directly, as before.
 */
async function runningRelayAdmin(command: string, pathArgument: string | undefined) {
  const env = process.env;
  if (!env.RELAY_ADMIN_URL?.trim()) return null;
  const module = await import('./cli/storage-admin.js');
  failures.push(module.AdminApiError);
  if (pathArgument !== undefined) {
    throw new module.AdminApiError(
      `${command}: RELAY_ADMIN_URL asks the running relay, which knows its own store; give no PATH, or unset RELAY_ADMIN_URL.`,
    );
  }
  return module.storageAdmin(env);
}

async function serve(): Promise<void> {
  const config = loadConfig(process.env);
  // Registers ForeignDatabaseError: the store refuses another application's SQLite file at open.
  await loadDatabaseState();
  await importOnBoot(config);
  const { buildApp } = await import('./app.js');
  const app = await buildApp(config);
  const address = await app.listen({ host: config.host, port: config.port });
  const bound = app.server.address();
  // The reference's start line, which deployments wait on; `address` is added.
  console.log(
    JSON.stringify({
      level: 'info',
      message: 'Conduit push relay listening',
      host: config.host,
      port: typeof bound === 'object' && bound !== null ? bound.port : config.port,
      public_url: config.publicUrl,
      address,
    }),
  );
  let stopping = false;
  // Closing the app flushes the deferred last-seen / plugin-version writes before the process ends.
  const stop = () => {
    if (stopping) return;
    stopping = true;
    void app.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

async function loadImporter() {
  const module = await import('./store/import-json.js');
  failures.push(module.ImportError);
  return module;
}

async function loadMaintenance() {
  const module = await import('./cli/storage.js');
  failures.push(module.MaintenanceError);
  return module;
}

async function main(): Promise<void> {
  // Everything the relay writes (database, backups, capture log) is for its own user only; the
  // files that matter are also created 0600 explicitly, this covers anything a library creates.
  process.umask(0o077);
  const [command, ...rest] = process.argv.slice(2);
  if (command === undefined || command === 'serve') return serve();
  if (command === 'import-json') {
    const file = rest[0];
    if (!file) throw new ConfigError('usage: npm run relay -- import-json FILE');
    const { importReferenceJson, readReferenceStore } = await loadImporter();
    // Checked before the database is created or migrated.
    const store = readReferenceStore(file);
    const summary = await withDb(databaseUrlFromEnv(), (db, provider) =>
      importReferenceJson(db, provider, file, { store }),
    );
    console.log(JSON.stringify(summary));
    return;
  }
  if (command === 'storage:status') {
    const args = storageArguments(command, rest, []);
    const admin = await runningRelayAdmin(command, args.path);
    if (admin) {
      console.log(JSON.stringify(await admin.status()));
      return;
    }
    const capacity = readLimits(process.env).maxInstallations;
    const { resolveStorageTarget } = await loadStorageTarget();
    const target = await resolveStorageTarget(command, args.path, process.env);
    const { referenceStoreStatus, storageStatus } = await loadMaintenance();
    // Registers ImportError, so a malformed relay.json is reported by its one-line message.
    await loadImporter();
    const status =
      target.kind === 'reference-json'
        ? referenceStoreStatus(target.file, capacity)
        : await withDb(target.url, (db) => storageStatus(db, capacity));
    console.log(JSON.stringify(status));
    return;
  }
  if (command === 'storage:prune-inactive') {
    const args = storageArguments(command, rest, ['--apply', '--relay-stopped']);
    const apply = args.flags.has('--apply');
    const relayStopped = args.flags.has('--relay-stopped');
    const admin = await runningRelayAdmin(command, args.path);
    if (admin) {
      // The relay is the one writer of its database: it prunes without being stopped.
      const result = await admin.prune(apply);
      console.log(JSON.stringify(apply ? result : { ...result, preview: true }));
      return;
    }
    const { resolveStorageTarget, StorageTargetError } = await loadStorageTarget();
    const target = await resolveStorageTarget(command, args.path, process.env);
    if (target.kind === 'reference-json') {
      throw new StorageTargetError(
        `${target.file} is a reference relay.json this relay has not imported yet: start the relay once to import it, then prune.`,
      );
    }
    const { pruneInactive } = await loadMaintenance();
    const result = await withDb(target.url, (db) =>
      pruneInactive(db, { apply, relayStopped, backupDir: target.folder }),
    );
    console.log(JSON.stringify(apply ? result : { ...result, preview: true }));
    return;
  }
  throw new ConfigError(`unknown command: ${command}`);
}

main().catch((error: unknown) => {
  if (error instanceof Error && failures.some((kind) => error instanceof kind)) {
    console.error(error.message);
  } else {
    // Never the error object itself: it could carry a connection string.
    console.error(
      error instanceof Error ? `relay failed: ${error.name}: ${error.message.split('\n')[0]}` : 'relay failed',
    );
  }
  process.exit(1);
});
