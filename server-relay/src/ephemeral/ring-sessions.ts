/**
 * Sealed call sessions the phone stores for a ring answered on the Watch (§4, relay 0.11): the Watch
 * fetches it with a bounded wait. In memory: 2 minutes each, 32 MB in total (oldest dropped first),
 * two waiting fetches per ring.
 */
export interface RingSessionStore {
  put(ringId: string, sealed: string): void | Promise<void>;
  /**
   * The stored session, or waits until one is stored, the wait ends (null) or the signal aborts (null);
   * 'busy' when the ring already has its maximum of waiters. (Replicas keep sessions in Redis, hence a
   * promise of 'busy' too.)
   */
  take(ringId: string, waitMs: number, signal?: AbortSignal): Promise<string | null | 'busy'> | 'busy';
}

interface Waiter {
  resolve: (sealed: string | null) => void;
}

export class MemoryRingSessionStore implements RingSessionStore {
  private readonly sessions = new Map<string, { sealed: string; storedAt: number }>();
  private readonly waiters = new Map<string, Set<Waiter>>();
  private totalChars = 0;

  constructor(
    private readonly bounds: { ttlMs: number; maxTotalChars: number; maxWaiters: number },
    private readonly now: () => number,
    private readonly timers: {
      setTimeout: (fn: () => void, ms: number) => unknown;
      clearTimeout: (handle: unknown) => void;
    } = {
      setTimeout: (fn, ms) => setTimeout(fn, ms),
      clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
    },
  ) {}

  put(ringId: string, sealed: string): void {
    this.sweep();
    this.drop(ringId);
    this.sessions.set(ringId, { sealed, storedAt: this.now() });
    this.totalChars += sealed.length;
    while (this.totalChars > this.bounds.maxTotalChars) {
      const oldest = this.sessions.keys().next().value;
      if (oldest === undefined || oldest === ringId) break;
      this.drop(oldest);
    }
    const waiting = this.waiters.get(ringId);
    if (waiting) {
      this.waiters.delete(ringId);
      for (const waiter of waiting) waiter.resolve(sealed);
    }
  }

  take(ringId: string, waitMs: number, signal?: AbortSignal): Promise<string | null> | 'busy' {
    this.sweep();
    const stored = this.sessions.get(ringId);
    if (stored) return Promise.resolve(stored.sealed);
    if (waitMs <= 0) return Promise.resolve(null);
    const waiting = this.waiters.get(ringId) ?? new Set<Waiter>();
    if (waiting.size >= this.bounds.maxWaiters) return 'busy';
    this.waiters.set(ringId, waiting);
    return new Promise((resolve) => {
      const finish = (sealed: string | null) => {
        this.timers.clearTimeout(timer);
        waiting.delete(waiter);
        if (waiting.size === 0 && this.waiters.get(ringId) === waiting) this.waiters.delete(ringId);
        resolve(sealed);
      };
      const waiter: Waiter = { resolve: finish };
      const timer = this.timers.setTimeout(() => finish(null), waitMs);
      waiting.add(waiter);
      signal?.addEventListener('abort', () => finish(null), { once: true });
    });
  }

  private drop(ringId: string): void {
    const existing = this.sessions.get(ringId);
    if (!existing) return;
    this.totalChars -= existing.sealed.length;
    this.sessions.delete(ringId);
  }

  private sweep(): void {
    const now = this.now();
    for (const [ringId, session] of this.sessions) {
      if (session.storedAt + this.bounds.ttlMs > now) break;
      this.drop(ringId);
    }
  }
}
