import { watch } from 'node:fs';

/** How often a wait looks again when nothing woke it: a safety net, since fs.watch may miss a change. */
const RECHECK_MS = 100;

export class WaitTimeoutError extends Error {
  constructor(what: string, timeoutMs: number) {
    super(`Timed out after ${Math.round(timeoutMs / 1000)} s waiting for ${what}.`);
    this.name = 'WaitTimeoutError';
  }
}

/**
 * Waits for something another process does (a file it writes, a push the relay captures) and returns
 * as soon as `probe` sees it: the probe runs again whenever `watchDir` changes, and at least every
 * 100 ms, until `timeoutMs` has passed. A bounded wait on an event, never a fixed sleep.
 */
export async function waitFor<T>(
  what: string,
  probe: () => T | undefined | Promise<T | undefined>,
  options: { timeoutMs?: number; watchDir?: string } = {},
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const deadline = Date.now() + timeoutMs;
  let wake = () => {};
  const watcher = options.watchDir ? watch(options.watchDir, () => wake()) : undefined;
  try {
    for (;;) {
      const value = await probe();
      if (value !== undefined) return value;
      const left = deadline - Date.now();
      if (left <= 0) throw new WaitTimeoutError(what, timeoutMs);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(RECHECK_MS, left));
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  } finally {
    watcher?.close();
  }
}

/** A promise that fails with WaitTimeoutError unless `promise` settles within `timeoutMs`. */
export function within<T>(what: string, promise: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new WaitTimeoutError(what, timeoutMs)), timeoutMs);
  });
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}
