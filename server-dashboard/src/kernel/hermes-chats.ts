import type Database from 'better-sqlite3';
import { openStateDbReadOnly, stateDbUnreadable, tableColumns } from './hermes-state-db.js';

/**
 * A profile's Hermes chats as a voice call finds and reads them (the seed, Apple Watch calls: Chats):
 * a search over the chats' titles and the user's and Hermes' words, newest first, and one chat's newest
 * messages. Read from the profile's own state.db, read only, so one profile's chats are never reached
 * from another's.
 */

/** One chat a search found. Times are Hermes' own: seconds since the epoch. */
export interface ChatMatch {
  id: string;
  /** Hermes' title, or null for a chat it never titled. */
  title: string | null;
  /** The chat's first words from the user, for a chat with no title (clipped). */
  opening: string | null;
  lastActiveAtS: number;
}

export interface ChatMessage {
  role: 'user' | 'assistant';
  text: string;
  /** Its place among the chat's user and Hermes messages from the first (0), as a summary's `covers` counts. */
  index: number;
}

/** A chat's newest messages, oldest first, and Conduit's stored summary of its start, if a voice call saved one. */
export interface ChatTranscript {
  title: string | null;
  messages: ChatMessage[];
  /** `covers` counts the chat's first user and Hermes messages the text stands for. */
  summary: { text: string; covers: number } | null;
}

export interface ChatSearchBounds {
  /** Chats one search answers. */
  maxChats: number;
  /** Words a query that matched nothing whole is tried by. */
  maxWords: number;
  /** The shortest word tried alone, in characters. */
  minWordChars: number;
  /** Characters of a chat's opening words kept. */
  openingChars: number;
}

export interface ChatReadBounds {
  /** The newest rows read of a chat. */
  maxRows: number;
  /** Characters of one message read; the rest is never loaded. */
  messageChars: number;
}

/**
 * Conduit's summary record of a saved voice call in Hermes' `state_meta` (the reference's key, which
 * features/voice-sessions writes): `{"text", "covers"}`.
 */
export function voiceSummaryKey(sessionId: string): string {
  return `conduit.voice.summary:${sessionId}`;
}

interface ChatColumns {
  active: boolean;
  fts: boolean;
  stateMeta: boolean;
}

/** Whether a store can be searched: Hermes' sessions and messages tables with the columns read here. */
function detect(db: Database.Database): ChatColumns | null {
  const sessions = tableColumns(db, 'sessions');
  const messages = tableColumns(db, 'messages');
  const needed = ['id', 'session_id', 'role', 'content', 'timestamp'];
  if (!sessions.has('id') || !sessions.has('title') || !needed.every((column) => messages.has(column))) return null;
  const fts = db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'messages_fts'").get() !== undefined;
  return { active: messages.has('active'), fts, stateMeta: tableColumns(db, 'state_meta').has('key') };
}

function withStore<T>(home: string, empty: T, read: (db: Database.Database, columns: ChatColumns) => T): T | null {
  const db = openStateDbReadOnly(home);
  // A profile that has not chatted yet has no store: nothing to find, which is not a failure.
  if (!db) return empty;
  try {
    const columns = detect(db);
    return columns ? read(db, columns) : null;
  } catch (error) {
    throw stateDbUnreadable(error);
  } finally {
    db.close();
  }
}

/** Whether the profile's chats can be searched here: no store yet, or one holding Hermes' tables. */
export function chatsSearchable(home: string): boolean {
  try {
    return withStore(home, true, () => true) === true;
  } catch {
    // A store busy at grant time is still Hermes' own; the search then answers its own failure.
    return true;
  }
}

/** An FTS5 phrase: the text in double quotes, inner quotes doubled, so nothing in it is query syntax. */
function ftsPhrase(text: string): string {
  return `"${text.replaceAll('"', '""')}"`;
}

function likePattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** Chats whose title or user and Hermes words hold `text`, newest first. */
function chatsHolding(
  db: Database.Database,
  columns: ChatColumns,
  text: string,
  bounds: ChatSearchBounds,
): ChatMatch[] {
  const active = columns.active ? 'AND (m.active IS NULL OR m.active != 0)' : '';
  // The full-text index when Hermes keeps one (a scan of every message otherwise); LIKE for titles,
  // which the index does not cover, and for stores made before Hermes indexed messages.
  const inMessages = columns.fts
    ? `SELECT m.session_id AS sid FROM messages_fts f JOIN messages m ON m.id = f.rowid
        WHERE messages_fts MATCH @phrase AND m.role IN ('user', 'assistant') ${active}`
    : `SELECT m.session_id AS sid FROM messages m
        WHERE m.content LIKE @like ESCAPE '\\' AND m.role IN ('user', 'assistant') ${active}`;
  const rows = db
    .prepare(
      `WITH hits(sid) AS (
         ${inMessages}
         UNION SELECT s.id FROM sessions s WHERE s.title LIKE @like ESCAPE '\\'
       )
       SELECT s.id AS id, s.title AS title,
              COALESCE((SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = s.id), s.started_at) AS last_active,
              (SELECT substr(m.content, 1, @openingChars) FROM messages m
                WHERE m.session_id = s.id AND m.role = 'user' ORDER BY m.id LIMIT 1) AS opening
         FROM sessions s JOIN hits ON hits.sid = s.id
        ORDER BY last_active DESC, s.id
        LIMIT @limit`,
    )
    .all({
      phrase: ftsPhrase(text),
      like: likePattern(text),
      openingChars: bounds.openingChars,
      limit: bounds.maxChats,
    }) as { id: unknown; title: unknown; last_active: unknown; opening: unknown }[];
  return rows.map((row) => ({
    id: String(row.id),
    title: typeof row.title === 'string' && row.title.trim() !== '' ? row.title.trim() : null,
    opening: typeof row.opening === 'string' ? row.opening.replace(/\s+/g, ' ').trim() : null,
    lastActiveAtS: typeof row.last_active === 'number' ? row.last_active : 0,
  }));
}

/**
 * The profile's chats matching `query`, newest first, at most `maxChats`. A query that matches nothing
 * as a whole is tried a word at a time (words of `minWordChars` or more, the first `maxWords`), as the
 * seed's search does, since a spoken query often holds words the chat never used together. Null when
 * the store is not Hermes' (no chats can be searched here).
 */
export function searchChats(home: string, query: string, bounds: ChatSearchBounds): ChatMatch[] | null {
  return withStore(home, [], (db, columns) => {
    const whole = chatsHolding(db, columns, query, bounds);
    if (whole.length > 0) return whole;
    const words = [...new Set(query.split(/\s+/).filter((word) => [...word].length >= bounds.minWordChars))].slice(
      0,
      bounds.maxWords,
    );
    const found = new Map<string, ChatMatch>();
    for (const word of words) {
      for (const match of chatsHolding(db, columns, word, bounds)) if (!found.has(match.id)) found.set(match.id, match);
    }
    return [...found.values()].sort((a, b) => b.lastActiveAtS - a.lastActiveAtS).slice(0, bounds.maxChats);
  });
}

function summaryOf(db: Database.Database, sessionId: string): { text: string; covers: number } | null {
  const row = db.prepare('SELECT value FROM state_meta WHERE key = ?').get(voiceSummaryKey(sessionId)) as
    { value: unknown } | undefined;
  if (typeof row?.value !== 'string') return null;
  let stored: unknown;
  try {
    stored = JSON.parse(row.value);
  } catch {
    return null;
  }
  if (typeof stored !== 'object' || stored === null) return null;
  const { text, covers } = stored as Record<string, unknown>;
  if (typeof text !== 'string' || text.trim() === '' || typeof covers !== 'number' || !Number.isInteger(covers)) {
    return null;
  }
  return covers > 0 ? { text: text.trim(), covers } : null;
}

/**
 * A chat's newest `maxRows` user and Hermes messages with text, oldest first, and a voice call's stored
 * summary. Null when the chat is not in the profile's store (gone since the search, or never there).
 */
export function readChat(home: string, sessionId: string, bounds: ChatReadBounds): ChatTranscript | null {
  const found = withStore<ChatTranscript | null>(home, null, (db, columns) => {
    const session = db.prepare('SELECT title FROM sessions WHERE id = ?').get(sessionId) as
      { title: unknown } | undefined;
    if (!session) return null;
    const active = columns.active ? 'AND (active IS NULL OR active != 0)' : '';
    const rows = db
      .prepare(
        `SELECT role, substr(content, 1, ?) AS text FROM messages
          WHERE session_id = ? AND role IN ('user', 'assistant') ${active}
          ORDER BY id DESC LIMIT ?`,
      )
      .all(bounds.messageChars, sessionId, bounds.maxRows) as { role: 'user' | 'assistant'; text: unknown }[];
    const total = db
      .prepare(`SELECT COUNT(*) AS n FROM messages WHERE session_id = ? AND role IN ('user', 'assistant') ${active}`)
      .get(sessionId) as { n: number };
    const first = total.n - rows.length;
    const messages = rows
      .reverse()
      .map((row, offset) => ({
        role: row.role,
        text: typeof row.text === 'string' ? row.text.trim() : '',
        index: first + offset,
      }))
      .filter((message) => message.text !== '');
    return {
      title: typeof session.title === 'string' && session.title.trim() !== '' ? session.title.trim() : null,
      messages,
      summary: columns.stateMeta ? summaryOf(db, sessionId) : null,
    };
  });
  return found ?? null;
}
