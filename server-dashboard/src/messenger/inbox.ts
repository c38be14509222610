/**
 * The durable inbox (PROTOCOL.md §5): `<state_dir>/inbox.sqlite3`, SQLite through better-sqlite3
 * directly (WAL, synchronous=FULL, foreign_keys=ON).
 *
 * Why not Prisma: the inbox lives in a per-account directory chosen at run time, must be opened
 * only after the binding checks, needs synchronous=FULL and one synchronous transaction per event
 * so the ACK can follow the commit on the same tick; better-sqlite3's synchronous transactions do
 * exactly that with no engine process or migration runner in between.
 *
 * Row states: pending → processing → dispatched → completed | ignored; a retry puts a row back to
 * pending. A row becomes processing when taken, dispatched just before it is handed to Hermes, and
 * is settled (completed/ignored) only when the turn that consumed it ends successfully. A reaction
 * for a backend without a reaction handler is `held` until the next turn in its chat carries it to
 * Hermes; that turn settles it.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { WebhookEnvelope } from '@conduit/contracts/messenger/envelope';
import {
  assertDirectoryIdentity,
  BINDING_FILE,
  bindingsEqual,
  bindStateDirectory,
  expectedBinding,
  MISMATCH_MESSAGE,
  readBindingFile,
  RelayStateBindingError,
  secureStateDirectory,
  type AccountBinding,
  type DirIdentity,
} from './state-binding.js';

export const INBOX_FILE = 'inbox.sqlite3';

export type EventStatus = 'pending' | 'processing' | 'dispatched' | 'held' | 'completed' | 'ignored';

export interface InboxRow {
  rowid: number;
  eventId: string;
  envelope: WebhookEnvelope;
  status: EventStatus;
  attemptCount: number;
  /** Hermes runs that ended failed/cancelled for this event; names the next run's Idempotency-Key. */
  failedTurns: number;
  lastError: string | null;
}

const ROW_COLUMNS = 'SELECT rowid, event_id, envelope_json, attempt_count, failed_turns, last_error FROM events';

interface StoredRow {
  rowid: number;
  event_id: string;
  envelope_json: string;
  attempt_count: number;
  failed_turns: number;
  last_error: string | null;
}

function inboxRow(r: StoredRow, status: EventStatus): InboxRow {
  return {
    rowid: r.rowid,
    eventId: r.event_id,
    envelope: JSON.parse(r.envelope_json) as WebhookEnvelope,
    status,
    attemptCount: r.attempt_count,
    failedTurns: r.failed_turns,
    lastError: r.last_error,
  };
}

export interface SnapshotChat {
  id: string;
  json: string;
}
export interface SnapshotMessage {
  id: string;
  chatId: string;
  json: string;
}

export interface FullSyncRecord {
  throughSequence: bigint;
  snapshotSha256: string;
  chatCount: number;
  messageCount: number;
}

export class InboxSequenceConflictError extends Error {
  override name = 'InboxSequenceConflictError';
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS events (
  event_id TEXT PRIMARY KEY,
  envelope_json TEXT NOT NULL,
  status TEXT NOT NULL,
  attempt_count INTEGER NOT NULL DEFAULT 0,
  failed_turns INTEGER NOT NULL DEFAULT 0,
  last_error TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_status ON events(status);
CREATE TABLE IF NOT EXISTS deliveries (
  sequence INTEGER PRIMARY KEY,
  event_id TEXT NOT NULL,
  accepted_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS snapshot_chats (chat_id TEXT PRIMARY KEY, chat_json TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS snapshot_messages (
  message_id TEXT PRIMARY KEY,
  chat_id TEXT NOT NULL REFERENCES snapshot_chats(chat_id) ON DELETE CASCADE,
  message_json TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS snapshot_messages_chat ON snapshot_messages(chat_id, message_id);
CREATE TABLE IF NOT EXISTS full_sync_state (
  singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
  through_sequence INTEGER NOT NULL,
  snapshot_sha256 TEXT NOT NULL,
  chat_count INTEGER NOT NULL,
  message_count INTEGER NOT NULL,
  committed_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS chat_sessions (chat_id TEXT PRIMARY KEY, generation INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS cron_deliveries (
  output_key TEXT PRIMARY KEY,
  chat_id TEXT,
  outcome TEXT NOT NULL,
  settled_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS cron_watch (singleton INTEGER PRIMARY KEY CHECK (singleton = 1), since_ms INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS relay_state_account (
  singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
  binding_schema TEXT NOT NULL,
  api_origin TEXT NOT NULL,
  token_fingerprint TEXT NOT NULL,
  account_fingerprint TEXT NOT NULL
);
`;

export interface OpenInboxOptions {
  stateDir: string;
  apiOrigin: string;
  agentToken: string;
  now?: () => Date;
  /** Open read-only for `status`/`backlog`: no requeue, no schema changes, no binding written. */
  readOnly?: boolean;
}

function hasUserTables(db: Database.Database): boolean {
  const row = db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table'").get() as { n: number };
  return row.n > 0;
}

/** Opens the database file with no-follow checks; returns the identity SQLite must also see. */
function checkDatabaseFile(file: string): { dev: number; ino: number } | null {
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') {
      // A dangling symlink also reports ENOENT through open(); lstat tells them apart.
      try {
        if (fs.lstatSync(file).isSymbolicLink()) throw new RelayStateBindingError(`${INBOX_FILE} is a symlink`);
      } catch (inner) {
        if (inner instanceof RelayStateBindingError) throw inner;
      }
      return null;
    }
    if (code === 'ELOOP') throw new RelayStateBindingError(`${INBOX_FILE} is a symlink`);
    throw err;
  }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile()) throw new RelayStateBindingError(`${INBOX_FILE} is not a regular file`);
    if (st.nlink !== 1) throw new RelayStateBindingError(`${INBOX_FILE} has other hard links`);
    const uid = typeof process.getuid === 'function' ? process.getuid() : null;
    if (uid !== null && st.uid !== uid) throw new RelayStateBindingError(`${INBOX_FILE} belongs to another user`);
    return { dev: st.dev, ino: st.ino };
  } finally {
    fs.closeSync(fd);
  }
}

export class Inbox {
  private readonly db: Database.Database;
  private readonly now: () => Date;
  private readonly binding: AccountBinding;
  private readonly dirIdentity: DirIdentity;
  private readonly dbIdentity: { dev: number; ino: number };
  readonly stateDir: string;
  readonly file: string;

  private constructor(
    db: Database.Database,
    stateDir: string,
    binding: AccountBinding,
    dirIdentity: DirIdentity,
    dbIdentity: { dev: number; ino: number },
    now: () => Date,
  ) {
    this.db = db;
    this.stateDir = stateDir;
    this.file = path.join(stateDir, INBOX_FILE);
    this.binding = binding;
    this.dirIdentity = dirIdentity;
    this.dbIdentity = dbIdentity;
    this.now = now;
  }

  /**
   * Opens (creating if new) the inbox of a state directory. Order matters: directory hardening,
   * binding file, database row, and only then the requeue of interrupted work.
   */
  static open(options: OpenInboxOptions): Inbox {
    const now = options.now ?? (() => new Date());
    const stateDir = path.resolve(options.stateDir);
    if (options.readOnly && !fs.existsSync(stateDir))
      throw new RelayStateBindingError('RELAY_STATE_DIR does not exist');
    const dirIdentity = secureStateDirectory(stateDir);
    const file = path.join(stateDir, INBOX_FILE);
    const expected = expectedBinding(options.apiOrigin, options.agentToken);
    const before = checkDatabaseFile(file);
    if (options.readOnly && before === null) throw new RelayStateBindingError('no Relay inbox in RELAY_STATE_DIR');
    const db = new Database(file, { readonly: options.readOnly === true, fileMustExist: options.readOnly === true });
    try {
      const after = checkDatabaseFile(file);
      if (after === null || (before !== null && (before.ino !== after.ino || before.dev !== after.dev))) {
        throw new RelayStateBindingError(`${INBOX_FILE} was replaced while opening`);
      }
      if (!options.readOnly) {
        fs.chmodSync(file, 0o600);
        db.pragma('journal_mode = WAL');
      }
      db.pragma('synchronous = FULL');
      db.pragma('foreign_keys = ON');
      db.pragma('busy_timeout = 5000');
      const fileState = options.readOnly
        ? 'matched'
        : bindStateDirectory(stateDir, expected, hasUserTables(db) && before !== null);
      if (options.readOnly) bindStateDirectoryReadOnly(stateDir, expected);
      if (!options.readOnly) db.exec(SCHEMA);
      const row = db
        .prepare(
          'SELECT binding_schema, api_origin, token_fingerprint, account_fingerprint FROM relay_state_account WHERE singleton = 1',
        )
        .get() as
        | { binding_schema: string; api_origin: string; token_fingerprint: string; account_fingerprint: string }
        | undefined;
      if (row === undefined) {
        if (fileState !== 'created' || options.readOnly) {
          throw new RelayStateBindingError(
            'the Relay inbox predates account binding; move it aside only after accounting for its pending work',
          );
        }
        db.prepare(
          'INSERT INTO relay_state_account (singleton, binding_schema, api_origin, token_fingerprint, account_fingerprint) VALUES (1, ?, ?, ?, ?)',
        ).run(expected.schema, expected.api_origin, expected.token_fingerprint, expected.account_fingerprint);
      } else {
        const stored: AccountBinding = {
          schema: row.binding_schema as AccountBinding['schema'],
          api_origin: row.api_origin,
          token_fingerprint: row.token_fingerprint,
          account_fingerprint: row.account_fingerprint,
        };
        if (!bindingsEqual(stored, expected)) throw new RelayStateBindingError(MISMATCH_MESSAGE);
      }
      const inbox = new Inbox(db, stateDir, expected, dirIdentity, after, now);
      if (!options.readOnly) inbox.requeueInterrupted();
      return inbox;
    } catch (err) {
      db.close();
      throw err;
    }
  }

  /** Re-asserts the directory, file and database binding; called before work is taken. */
  assertBound(): void {
    assertDirectoryIdentity(this.stateDir, this.dirIdentity);
    const st = fs.lstatSync(this.file);
    if (st.isSymbolicLink() || st.ino !== this.dbIdentity.ino || st.dev !== this.dbIdentity.dev) {
      throw new RelayStateBindingError(`${INBOX_FILE} was replaced while in use`);
    }
    const row = this.db
      .prepare('SELECT token_fingerprint, api_origin, account_fingerprint FROM relay_state_account')
      .get() as { token_fingerprint: string; api_origin: string; account_fingerprint: string } | undefined;
    if (row === undefined || !bindingsEqual({ ...this.binding, ...row, schema: this.binding.schema }, this.binding)) {
      throw new RelayStateBindingError(MISMATCH_MESSAGE);
    }
  }

  close(): void {
    this.db.close();
  }

  /**
   * Runs a state transition with synchronous=NORMAL. The commit that must be durable before the ACK
   * is the envelope's (acceptMany, always FULL). A transition lost in a crash only replays work:
   * processing/dispatched are requeued on open anyway, and a lost `completed` replays a turn whose
   * Hermes run and Relay sends carry the same Idempotency-Keys, so nobody sees it twice. WAL keeps
   * the order: the next FULL commit makes every earlier transition durable too. Without this, each
   * turn would block the event loop on three extra fsyncs.
   */
  private relaxed<T>(fn: () => T): T {
    // Cached statements: db.pragma() prepares a new statement on every call.
    this.sql('PRAGMA synchronous = NORMAL').run();
    try {
      return fn();
    } finally {
      this.sql('PRAGMA synchronous = FULL').run();
    }
  }

  private readonly statements = new Map<string, Database.Statement>();

  /** Prepared once per SQL text: preparing is a measurable share of a hot path's time. */
  private sql(text: string): Database.Statement {
    let stmt = this.statements.get(text);
    if (stmt === undefined) {
      stmt = this.db.prepare(text);
      this.statements.set(text, stmt);
    }
    return stmt;
  }

  private stamp(): string {
    return this.now().toISOString();
  }

  /** Interrupted work (processing/dispatched) returns to pending: at-least-once across restarts. */
  private requeueInterrupted(): number {
    const t = this.stamp();
    return this.db
      .prepare("UPDATE events SET status = 'pending', updated_at = ? WHERE status IN ('processing', 'dispatched')")
      .run(t).changes;
  }

  private readonly acceptTxn = (() => {
    let stmts:
      | {
          delivery: Database.Statement;
          insertEvent: Database.Statement;
          insertDelivery: Database.Statement;
        }
      | undefined;
    return (items: { sequence: bigint; envelope: WebhookEnvelope }[]): ('new' | 'duplicate')[] => {
      stmts ??= {
        delivery: this.sql('SELECT event_id FROM deliveries WHERE sequence = ?'),
        insertEvent: this.sql(
          "INSERT INTO events (event_id, envelope_json, status, attempt_count, created_at, updated_at) VALUES (?, ?, 'pending', 0, ?, ?) ON CONFLICT(event_id) DO NOTHING",
        ),
        insertDelivery: this.sql(
          'INSERT INTO deliveries (sequence, event_id, accepted_at) VALUES (?, ?, ?) ON CONFLICT(sequence) DO NOTHING',
        ),
      };
      const s = stmts;
      const t = this.stamp();
      const run = this.db.transaction(() =>
        items.map(({ sequence, envelope }) => {
          const existing = s.delivery.get(sequence) as { event_id: string } | undefined;
          if (existing !== undefined && existing.event_id !== envelope.event_id) {
            throw new InboxSequenceConflictError(`sequence ${sequence} was already delivered with another event`);
          }
          const inserted = s.insertEvent.run(envelope.event_id, JSON.stringify(envelope), t, t).changes;
          s.insertDelivery.run(sequence, envelope.event_id, t);
          return inserted === 1 ? ('new' as const) : ('duplicate' as const);
        }),
      );
      return run.immediate();
    };
  })();

  /**
   * Commits events (the complete envelope and its event id) with their sequences in ONE
   * transaction; the caller ACKs only after this returns. A replayed event id is a duplicate: it
   * is not stored twice but its sequence is recorded, so it is still acknowledged.
   */
  acceptMany(items: { sequence: bigint; envelope: WebhookEnvelope }[]): ('new' | 'duplicate')[] {
    return this.acceptTxn(items);
  }

  accept(sequence: bigint, envelope: WebhookEnvelope): 'new' | 'duplicate' {
    const [result] = this.acceptMany([{ sequence, envelope }]);
    return result ?? 'duplicate';
  }

  /** Whether a delivery with this sequence is committed (used by tests and diagnostics). */
  hasDelivery(sequence: bigint): boolean {
    return this.sql('SELECT 1 FROM deliveries WHERE sequence = ?').get(sequence) !== undefined;
  }

  /** The highest committed transport sequence (deliveries or a FULL sync), never decreasing. */
  checkpoint(): bigint {
    const d = this.sql('SELECT max(sequence) AS s FROM deliveries').safeIntegers(true).get() as {
      s: bigint | null;
    };
    const f = this.sql('SELECT through_sequence AS s FROM full_sync_state').safeIntegers(true).get() as
      { s: bigint } | undefined;
    const a = d.s ?? 0n;
    const b = f?.s ?? 0n;
    return a > b ? a : b;
  }

  /** Built once: better-sqlite3 wraps the function anew on every db.transaction() call. */
  private takeTxn: Database.Transaction<() => InboxRow | null> | undefined;

  /** Takes the oldest pending row: pending → processing, attempt_count + 1. */
  nextPending(): InboxRow | null {
    this.takeTxn ??= this.db.transaction((): InboxRow | null => {
      const row = this.sql(`${ROW_COLUMNS} WHERE status = 'pending' ORDER BY rowid LIMIT 1`).get() as
        StoredRow | undefined;
      if (row === undefined) return null;
      this.sql(
        "UPDATE events SET status = 'processing', attempt_count = attempt_count + 1, updated_at = ? WHERE rowid = ?",
      ).run(this.stamp(), row.rowid);
      return inboxRow({ ...row, attempt_count: row.attempt_count + 1 }, 'processing');
    });
    const take = this.takeTxn;
    return this.relaxed(() => take.immediate());
  }

  private setStatus(eventIds: string[], status: EventStatus, from: EventStatus[], lastError?: string): void {
    const placeholders = from.map(() => '?').join(',');
    const stmt = this.sql(
      `UPDATE events SET status = ?, updated_at = ?, last_error = coalesce(?, last_error) WHERE event_id = ? AND status IN (${placeholders})`,
    );
    const t = this.stamp();
    this.relaxed(() =>
      this.db.transaction(() => {
        for (const id of eventIds) stmt.run(status, t, lastError ?? null, id, ...from);
      })(),
    );
  }

  /** Set before the event is handed to Hermes, so a crash after hand-off is visible. */
  /** How many times `/new` started this chat over (0: its first Hermes session). */
  sessionGeneration(chatId: string): number {
    const row = this.sql('SELECT generation FROM chat_sessions WHERE chat_id = ?').get(chatId) as
      { generation: number } | undefined;
    return row?.generation ?? 0;
  }

  /** `/new`: the chat's next turn starts a new Hermes session. Returns the new generation. */
  startNewSession(chatId: string): number {
    const next = this.sessionGeneration(chatId) + 1;
    this.sql(
      'INSERT INTO chat_sessions (chat_id, generation) VALUES (?, ?) ON CONFLICT(chat_id) DO UPDATE SET generation = excluded.generation',
    ).run(chatId, next);
    return next;
  }

  /** Whether a cron output (`<job id>/<file>`) was already delivered or settled without a send. */
  cronOutputSettled(outputKey: string): boolean {
    return this.sql('SELECT 1 FROM cron_deliveries WHERE output_key = ?').get(outputKey) !== undefined;
  }

  /** Records a cron output as done (`sent`, `silent`, `refused`, `predates`, `no_home_chat`): never sent again. */
  settleCronOutput(outputKey: string, chatId: string | null, outcome: string): void {
    this.sql(
      'INSERT INTO cron_deliveries (output_key, chat_id, outcome, settled_at) VALUES (?, ?, ?, ?) ON CONFLICT(output_key) DO NOTHING',
    ).run(outputKey, chatId, outcome, this.stamp());
  }

  /**
   * When this inbox first watched cron outputs (epoch ms). Outputs older than that are history, not
   * news: the first start must not flood the home chat with every report the profile ever wrote.
   */
  cronWatchSince(nowMs: number): number {
    this.sql('INSERT INTO cron_watch (singleton, since_ms) VALUES (1, ?) ON CONFLICT(singleton) DO NOTHING').run(nowMs);
    return (this.sql('SELECT since_ms FROM cron_watch').get() as { since_ms: number }).since_ms;
  }

  markDispatched(eventId: string): void {
    this.setStatus([eventId], 'dispatched', ['processing']);
  }

  /** Settles rows consumed by a turn that ended successfully. */
  complete(eventIds: string[]): void {
    this.setStatus(eventIds, 'completed', ['processing', 'dispatched', 'pending', 'held']);
  }

  /** A reaction that waits for the next turn in its chat (not requeued on open: it is not work). */
  hold(eventId: string): void {
    this.setStatus([eventId], 'held', ['processing']);
  }

  /**
   * Held reactions of `chatId` that arrived before the row `beforeRowid`, oldest first, at most
   * `limit`. The set depends only on what is stored, so a turn replayed after a crash carries the
   * same reactions (and posts the same run body) as the attempt it replays.
   */
  heldReactionsBefore(beforeRowid: number, chatId: string, limit: number): InboxRow[] {
    const rows = this.sql(
      `${ROW_COLUMNS} WHERE status = 'held' AND rowid < ? AND json_extract(envelope_json, '$.data.chat_id') = ? ORDER BY rowid LIMIT ?`,
    ).all(beforeRowid, chatId, limit) as StoredRow[];
    return rows.map((r) => inboxRow(r, 'held'));
  }

  ignore(eventId: string, reason: string): void {
    this.setStatus([eventId], 'ignored', ['processing', 'dispatched', 'pending'], reason.slice(0, 500));
  }

  /**
   * A failed attempt: back to pending with the reason (first 500 characters). `turnFailed` says
   * Hermes itself ended the run failed, so the next attempt must be a new run, not a replay of it.
   */
  retry(eventId: string, reason: string, turnFailed = false): void {
    this.relaxed(() =>
      this.sql(
        "UPDATE events SET status = 'pending', updated_at = ?, last_error = ?, failed_turns = failed_turns + ? WHERE event_id = ? AND status IN ('processing', 'dispatched')",
      ).run(this.stamp(), reason.slice(0, 500), turnFailed ? 1 : 0, eventId),
    );
  }

  status(eventId: string): EventStatus | null {
    const row = this.sql('SELECT status FROM events WHERE event_id = ?').get(eventId) as
      { status: EventStatus } | undefined;
    return row?.status ?? null;
  }

  /** The reason recorded with the row's last ignore or retry (null when none was). */
  reason(eventId: string): string | null {
    const row = this.sql('SELECT last_error FROM events WHERE event_id = ?').get(eventId) as
      { last_error: string | null } | undefined;
    return row?.last_error ?? null;
  }

  backlog(): Record<EventStatus, number> & { oldestPendingAt: string | null } {
    const counts: Record<EventStatus, number> = {
      pending: 0,
      processing: 0,
      dispatched: 0,
      held: 0,
      completed: 0,
      ignored: 0,
    };
    for (const r of this.sql('SELECT status, count(*) AS n FROM events GROUP BY status').all() as {
      status: EventStatus;
      n: number;
    }[]) {
      counts[r.status] = r.n;
    }
    const oldest = this.db
      .prepare("SELECT min(created_at) AS t FROM events WHERE status IN ('pending','processing','dispatched')")
      .get() as { t: string | null };
    return { ...counts, oldestPendingAt: oldest.t };
  }

  /** Pending rows in arrival order (for the CLI backlog listing). */
  pendingRows(limit: number): { eventId: string; eventType: string; status: EventStatus; attemptCount: number }[] {
    return (
      this.db
        .prepare(
          "SELECT event_id, envelope_json, status, attempt_count FROM events WHERE status IN ('pending','processing','dispatched') ORDER BY rowid LIMIT ?",
        )
        .all(limit) as { event_id: string; envelope_json: string; status: EventStatus; attempt_count: number }[]
    ).map((r) => ({
      eventId: r.event_id,
      eventType: (JSON.parse(r.envelope_json) as WebhookEnvelope).event_type,
      status: r.status,
      attemptCount: r.attempt_count,
    }));
  }

  /**
   * Replaces the FULL-sync snapshot and records `through_sequence` in ONE transaction: a crash
   * part-way leaves the previous snapshot and checkpoint exactly as they were.
   */
  replaceSnapshot(
    record: FullSyncRecord,
    chats: SnapshotChat[],
    messages: SnapshotMessage[],
    beforeCommit?: () => void,
  ): void {
    const t = this.stamp();
    this.db
      .transaction(() => {
        this.sql('DELETE FROM snapshot_messages').run();
        this.sql('DELETE FROM snapshot_chats').run();
        const c = this.sql('INSERT INTO snapshot_chats (chat_id, chat_json) VALUES (?, ?)');
        for (const chat of chats) c.run(chat.id, chat.json);
        const m = this.sql('INSERT INTO snapshot_messages (message_id, chat_id, message_json) VALUES (?, ?, ?)');
        for (const msg of messages) m.run(msg.id, msg.chatId, msg.json);
        this.db
          .prepare(
            `INSERT INTO full_sync_state (singleton, through_sequence, snapshot_sha256, chat_count, message_count, committed_at)
             VALUES (1, ?, ?, ?, ?, ?)
             ON CONFLICT(singleton) DO UPDATE SET through_sequence = excluded.through_sequence,
               snapshot_sha256 = excluded.snapshot_sha256, chat_count = excluded.chat_count,
               message_count = excluded.message_count, committed_at = excluded.committed_at`,
          )
          .run(record.throughSequence, record.snapshotSha256, record.chatCount, record.messageCount, t);
        beforeCommit?.();
      })
      .immediate();
  }

  fullSyncState(): FullSyncRecord | null {
    const row = this.db
      .prepare('SELECT through_sequence, snapshot_sha256, chat_count, message_count FROM full_sync_state')
      .safeIntegers(true)
      .get() as
      { through_sequence: bigint; snapshot_sha256: string; chat_count: bigint; message_count: bigint } | undefined;
    if (row === undefined) return null;
    return {
      throughSequence: row.through_sequence,
      snapshotSha256: row.snapshot_sha256,
      chatCount: Number(row.chat_count),
      messageCount: Number(row.message_count),
    };
  }

  snapshotChats(): unknown[] {
    return (this.sql('SELECT chat_json FROM snapshot_chats ORDER BY chat_id').all() as { chat_json: string }[]).map(
      (r) => JSON.parse(r.chat_json) as unknown,
    );
  }

  snapshotMessages(): unknown[] {
    return (
      this.sql('SELECT message_json FROM snapshot_messages ORDER BY message_id').all() as {
        message_json: string;
      }[]
    ).map((r) => JSON.parse(r.message_json) as unknown);
  }
}

function bindStateDirectoryReadOnly(dir: string, expected: AccountBinding): void {
  const found = readBindingFile(path.join(dir, BINDING_FILE));
  if (found === null) throw new RelayStateBindingError('RELAY_STATE_DIR has no account binding');
  if (!bindingsEqual(found, expected)) throw new RelayStateBindingError(MISMATCH_MESSAGE);
}
