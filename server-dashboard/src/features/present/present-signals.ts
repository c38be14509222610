import type { Clock } from '../../clock.js';
import type { Timers } from '../../kernel/timers.js';
import { PresentStore, type StoredPrompt } from './present-store.js';

/**
 * In-process news that a profile's conduit-present.json changed, keyed by the file's path: a tool
 * waiting on an answer wakes when the exchange route (or a cancel) writes, instead of polling the
 * file. Keyed by path like file-lock.ts's queue, so any writer in this process reaches every waiter
 * of that file, whichever feature or host instance holds them.
 */
const listeners = new Map<string, Set<() => void>>();

/** Tells everyone waiting on `file` that it changed. */
export function announcePresentChange(file: string): void {
  for (const wake of [...(listeners.get(file) ?? [])]) wake();
}

interface Subscription {
  changed: Promise<void>;
  close(): void;
}

function subscribe(file: string): Subscription {
  let wake: () => void = () => undefined;
  const changed = new Promise<void>((resolve) => (wake = resolve));
  const listener = (): void => wake();
  let waiting = listeners.get(file);
  if (!waiting) listeners.set(file, (waiting = new Set()));
  waiting.add(listener);
  return {
    changed,
    close() {
      const current = listeners.get(file);
      current?.delete(listener);
      if (current?.size === 0) listeners.delete(file);
    },
  };
}

/** Waiters on `file` now (tests wait for a tool to be waiting before they answer). */
export function presentWaiters(file: string): number {
  return listeners.get(file)?.size ?? 0;
}

/** Resolves when `changed` does, after `ms` on the timers, or on `abort`; the timer is cancelled then. */
function firstOf(changed: Promise<void>, ms: number, timers: Timers, abort?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    if (abort?.aborted) return resolve();
    let cancelTimer: () => void = () => undefined;
    const finish = (): void => {
      cancelTimer();
      abort?.removeEventListener('abort', finish);
      resolve();
    };
    cancelTimer = timers.after(Math.max(0, ms), finish);
    abort?.addEventListener('abort', finish, { once: true });
    void changed.then(finish);
  });
}

export interface WaitOptions {
  /** How long to wait for an answer at most, in milliseconds. */
  waitMs: number;
  clock: Clock;
  timers: Timers;
  /** Ends the wait early (the MCP call was cancelled). */
  abort?: AbortSignal;
}

/**
 * Waits until prompt `id` of the profile at `home` leaves `waiting` (answered, expired, cancelled)
 * or `waitMs` passes, and returns it as it is then; null when there is no such prompt. Wakes on the
 * file's change announcements and on a timer at the prompt's expiry, never by polling.
 */
export async function waitForAnswer(home: string, id: string, options: WaitOptions): Promise<StoredPrompt | null> {
  const store = new PresentStore(home);
  const deadlineMs = options.clock.now() + options.waitMs;
  for (;;) {
    // Listening starts before the read, so a change written between the read and the wait still wakes it.
    const subscription = subscribe(store.file);
    try {
      const nowMs = options.clock.now();
      const prompt = (await store.read(nowMs / 1000)).prompts.find((candidate) => candidate.id === id) ?? null;
      const remainingMs = deadlineMs - nowMs;
      if (!prompt || prompt.state !== 'waiting' || remainingMs <= 0 || options.abort?.aborted) return prompt;
      // Woken at the expiry too, so a prompt that expires while Hermes waits is answered `expired` then.
      const untilExpiryMs = prompt.expires_at * 1000 - nowMs;
      await firstOf(subscription.changed, Math.min(remainingMs, untilExpiryMs), options.timers, options.abort);
    } finally {
      subscription.close();
    }
  }
}
