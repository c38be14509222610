import { spawn } from 'node:child_process';
import { open } from 'node:fs/promises';
import { LockTimeoutError } from './file-lock.js';

/**
 * The reference plugin's lock: an exclusive flock(2) on `.conduit-push.json.lock`. Node cannot call
 * flock itself, so a util-linux `flock` child process takes it and holds it until we close its stdin
 * (or we die, which closes the pipe too, so a crash never leaves it held). Taking it as well as our own
 * lock means the Python plugin and this service can write one profile's file without losing updates.
 * Where no `flock` binary exists (macOS without util-linux) this layer is skipped.
 */
let available: Promise<boolean> | undefined;

/** Probes for the `flock` binary once, without blocking the event loop; later calls share the answer. */
export function systemFlockAvailable(): Promise<boolean> {
  available ??= new Promise<boolean>((resolve) => {
    const probe = spawn('flock', ['--version'], { stdio: 'ignore' });
    probe.once('error', () => resolve(false));
    probe.once('exit', (code) => resolve(code === 0));
  });
  return available;
}

/** A flock(2) held by a `flock` child until `release()`. */
export interface FlockHold {
  release(): Promise<void>;
}

/** A byte the holder echoes back once it holds the lock (`cat` starts only then). */
const LOCKED_PROBE = 'L\n';

/**
 * Takes an exclusive flock(2) on `lockPath` through a util-linux `flock -x` child: `cat` starts only once
 * the lock is held and echoes a probe back; closing its stdin (or this process dying, which closes the
 * pipe too) releases it. Resolves null when the lock was not taken: `waitSeconds` ran out, `signal`
 * aborted the wait (the child is killed at once), or the lock file could not be opened. An abort after
 * the lock is held does not release it; the holder decides.
 */
export async function holdSystemFlock(
  lockPath: string,
  options: { waitSeconds?: number; signal?: AbortSignal } = {},
): Promise<FlockHold | null> {
  const { signal } = options;
  if (signal?.aborted) return null;
  const wait = options.waitSeconds === undefined ? [] : ['-w', Math.max(0.001, options.waitSeconds).toFixed(3)];
  const holder = spawn('flock', ['-x', ...wait, lockPath, 'cat'], { stdio: ['pipe', 'pipe', 'ignore'] });
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
    signal?.addEventListener('abort', onAbort, { once: true });
    holder.stdout.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      if (seen.includes(LOCKED_PROBE)) {
        signal?.removeEventListener('abort', onAbort);
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
    return null;
  }
  return {
    async release() {
      holder.stdin.end();
      await exited;
    },
  };
}

export async function withSystemFlock<T>(lockPath: string, critical: () => Promise<T>, timeoutMs: number): Promise<T> {
  if (!(await systemFlockAvailable())) return critical();
  // Create it ourselves so it is 0600 rather than whatever flock(1) and the umask would make.
  await (await open(lockPath, 'a', 0o600)).close();
  const hold = await holdSystemFlock(lockPath, { waitSeconds: timeoutMs / 1000 });
  if (!hold) throw new LockTimeoutError(lockPath);
  try {
    return await critical();
  } finally {
    await hold.release();
  }
}
