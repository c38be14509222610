/**
 * The daily cap on API-billed calls per profile (the seed, `conduit_api_daily_calls`). It counts calls
 * started, not minutes, and lives in this process's memory: a restart starts the count again, and each
 * worker process of a dashboard allows the cap on its own.
 */
export class DailyCallLedger {
  private readonly counts = new Map<string, { day: string; used: number }>();

  constructor(private readonly clock: { now(): number }) {}

  /** The host's calendar day, in its own time zone, as the user reads "per day". */
  private today(): string {
    const now = new Date(this.clock.now());
    return `${now.getFullYear()}-${now.getMonth() + 1}-${now.getDate()}`;
  }

  /**
   * Takes one of today's `limit` slots for `key`, or null when they are all used. The returned function
   * gives the slot back (a call OpenAI refused or never answered); it does nothing once the day has
   * changed, since the new day's count never included it.
   */
  tryTake(key: string, limit: number): (() => void) | null {
    const day = this.today();
    const entry = this.counts.get(key);
    const count = entry && entry.day === day ? entry : { day, used: 0 };
    if (count.used >= limit) return null;
    count.used += 1;
    this.counts.set(key, count);
    if (this.counts.size > 1000) this.sweep(day);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      const current = this.counts.get(key);
      if (current && current.day === day && current.used > 0) current.used -= 1;
    };
  }

  private sweep(day: string): void {
    for (const [key, count] of this.counts) if (count.day !== day) this.counts.delete(key);
  }
}
