/**
 * Fixed-window counters per key (`registration:<ip>`, `event-global`, …): a window opens at a key's
 * first hit and lasts `windowMs`; every hit counts, also those refused, so a client hammering a full
 * window does not get a fresh one sooner. In memory the budgets are per process, as in the reference;
 * several replicas share them through Redis (cluster/redis-rate-limiter.ts), hence the promise.
 */
export interface RateLimiter {
  /**
   * Counts one hit; false when the key is over `max` in its current window (→ 429 rate_limited).
   * Rejects with SharedStateUnavailable when the shared store cannot be reached (→ 503).
   */
  hit(key: string, max: number, windowMs?: number): Promise<boolean>;
}

const SWEEP_THRESHOLD = 10_000;
const SWEEP_INTERVAL_MS = 30_000;

export class MemoryRateLimiter implements RateLimiter {
  private readonly windows = new Map<string, { count: number; resetAt: number }>();
  private lastSweep = 0;

  constructor(private readonly now: () => number) {}

  hit(key: string, max: number, windowMs = 60_000): Promise<boolean> {
    return Promise.resolve(this.hitNow(key, max, windowMs));
  }

  private hitNow(key: string, max: number, windowMs: number): boolean {
    const now = this.now();
    this.sweep(now);
    let window = this.windows.get(key);
    if (!window || window.resetAt <= now) {
      window = { count: 0, resetAt: now + windowMs };
      this.windows.set(key, window);
    }
    window.count += 1;
    return window.count <= max;
  }

  /** Expired windows are dropped only when the map is large, at most every 30 s. */
  private sweep(now: number): void {
    if (this.windows.size <= SWEEP_THRESHOLD || now - this.lastSweep < SWEEP_INTERVAL_MS) return;
    this.lastSweep = now;
    for (const [key, window] of this.windows) if (window.resetAt <= now) this.windows.delete(key);
  }
}
