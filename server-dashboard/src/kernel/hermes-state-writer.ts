import { existsSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';

/**
 * The profile's Hermes session store (`<home>/state.db`, spec/hermes/SURFACES.md §4) as the voice
 * routes write it: the few `hermes_state.SessionDB` methods the reference calls (`get_meta`, `set_meta`,
 * `get_session`, `ensure_session`, `set_session_title`, `append_messages_batch`, `end_session`), done as the SQL Hermes runs, inside one `BEGIN IMMEDIATE` transaction per request
 * as Hermes' own `_execute_write` does.
 *
 * The schema drifts across Hermes versions, so the columns are read with `PRAGMA table_info` on every
 * open: a column this code fills must exist, a column it does not fill must have a default (or allow
 * NULL), and anything else is a store this code cannot write correctly (501, never a guess).
 *
 * In the kernel because two features write Conduit's records through it: the voice transcripts routes
 * (features/voice-sessions) and the Watch's jobs, filed under Voice Jobs (kernel/voice-tags.ts). The
 * read-only opener every reader uses is kernel/hermes-state-db.ts.
 */

/** The store lacks a table or column a route needs: `This Hermes version can't store voice transcripts`. */
export class UnsupportedStoreError extends Error {
  constructor(readonly missing: string) {
    super(`state.db lacks ${missing}`);
    this.name = 'UnsupportedStoreError';
  }
}

/** Hermes' `CompressionSessionClosedError`: compaction ended this row, so it takes no more turns. */
export class CompressionSessionClosedError extends Error {
  constructor() {
    super('the session was closed by compression');
    this.name = 'CompressionSessionClosedError';
  }
}

/** Hermes' `CompressionSessionBusyError`: a compaction holds the row's lock right now. */
export class CompressionSessionBusyError extends Error {
  constructor() {
    super('the session is being compressed');
    this.name = 'CompressionSessionBusyError';
  }
}

/** What a route reads or writes; each opens only what it uses, so a read works on a store without writers. */
export type StoreNeed = 'meta' | 'sessions' | 'messages';

/** A session row's fields these routes read. */
export interface SessionRow {
  id: string;
  source: string | null;
  title: string | null;
  end_reason: string | null;
}

/** One message row as a voice turn becomes: Hermes' `role`, `content` and `timestamp`. */
export interface MessageInsert {
  role: 'user' | 'assistant';
  content: string;
  /** Unix seconds. */
  timestamp: number;
}

interface Column {
  name: string;
  notnull: number;
  dflt_value: unknown;
  pk: number;
}

/** The columns each need must find, and the optional ones filled when present. */
const REQUIRED: Record<StoreNeed, { table: string; columns: readonly string[] }> = {
  meta: { table: 'state_meta', columns: ['key', 'value'] },
  sessions: { table: 'sessions', columns: ['id', 'source', 'started_at', 'end_reason'] },
  messages: { table: 'messages', columns: ['session_id', 'role', 'content', 'timestamp'] },
};
/** Filled when the store has them: Hermes added them over time, and a store without them still works. */
const OPTIONAL: Record<StoreNeed, readonly string[]> = {
  meta: [],
  sessions: ['ended_at', 'message_count', 'title'],
  messages: [],
};

/** Hermes' end_reason for a row that compaction closed (`_ended_by_compression`). */
const COMPRESSION_END_REASON = 'compression';

/** A SQLite lock a retry can outlast: another connection holds the write lock, or a commit is under way. */
export function isLockError(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED'));
}

export function stateDbPath(home: string): string {
  return path.join(home, 'state.db');
}

/**
 * One open connection to a profile's state.db. `open` returns null when Hermes has not created the file:
 * this code never creates Hermes' store (its schema, FTS layout and journal mode are Hermes' to choose).
 */
export class HermesStateDb {
  private readonly columns = new Map<string, Set<string>>();

  private constructor(
    private readonly db: Database.Database,
    private readonly needs: readonly StoreNeed[],
  ) {}

  /**
   * Opens the store with a busy timeout of `lockWaitMs`: how long one statement waits for another
   * writer's lock before failing with SQLITE_BUSY (the caller retries within its budget). The journal
   * mode is left as Hermes set it (WAL, or DELETE on a filesystem without WAL): switching it under
   * Hermes' open connections is what Hermes itself refuses to do.
   */
  static open(home: string, needs: readonly StoreNeed[], lockWaitMs: number): HermesStateDb | null {
    const file = stateDbPath(home);
    if (!existsSync(file)) return null;
    const db = new Database(file, { fileMustExist: true, timeout: lockWaitMs });
    try {
      // Hermes' own connections enforce messages.session_id → sessions(id); ours do too.
      db.pragma('foreign_keys = ON');
      return new HermesStateDb(db, needs);
    } catch (error) {
      db.close();
      throw error;
    }
  }

  /**
   * Reads the live schema and refuses one this code cannot write. Run at the start of each attempt (a
   * Hermes update may have migrated the store since), inside the transaction for a write.
   */
  checkSchema(): void {
    this.columns.clear();
    for (const need of this.needs) {
      const { table, columns } = REQUIRED[need];
      const live = this.db.prepare(`PRAGMA table_info("${table}")`).all() as Column[];
      if (live.length === 0) throw new UnsupportedStoreError(`the ${table} table`);
      const names = new Set(live.map((column) => column.name));
      for (const column of columns) {
        if (!names.has(column)) throw new UnsupportedStoreError(`${table}.${column}`);
      }
      if (need !== 'meta') {
        // A later Hermes may add a NOT NULL column without a default: a row without it is one Hermes
        // would never write, so refusing beats inserting something Hermes cannot read back.
        const filled = new Set([...columns, ...OPTIONAL[need]]);
        const unfillable = live.find(
          (column) => column.notnull && column.dflt_value === null && !column.pk && !filled.has(column.name),
        );
        if (unfillable) throw new UnsupportedStoreError(`a value for ${table}.${unfillable.name}`);
      }
      this.columns.set(table, names);
    }
  }

  /** `fn` inside `BEGIN IMMEDIATE … COMMIT`, rolled back when it throws (Hermes' `_execute_write`). */
  immediate<T>(fn: () => T): T {
    this.db.exec('BEGIN IMMEDIATE');
    try {
      const result = fn();
      this.db.exec('COMMIT');
      return result;
    } catch (error) {
      if (this.db.inTransaction) this.db.exec('ROLLBACK');
      throw error;
    }
  }

  close(): void {
    this.db.close();
  }

  private has(table: string, column: string): boolean {
    return this.columns.get(table)?.has(column) ?? false;
  }

  getMeta(key: string): string | null {
    const row = this.db.prepare('SELECT value FROM state_meta WHERE key = ?').get(key) as
      { value: unknown } | undefined;
    return typeof row?.value === 'string' ? row.value : null;
  }

  setMeta(key: string, value: string): void {
    this.db
      .prepare(
        'INSERT INTO state_meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value',
      )
      .run(key, value);
  }

  deleteMeta(key: string): void {
    this.db.prepare('DELETE FROM state_meta WHERE key = ?').run(key);
  }

  getSession(id: string): SessionRow | null {
    const title = this.has('sessions', 'title') ? 'title' : 'NULL AS title';
    const row = this.db.prepare(`SELECT id, source, ${title}, end_reason FROM sessions WHERE id = ?`).get(id) as
      SessionRow | undefined;
    return row ?? null;
  }

  /** `ensure_session(id, source=…)`: the row with no model, unless it already exists. */
  ensureSession(id: string, source: string, startedAtS: number): void {
    this.db
      .prepare('INSERT OR IGNORE INTO sessions (id, source, started_at) VALUES (?, ?, ?)')
      .run(id, source, startedAtS);
  }

  /**
   * `set_session_title`: false when another row holds the title (titles are unique per store, Hermes'
   * `idx_sessions_title_unique`) or the store has no titles.
   */
  setTitle(id: string, title: string): boolean {
    if (!this.has('sessions', 'title')) return false;
    const holder = this.db.prepare('SELECT id FROM sessions WHERE title = ? AND id != ?').get(title, id);
    if (holder) return false;
    try {
      this.db.prepare('UPDATE sessions SET title = ? WHERE id = ?').run(title, id);
      return true;
    } catch (error) {
      // A title index the SELECT above cannot see (a case-insensitive one, say): still a clash.
      if ((error as { code?: unknown }).code === 'SQLITE_CONSTRAINT_UNIQUE') return false;
      throw error;
    }
  }

  /**
   * `append_messages_batch`: Hermes' write guards, then the rows, then the session's message_count, in
   * the caller's transaction. Hermes' own FTS triggers index each row as it is inserted.
   */
  appendMessages(sessionId: string, messages: readonly MessageInsert[], nowS: number): void {
    this.checkCompression(sessionId, nowS);
    const insert = this.db.prepare('INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, ?, ?, ?)');
    for (const message of messages) insert.run(sessionId, message.role, message.content, message.timestamp);
    if (this.has('sessions', 'message_count')) {
      this.db
        .prepare('UPDATE sessions SET message_count = COALESCE(message_count, 0) + ? WHERE id = ?')
        .run(messages.length, sessionId);
    }
  }

  /**
   * Hermes' guards on a transcript write: a row compaction closed never takes appends again (422); a
   * compaction still running (its `compression_locks` lease unexpired) answers busy (409), so the turns
   * are retried instead of racing the summary.
   */
  private checkCompression(sessionId: string, nowS: number): void {
    const row = this.db.prepare('SELECT end_reason FROM sessions WHERE id = ?').get(sessionId) as
      { end_reason: unknown } | undefined;
    if (row?.end_reason === COMPRESSION_END_REASON) throw new CompressionSessionClosedError();
    const locks = this.db.prepare(`PRAGMA table_info("compression_locks")`).all() as Column[];
    const names = new Set(locks.map((column) => column.name));
    if (!names.has('session_id') || !names.has('expires_at')) return;
    const lease = this.db
      .prepare('SELECT 1 FROM compression_locks WHERE session_id = ? AND expires_at > ?')
      .get(sessionId, nowS);
    if (lease) throw new CompressionSessionBusyError();
  }

  /** `end_session(id, reason)`: the first end wins, so a later save of the same call changes nothing. */
  endSession(id: string, reason: string, nowS: number): void {
    if (this.has('sessions', 'ended_at')) {
      this.db
        .prepare('UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ? AND ended_at IS NULL')
        .run(nowS, reason, id);
    } else {
      this.db.prepare('UPDATE sessions SET end_reason = ? WHERE id = ? AND end_reason IS NULL').run(reason, id);
    }
  }
}
