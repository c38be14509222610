import { existsSync } from 'node:fs';
import path from 'node:path';
import { sqlitePathFor } from '../config.js';
import { databaseState, foreignDatabaseMessage } from '../store/database-state.js';

/**
 * Which store an operator CLI (storage:status, storage:prune-inactive) works on. As the reference's
 * tools, the data path is the first argument or DATA_PATH (`storage:status relay/deploy/data/relay.json`);
 * DATABASE_URL, when set, names the database instead.
 *
 * The CLIs only read or trim a store that exists: a path that does not exist, an empty or foreign
 * database, or a malformed relay.json is a one-line error (exit 1), never a new empty database.
 */
export type StorageTarget =
  | { kind: 'database'; url: string; /** Folder for prune backups. */ folder: string }
  /** A reference relay.json this relay has not imported yet (nothing beside it): read as the reference reads it. */
  | { kind: 'reference-json'; file: string };

export class StorageTargetError extends Error {}

export function resolveStorageTarget(
  command: string,
  pathArgument: string | undefined,
  env: NodeJS.ProcessEnv,
): Promise<StorageTarget> {
  const databaseUrl = env.DATABASE_URL?.trim();
  const dataPath = pathArgument ?? env.DATA_PATH?.trim();
  if (databaseUrl) {
    return databaseTarget(databaseUrl, path.dirname(path.resolve(dataPath || '.')), 'DATABASE_URL');
  }
  if (!dataPath) {
    throw new StorageTargetError(`${command} needs the relay's data path: ${command} PATH, or DATA_PATH.`);
  }
  const sqlite = path.resolve(sqlitePathFor(dataPath));
  if (dataPath.endsWith('.json') && !existsSync(sqlite)) {
    if (existsSync(dataPath)) return Promise.resolve({ kind: 'reference-json', file: path.resolve(dataPath) });
    throw new StorageTargetError(`${dataPath} does not exist (nor ${sqlite} beside it): no relay store there.`);
  }
  if (!existsSync(sqlite)) throw new StorageTargetError(`${sqlite} does not exist: no relay database there.`);
  return databaseTarget(sqlite, path.dirname(sqlite), sqlite);
}

async function databaseTarget(url: string, folder: string, shown: string): Promise<StorageTarget> {
  let state: Awaited<ReturnType<typeof databaseState>>;
  try {
    state = await databaseState(url);
  } catch (error) {
    // Never the URL: it may hold a password.
    const reason = error instanceof Error ? error.message.split('\n')[0] : 'unknown error';
    throw new StorageTargetError(`the relay database could not be opened (${reason}).`);
  }
  if (state === 'foreign') throw new StorageTargetError(foreignDatabaseMessage(url));
  if (state !== 'ours') throw new StorageTargetError(`${shown} holds no relay database (it is empty).`);
  return { kind: 'database', url, folder };
}
