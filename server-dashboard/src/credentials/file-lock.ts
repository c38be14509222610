import { randomBytes } from 'node:crypto';
import { link, open, readFile, rename, stat, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';

/**
 * A lock shared by every process on this host that writes one file: a lock file created with O_EXCL
 * (`wx`), holding who owns it. Node has no flock(2), and an O_EXCL file works the same on every local
 * filesystem. A holder that died leaves its file behind, so a lock whose owner is gone (same host, pid
 * not alive) or that is older than `staleMs` (critical sections here take milliseconds) is broken.
 */
export interface FileLockOptions {
  /** Give up after this long (LockTimeoutError). */
  timeoutMs?: number;
  /** A lock held longer than this is considered abandoned. */
  staleMs?: number;
  /** First pause between attempts; grows to 8× with jitter. */
  retryMs?: number;
}

export class LockTimeoutError extends Error {
  constructor(readonly lockPath: string) {
    super(`Timed out waiting for the lock ${lockPath}; another conduit process is writing this profile`);
    this.name = 'LockTimeoutError';
  }
}

interface LockOwner {
  pid: number;
  host: string;
  token: string;
  acquired_at_ms: number;
}

const DEFAULTS = { timeoutMs: 10_000, staleMs: 30_000, retryMs: 10 } as const;

/** Writers in this process queue here first, so they don't poll the file against each other. */
const inProcessTails = new Map<string, Promise<unknown>>();

/** Runs `critical` while holding the lock at `lockPath`, across threads of this process and other processes. */
export async function withFileLock<T>(
  lockPath: string,
  critical: () => Promise<T>,
  options: FileLockOptions = {},
): Promise<T> {
  const previous = inProcessTails.get(lockPath) ?? Promise.resolve();
  const run = previous.then(
    () => holdFileLock(lockPath, critical, options),
    () => holdFileLock(lockPath, critical, options),
  );
  const tail = run.catch(() => undefined);
  inProcessTails.set(lockPath, tail);
  try {
    return await run;
  } finally {
    if (inProcessTails.get(lockPath) === tail) inProcessTails.delete(lockPath);
  }
}

async function holdFileLock<T>(lockPath: string, critical: () => Promise<T>, options: FileLockOptions): Promise<T> {
  const token = await acquire(lockPath, { ...DEFAULTS, ...options });
  try {
    return await critical();
  } finally {
    await release(lockPath, token);
  }
}

async function acquire(lockPath: string, options: Required<FileLockOptions>): Promise<string> {
  const deadline = Date.now() + options.timeoutMs;
  let pause = options.retryMs;
  for (;;) {
    const owner: LockOwner = {
      pid: process.pid,
      host: hostname(),
      token: randomBytes(12).toString('hex'),
      acquired_at_ms: Date.now(),
    };
    try {
      const handle = await open(lockPath, 'wx', 0o600);
      try {
        await handle.writeFile(JSON.stringify(owner));
      } finally {
        await handle.close();
      }
      return owner.token;
    } catch (error) {
      if (!isCode(error, 'EEXIST')) throw error;
    }
    if (await breakIfStale(lockPath, options.staleMs)) continue;
    if (Date.now() >= deadline) throw new LockTimeoutError(lockPath);
    await new Promise((resolve) => setTimeout(resolve, pause * (0.5 + Math.random())));
    pause = Math.min(pause * 2, options.retryMs * 8);
  }
}

/** Removes an abandoned lock; true when the caller should try to take the lock again at once. */
async function breakIfStale(lockPath: string, staleMs: number): Promise<boolean> {
  let observed;
  let text: string;
  try {
    observed = await stat(lockPath);
    text = await readFile(lockPath, 'utf8');
  } catch (error) {
    if (isCode(error, 'ENOENT')) return true; // released meanwhile
    throw error;
  }
  if (!isStale(parseOwner(text), observed.mtimeMs, staleMs)) return false;
  // Move the stale file aside rather than unlinking it: if another process broke it first and took a
  // fresh lock at the same path, the inode tells us, and we put that live lock back.
  const grave = `${lockPath}.stale.${process.pid}.${randomBytes(6).toString('hex')}`;
  try {
    await rename(lockPath, grave);
  } catch (error) {
    if (isCode(error, 'ENOENT')) return true;
    throw error;
  }
  const moved = await stat(grave);
  if (moved.ino !== observed.ino) await link(grave, lockPath).catch(() => undefined);
  await unlink(grave).catch(() => undefined);
  return true;
}

function isStale(owner: LockOwner | null, mtimeMs: number, staleMs: number): boolean {
  // An unreadable owner may be a lock file whose creator has not written it yet: judge it by age only.
  if (!owner) return Date.now() - mtimeMs > staleMs;
  if (owner.host === hostname() && !processAlive(owner.pid)) return true;
  return Date.now() - owner.acquired_at_ms > staleMs;
}

function parseOwner(text: string): LockOwner | null {
  try {
    const value: unknown = JSON.parse(text);
    if (
      typeof value === 'object' &&
      value !== null &&
      'pid' in value &&
      typeof value.pid === 'number' &&
      'host' in value &&
      typeof value.host === 'string' &&
      'token' in value &&
      typeof value.token === 'string' &&
      'acquired_at_ms' in value &&
      typeof value.acquired_at_ms === 'number'
    ) {
      return { pid: value.pid, host: value.host, token: value.token, acquired_at_ms: value.acquired_at_ms };
    }
  } catch {
    // not JSON (yet)
  }
  return null;
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    return isCode(error, 'EPERM');
  }
}

async function release(lockPath: string, token: string): Promise<void> {
  // Only remove our own lock: if it was broken as stale and someone else holds it now, leave theirs.
  const text = await readFile(lockPath, 'utf8').catch(() => null);
  if (text !== null && parseOwner(text)?.token === token) await unlink(lockPath).catch(() => undefined);
}

function isCode(error: unknown, code: string): boolean {
  return typeof error === 'object' && error !== null && 'code' in error && error.code === code;
}
