/** 20 ms: the pacing interval of outbound audio. */
export const FRAME_INTERVAL_MS = 20;
/** How early a precise clock's timer is set (see `SharedFrameClock`). */
const PRECISE_LEAD_MS = 2;
/** Intervals kept between two `takePacingStats` calls (a minute of ticks). */
const MAX_PACING_SAMPLES = 3000;

/** Outbound pacing as the gateway sent it (see `SharedFrameClock.takePacingStats`). */
export interface PacingStats {
  intervals: number;
  first_jitter_p50_ms: number;
  first_jitter_p99_ms: number;
  last_jitter_p50_ms: number;
  last_jitter_p99_ms: number;
  last_jitter_max_ms: number;
}

export interface FrameClock {
  /** Calls `onTick` every 20 ms until the returned function is called. */
  subscribe(onTick: (deadlineMs: number) => void): () => void;
  readonly now: () => number;
}

/**
 * One pacing clock per process, shared by every call: one timer instead of one per call, and all calls tick
 * together. Deadlines advance by exactly 20 ms; after a stall the next deadline starts from now instead of
 * firing the missed ticks back to back (no catch-up bursts that would overrun the receiver's jitter buffer).
 */
export class SharedFrameClock implements FrameClock {
  private readonly listeners = new Set<(deadlineMs: number) => void>();
  private timer: NodeJS.Timeout | null = null;
  private nextDeadline = 0;
  /** When the previous tick's first and last listener ran (for the pacing figures). */
  private previous: { first: number; last: number } | null = null;
  private firstDeviations: number[] = [];
  private lastDeviations: number[] = [];

  /** With `precise`: the timer is set this much early and the last stretch is slept exactly (below). */
  private readonly leadMs: number;
  private readonly sleeper: Int32Array | null;

  /**
   * `precise` is for a process that does nothing but send (the media sender): Node's timers have whole-
   * millisecond resolution against a loop time cached at the start of each loop turn, so a 20 ms timer fires
   * up to 1–2 ms early or late. A precise clock sets its timer 2 ms early and blocks the thread for the rest
   * with `Atomics.wait` (a kernel timed wait, accurate to tens of microseconds). Never for the gateway's own
   * loop: it would hold everything else up for those 2 ms.
   */
  constructor(
    readonly now: () => number = () => performance.now(),
    options: { precise?: boolean } = {},
  ) {
    this.leadMs = options.precise ? PRECISE_LEAD_MS : 0;
    this.sleeper = options.precise ? new Int32Array(new SharedArrayBuffer(4)) : null;
  }

  subscribe(onTick: (deadlineMs: number) => void): () => void {
    this.listeners.add(onTick);
    if (!this.timer) {
      this.nextDeadline = this.now() + FRAME_INTERVAL_MS;
      this.schedule();
    }
    return () => {
      this.listeners.delete(onTick);
      if (this.listeners.size === 0 && this.timer) {
        clearTimeout(this.timer);
        this.timer = null;
        // The clock stops with the last call; the time until the next call starts it again is idle, not a
        // late tick (counted, it showed as "jitter" of the length of the pause, e.g. 26,705 ms).
        this.previous = null;
      }
    };
  }

  private schedule(): void {
    this.timer = setTimeout(() => this.fire(), Math.max(0, this.nextDeadline - this.leadMs - this.now()));
  }

  private fire(): void {
    const sleeper = this.sleeper;
    if (sleeper) {
      // The timer fires up to ~2 ms either side of its target; sleep whatever is left until the deadline.
      for (let remaining = this.nextDeadline - this.now(); remaining > 0; remaining = this.nextDeadline - this.now())
        Atomics.wait(sleeper, 0, 0, remaining);
    }
    this.tick();
  }

  /**
   * Outbound pacing since the last call, as sent: |interval − 20 ms| between consecutive ticks, for the first
   * call served on a tick and for the last (which waits for every other call's frame). Resets the figures.
   */
  takePacingStats(): PacingStats | null {
    const first = this.firstDeviations.sort((a, b) => a - b);
    const last = this.lastDeviations.sort((a, b) => a - b);
    this.firstDeviations = [];
    this.lastDeviations = [];
    if (first.length === 0) return null;
    const at = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0;
    const tenths = (ms: number) => Math.round(ms * 10) / 10;
    return {
      intervals: first.length,
      first_jitter_p50_ms: tenths(at(first, 0.5)),
      first_jitter_p99_ms: tenths(at(first, 0.99)),
      last_jitter_p50_ms: tenths(at(last, 0.5)),
      last_jitter_p99_ms: tenths(at(last, 0.99)),
      last_jitter_max_ms: tenths(last.at(-1) ?? 0),
    };
  }

  private tick(): void {
    const first = this.now();
    const deadline = Math.max(this.nextDeadline, first);
    for (const listener of [...this.listeners]) {
      try {
        listener(deadline);
      } catch {
        // One call's failure must not stop the clock for the others; the call handles its own errors.
      }
    }
    const last = this.now();
    if (this.previous && this.firstDeviations.length < MAX_PACING_SAMPLES) {
      this.firstDeviations.push(Math.abs(first - this.previous.first - FRAME_INTERVAL_MS));
      this.lastDeviations.push(Math.abs(last - this.previous.last - FRAME_INTERVAL_MS));
    }
    this.previous = { first, last };
    this.nextDeadline = deadline + FRAME_INTERVAL_MS;
    if (this.listeners.size > 0) this.schedule();
    else {
      this.timer = null;
      this.previous = null;
    }
  }
}

/** A clock a test advances by hand: every `advance(20)` is one tick. */
export class ManualFrameClock implements FrameClock {
  private readonly listeners = new Set<(deadlineMs: number) => void>();
  private time = 0;
  readonly now = () => this.time;

  subscribe(onTick: (deadlineMs: number) => void): () => void {
    this.listeners.add(onTick);
    return () => this.listeners.delete(onTick);
  }

  /** Advances time and fires one tick per elapsed 20 ms. */
  advance(ms: number): void {
    const ticks = Math.floor(ms / FRAME_INTERVAL_MS);
    for (let i = 0; i < ticks; i += 1) {
      this.time += FRAME_INTERVAL_MS;
      for (const listener of [...this.listeners]) listener(this.time);
    }
  }
}
