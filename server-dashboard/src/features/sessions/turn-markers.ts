import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import Database from 'better-sqlite3';
import { pidLiveness } from './process-liveness.js';

/**
 * Hermes' turn markers (`tui_gateway.turn_marker`): Desktop and the TUI record a turn in
 * `<profile home>/desktop/interrupted_turns.json` when it starts and clear it when it concludes, as
 * `{"<session key>": {"prompt", "started_at", "attempts", "auto_continue", "writer_pid",
 * "writer_start_time"}}` (rewritten atomically, deleted when empty). A marker names its writer so a
 * reader can tell a running turn from one a dead process left behind (`marker_writer_state`).
 */
export function markerFile(home: string): string {
  return path.join(home, 'desktop', 'interrupted_turns.json');
}

/** The markers by session key; null when the file exists but cannot be read (which counts as running). */
export type TurnMarkers = Record<string, unknown> | null;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export async function readTurnMarkers(home: string): Promise<TurnMarkers> {
  let text: string;
  try {
    text = await readFile(markerFile(home), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    return null;
  }
  try {
    const data: unknown = JSON.parse(text);
    return isRecord(data) ? data : null;
  } catch {
    return null;
  }
}

/**
 * Whether this Hermes keeps its turn markers somewhere this host doesn't read: newer Hermes moved them
 * into state.db's `interrupted_turns` table and renames the old file to `interrupted_turns.json.migrated`
 * once imported. Reading only the old file there would miss running turns, so takeover is unsupported.
 * Throws when state.db exists but can't be opened (where markers live is then unknown).
 */
export function markersMovedAway(home: string): boolean {
  if (existsSync(`${markerFile(home)}.migrated`)) return true;
  const store = path.join(home, 'state.db');
  if (!existsSync(store)) return false;
  const db = new Database(store, { readonly: true, fileMustExist: true, timeout: 2000 });
  try {
    return (
      db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'interrupted_turns'").get() !== undefined
    );
  } finally {
    db.close();
  }
}

/** What a marker's writer is: `marker_writer_state`, with no writer named as its own answer. */
async function writerState(entry: Record<string, unknown>): Promise<'alive' | 'dead' | 'unknown' | 'unnamed'> {
  const pid = entry.writer_pid;
  if (pid === undefined || pid === null) return 'unnamed';
  if (typeof pid !== 'number' || !Number.isInteger(pid) || pid <= 0) return 'unknown';
  return pidLiveness(pid, entry.writer_start_time);
}

/** Hermes' own reader ignores an entry without a prompt: it is no turn at all. */
function hasPrompt(entry: Record<string, unknown>): boolean {
  const prompt = entry.prompt;
  if (prompt === undefined || prompt === null || prompt === false || prompt === 0 || prompt === '') return false;
  return String(prompt).trim() !== '';
}

/** Fields a marker must carry as numbers; a marker whose fields don't read is not evidence the turn ended. */
function readable(entry: Record<string, unknown>): boolean {
  const number = (v: unknown) => v === undefined || v === null || (typeof v === 'number' && Number.isFinite(v));
  return number(entry.started_at) && number(entry.attempts);
}

/**
 * The seed's marker rule for one chat (its stored and live ids): a turn is running unless every marker
 * for it is provably over. A file that can't be read, an entry of another shape and a writer whose
 * liveness is unknown all count as running; a writer that is provably dead (gone, or its pid now another
 * process) is ignored, and so is a marker naming no writer once the chat's claim owners are all gone.
 * An isolated turn runs in a child process, so a marker's writer need not be the claim's owner.
 */
export async function turnRunning(markers: TurnMarkers, ids: readonly string[], ownersGone: boolean): Promise<boolean> {
  if (markers === null) return true;
  for (const id of ids) {
    if (!Object.hasOwn(markers, id)) continue;
    const entry = markers[id];
    if (!isRecord(entry)) return true;
    if (!hasPrompt(entry)) continue;
    if (!readable(entry)) return true;
    const writer = await writerState(entry);
    if (writer === 'dead') continue;
    if (writer === 'unnamed' && ownersGone) continue;
    return true;
  }
  return false;
}
