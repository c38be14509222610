/** 20 ms: the pacing interval of outbound audio. */
export const FRAME_INTERVAL_MS = 20;

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

  constructor(readonly now: () => number = () => performance.now()) {}

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
      }
    };
  }

  private schedule(): void {
    this.timer = setTimeout(() => this.tick(), Math.max(0, this.nextDeadline - this.now()));
  }

  private tick(): void {
    const deadline = Math.max(this.nextDeadline, this.now());
    for (const listener of [...this.listeners]) {
      try {
        listener(deadline);
      } catch {
        // One call's failure must not stop the clock for the others; the call handles its own errors.
      }
    }
    this.nextDeadline = deadline + FRAME_INTERVAL_MS;
    if (this.listeners.size > 0) this.schedule();
    else this.timer = null;
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
