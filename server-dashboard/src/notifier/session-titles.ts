import { existsSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';

/**
 * A session's title from the profile's Hermes `state.db`, opened read-only (Hermes' gateway is its
 * only writer; WAL makes a concurrent read safe). Null when the store, the table or the row is
 * missing, which leaves the notification's generic copy.
 */
export function readSessionTitle(home: string, sessionId: string): string | null {
  const file = path.join(home, 'state.db');
  if (!existsSync(file)) return null;
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const row: unknown = db.prepare('SELECT title FROM sessions WHERE id = ?').get(sessionId);
    if (row && typeof row === 'object' && 'title' in row && typeof row.title === 'string') return row.title;
    return null;
  } catch {
    return null;
  } finally {
    db.close();
  }
}
