/**
 * Timers as the service sees them; injected beside the clock so a test moves time by hand and never
 * sleeps waiting for a timeout to fire (ARCHITECTURE.md, "one clock with timers").
 */
export interface Timers {
  /** Runs `fire` once after `ms` milliseconds; the returned function cancels it. */
  after(ms: number, fire: () => void): () => void;
}

export const systemTimers: Timers = {
  after(ms, fire) {
    const handle = setTimeout(fire, ms);
    // A pending upstream timeout must never keep the process alive on shutdown.
    handle.unref();
    return () => clearTimeout(handle);
  },
};

/** Timers a test fires by hand: `advance(ms)` runs every timer due by then, in the order they fall due. */
export class ManualTimers implements Timers {
  private now = 0;
  private pending: { at: number; fire: () => void; id: number }[] = [];
  private nextId = 0;
  private readonly waiters: (() => void)[] = [];

  after(ms: number, fire: () => void): () => void {
    const id = this.nextId++;
    this.pending.push({ at: this.now + ms, fire, id });
    for (const wake of this.waiters.splice(0)) wake();
    return () => {
      this.pending = this.pending.filter((timer) => timer.id !== id);
    };
  }

  /** How many timers wait to fire. */
  get waiting(): number {
    return this.pending.length;
  }

  /** Resolves once at least `count` timers are pending: the event a test waits on before advancing. */
  async untilWaiting(count = 1): Promise<void> {
    while (this.pending.length < count) await new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  advance(ms: number): void {
    this.now += ms;
    // A full pass each time: a fired timer may schedule another that is already due.
    for (;;) {
      const due = this.pending.filter((timer) => timer.at <= this.now).sort((a, b) => a.at - b.at)[0];
      if (!due) return;
      this.pending = this.pending.filter((timer) => timer.id !== due.id);
      due.fire();
    }
  }
}
