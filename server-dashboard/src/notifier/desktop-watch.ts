import { promises as fs } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';

/**
 * `<hermes home>/conduit-desktop-selected.json`: the stored chat ids Hermes Desktop (or the web
 * dashboard) has selected on this host right now, as `{"version": 1, "sessions": ["<id>", …]}`. Its
 * publisher rewrites it when the selection changes and renews it every 30 s while anything is selected.
 */
export const DESKTOP_SELECTED_FILE = 'conduit-desktop-selected.json';
/** A reply this soon after its turn started, in a selected chat, was most likely watched arriving. */
export const WATCHED_REPLY_MS = 2 * 60_000;
/** The file is trusted this long after its last write, so a stopped publisher stops quieting anything. */
export const SELECTION_TRUST_MS = 45_000;
/** A selection file larger than this is not a selection: ignored, and replies push as before. */
const MAX_FILE_BYTES = 256 * 1024;

const selectionFile = z.looseObject({
  version: z.literal(1),
  sessions: z.array(z.string().max(500)).max(2_000),
});

/**
 * The chats selected on Desktop, or null when the file is missing, stale, unreadable or malformed —
 * every one of which means "push as before". Freshness is the file's modification time.
 */
export async function readDesktopSelection(home: string, nowMs: number): Promise<ReadonlySet<string> | null> {
  const file = path.join(home, DESKTOP_SELECTED_FILE);
  try {
    const stat = await fs.stat(file);
    if (!stat.isFile() || stat.size > MAX_FILE_BYTES) return null;
    if (nowMs - stat.mtimeMs > SELECTION_TRUST_MS) return null;
    const parsed = selectionFile.safeParse(JSON.parse(await fs.readFile(file, 'utf8')));
    return parsed.success ? new Set(parsed.data.sessions) : null;
  } catch {
    return null;
  }
}

/**
 * The seed's "being watched on Desktop" rule for one reply: quiet when the turn started (pre_llm_call)
 * at most two minutes before its reply (post_llm_call) and the chat is selected on Desktop. A turn
 * with no start time, or no trustworthy selection, pushes as before.
 */
export function watchedOnDesktop(
  sessionId: string,
  turnStartedAtMs: number | undefined,
  replyAtMs: number,
  selection: ReadonlySet<string> | null,
): boolean {
  if (turnStartedAtMs === undefined || !selection) return false;
  const elapsed = replyAtMs - turnStartedAtMs;
  return elapsed >= 0 && elapsed <= WATCHED_REPLY_MS && selection.has(sessionId);
}
