import type Database from 'better-sqlite3';
import { openStateDbReadOnly, stateDbUnreadable as unreadable, tableColumns } from '../../kernel/hermes-state-db.js';
import type { StoredMessage } from './message-artifacts.js';

export { StateDbUnreadable } from '../../kernel/hermes-state-db.js';

/** How much of the store one read takes in (the lock wait is the kernel's, kernel/hermes-state-db.ts). */
const BOUNDS = {
  /** The most of one message's text (or tool calls) read: tags sit near the ends of replies, not in megabytes. */
  messageChars: 256 * 1024,
  /**
   * The most of a tool result read. Results name the file they made in their first fields; the rest is
   * what the tool returned (a fetched page, a file's text), which can be large and holds no artifact.
   */
  toolResultChars: 16 * 1024,
  /** Sessions one chat's lineage may span; a longer chain is cut rather than read whole. */
  lineageMax: 256,
  /** Parent links followed up or down from the chat's ids (a cycle in damaged data ends here too). */
  lineageDepth: 64,
} as const;

/** Which of the columns this feature reads the store has: Hermes' schema grows by version (SURFACES.md §4). */
interface Columns {
  toolCalls: boolean;
  toolName: boolean;
  active: boolean;
  title: boolean;
  parent: boolean;
  cwd: boolean;
  sessions: boolean;
}

/** The filter every read of one request shares: the chat's sessions, or every session. */
export interface MessageScope {
  /** Session ids to read, or null for every session. */
  sessionIds: string[] | null;
}

/**
 * A profile's Hermes state.db opened read only (`file:…?mode=ro`): Hermes' gateway owns every write.
 * Columns are detected with PRAGMA table_info, so older and newer schemas read the same way.
 */
export class HermesStateDb {
  private constructor(
    private readonly db: Database.Database,
    private readonly columns: Columns | null,
  ) {}

  /** The profile's store, or null when it has none (a profile that has not chatted yet). */
  static open(home: string): HermesStateDb | null {
    const db = openStateDbReadOnly(home);
    if (!db) return null;
    try {
      return new HermesStateDb(db, HermesStateDb.detect(db));
    } catch (error) {
      db.close();
      throw unreadable(error);
    }
  }

  private static detect(db: Database.Database): Columns | null {
    const names = (table: 'sessions' | 'messages') => tableColumns(db, table);
    const messages = names('messages');
    // Not Hermes' store (or an empty file): nothing to list rather than an error.
    if (!['id', 'session_id', 'role', 'content', 'timestamp'].every((column) => messages.has(column))) return null;
    const sessions = names('sessions');
    const hasSessions = sessions.has('id');
    return {
      toolCalls: messages.has('tool_calls'),
      toolName: messages.has('tool_name'),
      active: messages.has('active'),
      sessions: hasSessions,
      title: hasSessions && sessions.has('title'),
      parent: hasSessions && sessions.has('parent_session_id'),
      cwd: hasSessions && sessions.has('cwd'),
    };
  }

  /** Whether the file holds Hermes' messages table at all. */
  get hasMessages(): boolean {
    return this.columns !== null;
  }

  close(): void {
    this.db.close();
  }

  /**
   * The chat the ids name, whole: each id, the sessions it continues from (parent_session_id up to
   * the root) and every session spawned below those (continuations after compression, subagents).
   * The ids themselves are kept even when no session row has them (a live id not stored yet).
   */
  lineage(ids: readonly string[]): string[] {
    const found = new Set(ids);
    if (!this.columns?.parent) return [...found];
    const marks = ids.map(() => '?').join(',');
    try {
      const rows = this.db
        .prepare(
          `WITH RECURSIVE
             up(id, depth) AS (
               SELECT id, 0 FROM sessions WHERE id IN (${marks})
               UNION
               SELECT s.parent_session_id, up.depth + 1 FROM sessions s JOIN up ON s.id = up.id
                WHERE s.parent_session_id IS NOT NULL AND s.parent_session_id != '' AND up.depth < ${BOUNDS.lineageDepth}
             ),
             down(id, depth) AS (
               SELECT id, 0 FROM up
               UNION
               SELECT s.id, down.depth + 1 FROM sessions s JOIN down ON s.parent_session_id = down.id
                WHERE down.depth < ${BOUNDS.lineageDepth}
             )
           SELECT DISTINCT id FROM down LIMIT ${BOUNDS.lineageMax}`,
        )
        .all(...ids) as { id: string }[];
      for (const row of rows) if (typeof row.id === 'string') found.add(row.id);
    } catch (error) {
      throw unreadable(error);
    }
    return [...found].slice(0, BOUNDS.lineageMax + ids.length);
  }

  private where(scope: MessageScope): { sql: string; params: string[] } {
    const clauses = ['m.id < ?', "m.role IN ('assistant', 'user', 'tool')"];
    const params: string[] = [];
    if (scope.sessionIds) {
      clauses.push(`m.session_id IN (${scope.sessionIds.map(() => '?').join(',')})`);
      params.push(...scope.sessionIds);
    }
    // A superseded row (an edited message, a regenerated reply) is not part of the chat any more.
    if (this.columns?.active) clauses.push('(m.active IS NULL OR m.active != 0)');
    return { sql: clauses.join(' AND '), params };
  }

  /** Up to `count` messages older than `before`, newest first. */
  messagesBefore(scope: MessageScope, before: number, count: number): StoredMessage[] {
    const columns = this.columns;
    if (!columns || count <= 0) return [];
    const { sql, params } = this.where(scope);
    const joined = columns.sessions;
    const select = [
      'm.id AS id',
      'm.session_id AS session_id',
      'm.role AS role',
      `CASE WHEN m.role = 'tool' THEN substr(m.content, 1, ${BOUNDS.toolResultChars})
            ELSE substr(m.content, 1, ${BOUNDS.messageChars}) END AS content`,
      columns.toolCalls ? `substr(m.tool_calls, 1, ${BOUNDS.messageChars}) AS tool_calls` : 'NULL AS tool_calls',
      columns.toolName ? 'm.tool_name AS tool_name' : 'NULL AS tool_name',
      'm.timestamp AS timestamp',
      columns.title ? 's.title AS title' : 'NULL AS title',
      columns.cwd ? 's.cwd AS cwd' : 'NULL AS cwd',
    ].join(', ');
    try {
      const rows = this.db
        .prepare(
          `SELECT ${select} FROM messages m ${joined ? 'LEFT JOIN sessions s ON s.id = m.session_id' : ''}
            WHERE ${sql} ORDER BY m.id DESC LIMIT ?`,
        )
        .all(before, ...params, count) as Record<string, unknown>[];
      return rows.map(storedMessage);
    } catch (error) {
      throw unreadable(error);
    }
  }

  /** Whether any message older than `before` is left to read. */
  hasOlder(scope: MessageScope, before: number): boolean {
    if (!this.columns) return false;
    const { sql, params } = this.where(scope);
    try {
      return this.db.prepare(`SELECT 1 FROM messages m WHERE ${sql} LIMIT 1`).get(before, ...params) !== undefined;
    } catch (error) {
      throw unreadable(error);
    }
  }
}

function text(value: unknown): string | null {
  if (typeof value === 'string') return value;
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  return null;
}

function storedMessage(row: Record<string, unknown>): StoredMessage {
  return {
    id: Number(row.id),
    sessionId: String(row.session_id ?? ''),
    role: String(row.role ?? ''),
    content: text(row.content),
    toolCalls: text(row.tool_calls),
    toolName: text(row.tool_name),
    timestamp: typeof row.timestamp === 'number' && Number.isFinite(row.timestamp) ? row.timestamp : null,
    sessionTitle: text(row.title),
    cwd: text(row.cwd),
  };
}
