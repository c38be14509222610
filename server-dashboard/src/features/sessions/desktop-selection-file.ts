import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomic } from '../../credentials/atomic-write.js';
import { SELECTION_RENEW_MS } from '../../notifier/desktop-selection.js';
import { DESKTOP_SELECTED_FILE, SELECTION_TRUST_MS } from '../../notifier/desktop-watch.js';
import { readRegistryStrict, registryPaths, registryPid, surfaceOf } from './active-sessions.js';
import { canReadProcessStarts, pidLiveness } from './process-liveness.js';

/**
 * The selection file's author field when this feature writes it from Hermes' ownership registry. The
 * proxy's publisher (notifier/desktop-selection.ts) writes the same file without it; the turn hooks'
 * reader ignores fields it doesn't know.
 */
const REGISTRY_PUBLISHER = 'hermes-registry';

/** A selection file larger than this is not one (the notifier's reader refuses it too). */
const MAX_FILE_BYTES = 256 * 1024;

/** What is in `conduit-desktop-selected.json` now, and who wrote it when. */
interface SelectionFile {
  sessions: string[];
  /** Written by this feature from the registry (else by the proxy's publisher, or unknown). */
  fromRegistry: boolean;
  /** Milliseconds since the epoch of its last write. */
  writtenAtMs: number;
}

async function readSelectionFile(home: string): Promise<SelectionFile | null> {
  const file = path.join(home, DESKTOP_SELECTED_FILE);
  try {
    const info = await stat(file);
    if (!info.isFile() || info.size > MAX_FILE_BYTES) return null;
    const data = JSON.parse(await readFile(file, 'utf8')) as { sessions?: unknown; publisher?: unknown };
    const sessions = Array.isArray(data.sessions)
      ? data.sessions.filter((s): s is string => typeof s === 'string')
      : [];
    return { sessions, fromRegistry: data.publisher === REGISTRY_PUBLISHER, writtenAtMs: info.mtimeMs };
  } catch {
    return null;
  }
}

/**
 * The chats Hermes Desktop holds open in this home, from Hermes' ownership registry: claims with surface
 * `desktop` whose owner is provably the process that made them (pid alive, start time matching). Desktop
 * claims a chat on its first turn and keeps the claim until the chat is closed there, and a claim is
 * exclusive, so a reply in such a chat comes from a turn Desktop itself submitted.
 *
 * Null when it can't be read: no process start times on this platform, or a registry Hermes' strict
 * reader would refuse. Read without the registry lock: Hermes replaces the file atomically, and a read
 * never writes.
 */
export async function desktopHeldChats(home: string): Promise<ReadonlySet<string> | null> {
  if (!canReadProcessStarts()) return null;
  let entries;
  try {
    entries = await readRegistryStrict(registryPaths(home).state);
  } catch {
    return null;
  }
  const held = new Set<string>();
  for (const entry of entries) {
    if (surfaceOf(entry) !== 'desktop') continue;
    // Quieting a push needs proof: an owner of unknown liveness doesn't count here.
    if ((await pidLiveness(registryPid(entry.pid), entry.process_start_time)) === 'alive') held.add(entry.session_id);
  }
  return held;
}

function sameSet(a: readonly string[], b: ReadonlySet<string>): boolean {
  return a.length === b.size && a.every((id) => b.has(id));
}

/** What one home's selection is now, from both sources, and whether the registry could be read. */
export interface HomeSelection {
  /** Stored chat ids selected (proxied sockets) or held (Desktop connected directly). */
  chats: ReadonlySet<string>;
  /** False when Desktop connected directly to Hermes can't be observed here (see desktopHeldChats). */
  registryReadable: boolean;
}

/**
 * One pass of the selection for a home: reads what the proxy's publisher wrote and what Desktop holds in
 * Hermes' registry, and publishes the registry's part to `conduit-desktop-selected.json` so the turn
 * hooks' two-minute rule also works when Desktop talks to Hermes directly, not through this service.
 *
 * The proxy's publisher sees the exact selected chat of each socket, so while it keeps the file fresh
 * (written within the 45 s the hooks trust it) this stands down rather than overwrite it. Otherwise the
 * file is rewritten when the held chats change and renewed every 30 s while any are held; when the last
 * one goes, it is rewritten empty at once instead of waiting out the 45 s.
 */
export async function publishHomeSelection(home: string, nowMs: number): Promise<HomeSelection> {
  const [file, held] = await Promise.all([readSelectionFile(home), desktopHeldChats(home)]);
  const direct = held ?? new Set<string>();
  const fresh = file !== null && nowMs - file.writtenAtMs <= SELECTION_TRUST_MS;
  const proxyActive = file !== null && !file.fromRegistry && fresh;
  const proxied = proxyActive ? file.sessions : [];
  if (!proxyActive) {
    const published = file?.fromRegistry ? file.sessions : [];
    const changed = !sameSet(published, direct);
    const renewDue = direct.size > 0 && file?.fromRegistry === true && nowMs - file.writtenAtMs >= SELECTION_RENEW_MS;
    // An empty list is written only over our own non-empty one: a home nobody selects stays untouched.
    if ((changed && (direct.size > 0 || published.length > 0)) || renewDue) {
      const sessions = [...direct].sort();
      await writeFileAtomic(
        path.join(home, DESKTOP_SELECTED_FILE),
        JSON.stringify({ version: 1, sessions, publisher: REGISTRY_PUBLISHER }) + '\n',
      );
    }
  }
  return { chats: new Set([...proxied, ...direct]), registryReadable: held !== null };
}
