import { stat, readFile } from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomic } from '../../credentials/atomic-write.js';
import { optionalFloat } from './process-liveness.js';

/**
 * Hermes' ownership registry (`hermes_cli.active_sessions`): which process holds which chat, in
 * `<profile home>/runtime/active_sessions.json` as `{"entries": [...]}`, written only under an exclusive
 * flock(2) on `<profile home>/runtime/active_sessions.lock`. A profile's sessions are claimed in that
 * profile's own home (`registry_home`).
 */
export function registryPaths(home: string): { state: string; lock: string } {
  const runtime = path.join(home, 'runtime');
  return { state: path.join(runtime, 'active_sessions.json'), lock: path.join(runtime, 'active_sessions.lock') };
}

/** One claim, as Hermes writes it; unknown fields are kept as they are when the file is rewritten. */
export interface RegistryEntry {
  lease_id: string;
  session_id: string;
  /** `desktop`, `tui`, `cli`, `gateway:<platform>`, … (absent on some claims). */
  surface?: string | null;
  pid: number | string;
  /** The owner's psutil create time (seconds since the epoch), pairing the pid with its process. */
  process_start_time?: number | string | null;
  [field: string]: unknown;
}

/** The registry exists but Hermes itself would refuse to decide from it (`ActiveSessionRegistryError`). */
export class RegistryUnreadable extends Error {
  constructor(what: string) {
    super(`active session registry ${what}`);
    this.name = 'RegistryUnreadable';
  }
}

/** A claim's surface as Hermes compares it (`str(surface).strip().lower()`); '' when it has none. */
export function surfaceOf(entry: RegistryEntry): string {
  return typeof entry.surface === 'string' ? entry.surface.trim().toLowerCase() : '';
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function nonBlank(value: unknown): value is string {
  return typeof value === 'string' && value.trim() !== '';
}

/** Hermes' `_registry_pid`: an int, or text Python's int() reads; 0 for anything else (bools too). */
export function registryPid(pid: unknown): number {
  if (typeof pid === 'number') return Number.isInteger(pid) ? pid : 0;
  if (typeof pid === 'string' && /^\s*[+-]?\d+\s*$/.test(pid)) return Number(pid.trim());
  return 0;
}

function validProcessStart(value: unknown): boolean {
  if (value === null || value === undefined || value === '') return true;
  const parsed = optionalFloat(value);
  return parsed !== null && Number.isFinite(parsed);
}

/** What Hermes' strict reader checks of each entry, in its order; the first problem found, or null. */
function entryProblem(entry: Record<string, unknown>, seenLeases: Set<string>): string | null {
  const lease = entry.lease_id;
  if (!nonBlank(lease)) return 'an invalid lease id';
  if (seenLeases.has(lease)) return 'a duplicate lease id';
  if (!nonBlank(entry.session_id)) return 'an invalid session id';
  if (registryPid(entry.pid) <= 0) return 'an invalid pid';
  if (entry.surface !== undefined && entry.surface !== null && typeof entry.surface !== 'string') {
    return 'an invalid surface';
  }
  const tracked = entry.track_liveness;
  if (tracked !== undefined && tracked !== null && typeof tracked !== 'boolean') return 'an invalid liveness marker';
  if (entry.metadata !== undefined && entry.metadata !== null && !isRecord(entry.metadata)) return 'invalid metadata';
  if (!validProcessStart(entry.process_start_time)) return 'an invalid process start time';
  seenLeases.add(lease);
  return null;
}

/**
 * The registry's entries as `_read_entries(path, strict=True)` accepts them: a missing file is no
 * entries; a file that can't be read or parsed, a shape other than `{"entries": [...]}` or a bare list,
 * or any entry Hermes' strict checks refuse makes the whole registry unreadable, so ownership is never
 * guessed from part of it.
 */
export async function readRegistryStrict(file: string): Promise<RegistryEntry[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new RegistryUnreadable('unreadable');
  }
  let data: unknown;
  try {
    // Hermes reads with utf-8-sig: a byte-order mark is not part of the JSON.
    data = JSON.parse(text.replace(/^\uFEFF/, ''));
  } catch {
    throw new RegistryUnreadable('unreadable');
  }
  const entries: unknown = isRecord(data) ? data.entries : data;
  if (!Array.isArray(entries)) throw new RegistryUnreadable('has invalid shape');
  const seenLeases = new Set<string>();
  for (const entry of entries) {
    if (!isRecord(entry)) throw new RegistryUnreadable('contains invalid entries');
    const problem = entryProblem(entry, seenLeases);
    if (problem) throw new RegistryUnreadable(`contains ${problem}`);
  }
  return entries as RegistryEntry[];
}

/** Python's `json.dump(..., sort_keys=True)` order, so a rewritten registry reads as Hermes writes it. */
function sortedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedKeys);
  if (!isRecord(value)) return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sortedKeys(value[key])]),
  );
}

/**
 * `_write_entries`: the whole registry replaced atomically (temp file, rename), keeping the mode the
 * file had. Call only while holding the registry lock.
 */
export async function writeRegistry(file: string, entries: readonly RegistryEntry[]): Promise<void> {
  const mode = await stat(file)
    .then((s) => s.mode & 0o777)
    .catch(() => 0o600);
  await writeFileAtomic(file, JSON.stringify(sortedKeys({ entries })), mode);
}
