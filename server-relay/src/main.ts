import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Db } from '@conduit/prisma';
import { ConfigError, loadConfig, sqlitePathFor, type RelayConfig } from './config.js';
import { LimitError, readLimits } from './limits.js';

// The database and the app are imported after the configuration is checked, so a bad environment
// fails in a blink instead of after loading Prisma and Fastify.
const failures: (new (...args: never[]) => Error)[] = [ConfigError, LimitError];

/**
 * `npm run relay` — serve, configured only by the environment (README).
 * `npm run relay -- import-json FILE` — import a reference relay's JSON store once.
 * `npm run storage:status` / `npm run storage:prune-inactive [-- --apply --relay-stopped]` — maintenance.
 */

function databaseUrlFromEnv(): string {
  const url = process.env.DATABASE_URL?.trim();
  if (url) return url;
  const dataPath = process.env.DATA_PATH?.trim();
  if (!dataPath) throw new ConfigError('DATA_PATH or DATABASE_URL is required.');
  return path.resolve(sqlitePathFor(dataPath));
}

async function withDb<T>(work: (db: Db) => Promise<T>): Promise<T> {
  const url = databaseUrlFromEnv();
  const { createDb, migrate } = await import('@conduit/prisma');
  const { secureSqliteFiles } = await import('./store/sqlite-files.js');
  secureSqliteFiles(url);
  await migrate(url);
  const db = createDb(url);
  try {
    return await work(db);
  } finally {
    await db.$disconnect();
  }
}

/** A reference deployment points DATA_PATH at relay.json: import it on first boot, then use the database. */
async function importOnBoot(config: RelayConfig): Promise<void> {
  if (!config.dataPath.endsWith('.json') || !existsSync(config.dataPath)) return;
  const { createDb, migrate } = await import('@conduit/prisma');
  const { alreadyImported, importReferenceJson } = await loadImporter();
  const { secureSqliteFiles } = await import('./store/sqlite-files.js');
  secureSqliteFiles(config.databaseUrl);
  await migrate(config.databaseUrl);
  const db = createDb(config.databaseUrl);
  try {
    if (await alreadyImported(db)) return;
    const summary = await importReferenceJson(db, config.dataPath);
    console.log(JSON.stringify({ level: 'info', message: 'imported reference store', ...summary }));
  } finally {
    await db.$disconnect();
  }
}

async function serve(): Promise<void> {
  const config = loadConfig(process.env);
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
    const { importReferenceJson } = await loadImporter();
    const summary = await withDb((db) => importReferenceJson(db, file));
    console.log(JSON.stringify(summary));
    return;
  }
  if (command === 'storage:status') {
    const maximum = readLimits(process.env).maxInstallations;
    const { storageStatus } = await loadMaintenance();
    const status = await withDb((db) => storageStatus(db, maximum));
    console.log(JSON.stringify(status));
    return;
  }
  if (command === 'storage:prune-inactive') {
    const apply = rest.includes('--apply');
    const relayStopped = rest.includes('--relay-stopped');
    const backupDir = path.dirname(path.resolve(process.env.DATA_PATH?.trim() || '.'));
    const { pruneInactive } = await loadMaintenance();
    const result = await withDb((db) => pruneInactive(db, { apply, relayStopped, backupDir }));
    console.log(JSON.stringify(apply ? result : { eligible: result.eligible, preview: true }));
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
