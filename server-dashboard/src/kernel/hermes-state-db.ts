import { existsSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';

/**
 * A profile's Hermes `state.db`, opened read only: Hermes' gateway owns every write. The one way the
 * features that read it (artifacts, the Watch's chats) open it and name its failures.
 */

/** A state.db that exists but cannot be read now (busy, not a database, damaged). */
export class StateDbUnreadable extends Error {
  constructor(readonly busy: boolean) {
    super(busy ? 'state.db is busy' : 'state.db cannot be read');
    this.name = 'StateDbUnreadable';
  }
}

export const STATE_DB_BOUNDS = {
  /**
   * How long a read waits on a lock. Hermes' gateway is the only writer and, in WAL mode, never blocks
   * a reader; only a checkpoint or a store left in rollback mode does, briefly.
   */
  busyTimeoutMs: 2000,
} as const;

function errorCode(error: unknown): string {
  return typeof (error as { code?: unknown }).code === 'string' ? (error as { code: string }).code : '';
}

/** SQLite's failures as StateDbUnreadable (busy or not); anything else as it was. */
export function stateDbUnreadable(error: unknown): Error {
  const code = errorCode(error);
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) return new StateDbUnreadable(true);
  if (code.startsWith('SQLITE_')) return new StateDbUnreadable(false);
  return error instanceof Error ? error : new Error(String(error));
}

/**
 * The profile's store opened read only (never created), or null when it has none (a profile that has
 * not chatted yet). Throws StateDbUnreadable when the file is there but cannot be opened.
 */
export function openStateDbReadOnly(home: string): Database.Database | null {
  const file = path.join(home, 'state.db');
  if (!existsSync(file)) return null;
  try {
    return new Database(file, { readonly: true, fileMustExist: true, timeout: STATE_DB_BOUNDS.busyTimeoutMs });
  } catch (error) {
    if (errorCode(error) === 'SQLITE_CANTOPEN' && !existsSync(file)) return null;
    throw stateDbUnreadable(error);
  }
}

/** A table's column names (empty when the table is missing): Hermes' schema grows by version, so readers detect. */
export function tableColumns(db: Database.Database, table: 'sessions' | 'messages' | 'state_meta'): Set<string> {
  return new Set((db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[]).map((row) => row.name));
}
