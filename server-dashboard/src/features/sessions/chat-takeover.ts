import { existsSync } from 'node:fs';
import {
  readRegistryStrict,
  registryPaths,
  registryPid,
  RegistryUnreadable,
  surfaceOf,
  writeRegistry,
  type RegistryEntry,
} from './active-sessions.js';
import { canReadProcessStarts, pidLiveness } from './process-liveness.js';
import { LockAbandoned, LockFailed, LockUnavailable, withRegistryLock } from './registry-lock.js';
import { markersMovedAway, readTurnMarkers, turnRunning } from './turn-markers.js';

/** This host can't hand a chat over here (501): no registry or markers in the form it reads, or no lock. */
export class TakeoverUnsupported extends Error {
  constructor(readonly why: string) {
    super(`takeover unsupported: ${why}`);
    this.name = 'TakeoverUnsupported';
  }
}

/** Who owns the chat can't be read now (503); nothing was written. */
export class OwnershipUnreadable extends Error {
  constructor(readonly why: string) {
    super(`ownership unreadable: ${why}`);
    this.name = 'OwnershipUnreadable';
  }
}

export type TakeoverStatus = 'free' | 'taken_over' | 'busy' | 'same_host';

export interface TakeoverResult {
  status: TakeoverStatus;
  surface?: string;
}

/**
 * The surfaces that write turn markers, so whether they run a turn can be seen: only their claims are
 * dropped while their owner lives. A live CLI or kanban worker, a gateway or a claim with no surface
 * may be mid-turn unseen, so it answers busy.
 */
const MARKED_SURFACES = new Set(['desktop', 'tui']);

export interface TakeoverOptions {
  /** Whether a claim owner is this host: its own process or the Hermes dashboard it fronts (`same_host`). */
  isHostProcess(pid: number): Promise<boolean>;
  /** Aborted at the deadline: a wait for the lock ends, and nothing is written after it. */
  signal: AbortSignal;
}

function withSurface(status: TakeoverStatus, entry: RegistryEntry | undefined): TakeoverResult {
  const surface = entry?.surface;
  return typeof surface === 'string' && surface.trim() ? { status, surface } : { status };
}

/**
 * Decides, from the chat's claims, what to drop (another process's claims) or why not (busy), and what
 * to answer. A busy chat drops nothing, not even a dead owner's claim beside the live one.
 */
async function decide(
  home: string,
  ids: readonly string[],
  claims: readonly RegistryEntry[],
  options: TakeoverOptions,
): Promise<{ result: TakeoverResult; drop: RegistryEntry[] }> {
  const own: RegistryEntry[] = [];
  const foreign: { entry: RegistryEntry; alive: boolean }[] = [];
  for (const entry of claims) {
    const pid = registryPid(entry.pid);
    if (pid === process.pid || (await options.isHostProcess(pid))) {
      own.push(entry);
      continue;
    }
    // An owner whose liveness is unknown is treated as alive: only a provably gone owner is gone.
    foreign.push({ entry, alive: (await pidLiveness(pid, entry.process_start_time)) !== 'dead' });
  }
  const unseen = foreign.find(({ entry, alive }) => alive && !MARKED_SURFACES.has(surfaceOf(entry)));
  if (unseen) return { result: withSurface('busy', unseen.entry), drop: [] };
  if (foreign.length > 0) {
    const ownersGone = foreign.every(({ alive }) => !alive);
    if (await turnRunning(await readTurnMarkers(home), ids, ownersGone)) {
      return { result: withSurface('busy', foreign[0]?.entry), drop: [] };
    }
  }
  const drop = foreign.map(({ entry }) => entry);
  if (own.length > 0) return { result: withSurface('same_host', own[0]), drop };
  if (drop.length > 0) return { result: withSurface('taken_over', drop[0]), drop };
  return { result: { status: 'free' }, drop };
}

/**
 * Conduit's Take over (the seed): drops other processes' claims on one chat from the profile's
 * `runtime/active_sessions.json`, under Hermes' own registry lock, so Conduit's next send can claim it.
 * The registry is read and rewritten inside one hold of the lock, as Hermes' own writers do.
 */
export async function takeOverChat(
  home: string,
  ids: readonly string[],
  options: TakeoverOptions,
): Promise<TakeoverResult> {
  const paths = registryPaths(home);
  // Without start times, a recycled pid would pass for the claim's owner: liveness can't be proven.
  if (!canReadProcessStarts()) throw new TakeoverUnsupported('process start times cannot be read on this platform');
  // Hermes creates the lock file the first time any of its surfaces claims a chat in this home.
  if (!existsSync(paths.state) && !existsSync(paths.lock)) throw new TakeoverUnsupported('no ownership registry');
  let moved: boolean;
  try {
    moved = markersMovedAway(home);
  } catch {
    throw new OwnershipUnreadable('state.db cannot be opened to find the turn markers');
  }
  if (moved) throw new TakeoverUnsupported('turn markers are kept in state.db');
  try {
    return await withRegistryLock(paths.lock, options.signal, async () => {
      const entries = await readRegistryStrict(paths.state);
      const wanted = new Set(ids);
      const claims = entries.filter((entry) => wanted.has(entry.session_id));
      if (claims.length === 0) return { status: 'free' as const };
      const { result, drop } = await decide(home, ids, claims, options);
      if (drop.length > 0) {
        // Past the deadline the caller has already answered 504: nothing may change after that.
        if (options.signal.aborted) throw new LockAbandoned();
        const dropped = new Set(drop.map((entry) => entry.lease_id));
        await writeRegistry(
          paths.state,
          entries.filter((entry) => !dropped.has(entry.lease_id)),
        );
      }
      return result;
    });
  } catch (error) {
    if (error instanceof LockUnavailable) throw new TakeoverUnsupported("Hermes' registry lock cannot be taken here");
    if (error instanceof LockFailed) throw new OwnershipUnreadable('the registry lock cannot be taken');
    if (error instanceof RegistryUnreadable) throw new OwnershipUnreadable(error.message);
    throw error;
  }
}
