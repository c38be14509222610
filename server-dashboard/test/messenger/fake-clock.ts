/** A manual clock: timers fire only when a test advances time. */
import type { Clock, TimerHandle } from '../../src/messenger/clock.js';

interface Timer {
  id: number;
  at: number;
  fn: () => void;
  every: number | null;
}

export class FakeClock implements Clock {
  private t = 1_800_000_000_000;
  private timers: Timer[] = [];
  private seq = 0;
  /** Every delay passed to setTimeout, in order (backoff assertions). */
  readonly timeouts: number[] = [];

  now(): number {
    return this.t;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    this.timeouts.push(ms);
    return this.add(fn, ms, null);
  }

  setInterval(fn: () => void, ms: number): TimerHandle {
    return this.add(fn, ms, ms);
  }

  private add(fn: () => void, ms: number, every: number | null): TimerHandle {
    const timer: Timer = { id: ++this.seq, at: this.t + ms, fn, every };
    this.timers.push(timer);
    return { cancel: () => (this.timers = this.timers.filter((x) => x !== timer)) };
  }

  /** Moves time forward, firing due timers in order. */
  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      const due = this.timers.filter((x) => x.at <= end).sort((a, b) => a.at - b.at || a.id - b.id)[0];
      if (due === undefined) break;
      this.t = Math.max(this.t, due.at);
      if (due.every !== null) due.at += due.every;
      else this.timers = this.timers.filter((x) => x !== due);
      due.fn();
    }
    this.t = end;
  }

  pending(): number {
    return this.timers.length;
  }
}
