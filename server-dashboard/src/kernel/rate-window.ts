/**
 * A sliding-window limit kept in memory, per key, as the reference's `_MintLimiter`: at most `max`
 * accepted requests in any `windowMs`. The clock is injected so tests move time instead of sleeping.
 */
export class SlidingWindowLimit {
  private readonly hits = new Map<string, number[]>();

  constructor(
    private readonly max: number,
    private readonly windowMs: number,
    private readonly clock: () => number,
  ) {}

  /** Records a request for `key`; false (and nothing recorded) when the window is full. */
  tryTake(key: string): boolean {
    const now = this.clock();
    const recent = (this.hits.get(key) ?? []).filter((at) => now - at < this.windowMs);
    if (recent.length >= this.max) {
      this.hits.set(key, recent);
      return false;
    }
    recent.push(now);
    this.hits.set(key, recent);
    if (this.hits.size > 1000) this.sweep(now);
    return true;
  }

  private sweep(now: number): void {
    for (const [key, times] of this.hits) {
      if (times.every((at) => now - at >= this.windowMs)) this.hits.delete(key);
    }
  }
}

/** The reference's limiter key: profile names are case-insensitive, and ''/'current' mean the default. */
export function limiterKey(profile: string | undefined): string {
  const key = (profile ?? '').trim().toLowerCase();
  return key === 'current' ? '' : key;
}

/** A per-minute limit on the service's clock: the reference's limiters all count per 60 s. */
export function perMinute(max: number, clock: { now(): number }): SlidingWindowLimit {
  return new SlidingWindowLimit(max, 60_000, () => clock.now());
}
