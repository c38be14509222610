import { spawn } from 'node:child_process';
import { systemFlockAvailable } from '../../credentials/system-flock.js';

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

/** A byte the holder echoes back once it holds the lock. */
const LOCKED_PROBE = 'L\n';

/**
 * Runs `critical` while holding Hermes' registry lock: the exclusive flock(2) its `_FileLock` takes on
 * `runtime/active_sessions.lock` (Python's fcntl.flock, the same BSD lock). Node cannot call flock(2),
 * so a util-linux `flock -x <file> cat` child takes it: `cat` starts only once the lock is held and
 * echoes a probe byte back, and the lock is released when we close its stdin — or when this process
 * dies, since that closes the pipe too, so a crash never leaves Hermes locked out.
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
  const holder = spawn('flock', ['-x', lockPath, 'cat'], { stdio: ['pipe', 'pipe', 'ignore'] });
  const exited = new Promise<void>((resolve) => {
    holder.once('close', () => resolve());
    // A child that never started emits no close.
    holder.once('error', () => resolve());
  });
  const locked = await new Promise<boolean>((resolve) => {
    let seen = '';
    const onAbort = (): void => {
      holder.kill('SIGKILL');
      resolve(false);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    holder.stdout.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      if (seen.includes(LOCKED_PROBE)) {
        signal.removeEventListener('abort', onAbort);
        resolve(true);
      }
    });
    holder.once('error', () => resolve(false));
    holder.once('exit', () => resolve(false));
    holder.stdin.on('error', () => undefined);
    holder.stdin.write(LOCKED_PROBE);
  });
  if (!locked) {
    holder.stdin.destroy();
    await exited;
    throw signal.aborted ? new LockAbandoned() : new LockFailed();
  }
  try {
    return await critical();
  } finally {
    holder.stdin.end();
    await exited;
  }
}
