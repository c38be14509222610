import type { Timers } from './timers.js';

/**
 * Settles with `work`, or rejects with `late()` once `ms` have passed on the injected timers (so a
 * test fires the deadline by hand). The work is not cancelled: a caller that must stop it passes its
 * own abort, as upstream-http.ts does.
 */
export function withDeadline<T>(work: Promise<T>, ms: number, timers: Timers, late: () => Error): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const cancel = timers.after(ms, () => reject(late()));
    work.then(
      (value) => {
        cancel();
        resolve(value);
      },
      (error: unknown) => {
        cancel();
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}
