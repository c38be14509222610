import { holdSystemFlock, systemFlockAvailable } from '../../credentials/system-flock.js';

/** The takeover was abandoned (its deadline passed) before it could hold the lock. */
export class LockAbandoned extends Error {
  constructor() {
    super('registry lock abandoned');
    this.name = 'LockAbandoned';
  }
}

/** This host has no way to take Hermes' registry lock, so it must not touch the registry at all. */
export class LockUnavailable extends Error {
  constructor() {
    super('flock(1) is not available');
    this.name = 'LockUnavailable';
  }
}

/** flock(1) ran but could not take the lock (the lock file can't be opened): ownership can't be read. */
export class LockFailed extends Error {
  constructor() {
    super('registry lock could not be taken');
    this.name = 'LockFailed';
  }
}

/**
 * Runs `critical` while holding Hermes' registry lock: the exclusive flock(2) its `_FileLock` takes on
 * `runtime/active_sessions.lock` (Python's fcntl.flock, the same BSD lock), through the `flock` child of
 * credentials/system-flock.ts, so a crash never leaves Hermes locked out.
 *
 * No timeout of its own: the caller's deadline aborts `signal`, which ends a wait for the lock at once.
 * Once the lock is held an abort does not release it early (that would let Hermes interleave with a
 * write under way); `critical` checks the signal before it writes.
 */
export async function withRegistryLock<T>(
  lockPath: string,
  signal: AbortSignal,
  critical: () => Promise<T>,
): Promise<T> {
  if (!(await systemFlockAvailable())) throw new LockUnavailable();
  if (signal.aborted) throw new LockAbandoned();
  const hold = await holdSystemFlock(lockPath, { signal });
  if (!hold) throw signal.aborted ? new LockAbandoned() : new LockFailed();
  try {
    return await critical();
  } finally {
    await hold.release();
  }
}
