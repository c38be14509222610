import type { Clock } from '../../clock.js';
import type { Timers } from '../../kernel/timers.js';

/**
 * Plays audio that arrives faster than real time out at real time plus a small lead (the seed: Grok's
 * replies). Each chunk is released once the audio already released runs less than `leadMs` ahead of the
 * clock; `flush()` drops whatever is still queued (the user spoke over the reply).
 */
export class AudioPacer {
  private readonly queue: Buffer[] = [];
  /** Clock time at which the audio released so far finishes playing. */
  private playedUntilMs = 0;
  private cancelTimer: (() => void) | undefined;
  private readonly chunkBytes: number;
  private readonly bytesPerMs: number;

  constructor(
    private readonly options: {
      sampleRateHz: number;
      leadMs: number;
      chunkMs: number;
      clock: Clock;
      timers: Timers;
      release: (pcm: Buffer) => void;
    },
  ) {
    this.bytesPerMs = (options.sampleRateHz * 2) / 1000;
    // Whole samples only, so a chunk never splits one.
    this.chunkBytes = Math.max(2, Math.round(this.bytesPerMs * options.chunkMs) & ~1);
  }

  /** Audio still waiting, in bytes. */
  get queuedBytes(): number {
    return this.queue.reduce((sum, chunk) => sum + chunk.length, 0);
  }

  push(pcm: Buffer): void {
    for (let offset = 0; offset < pcm.length; offset += this.chunkBytes) {
      this.queue.push(pcm.subarray(offset, Math.min(pcm.length, offset + this.chunkBytes)));
    }
    this.pump();
  }

  /** Drops what is queued; what was released already has been sent. */
  flush(): void {
    this.queue.length = 0;
    this.cancelTimer?.();
    this.cancelTimer = undefined;
  }

  close(): void {
    this.flush();
  }

  private pump(): void {
    if (this.cancelTimer) return;
    const now = this.options.clock.now();
    // Audio that finished playing leaves no debt: a new reply starts from now, not from the last one.
    if (this.playedUntilMs < now) this.playedUntilMs = now;
    while (this.queue.length > 0 && this.playedUntilMs - now < this.options.leadMs) {
      const chunk = this.queue.shift() as Buffer;
      this.playedUntilMs += chunk.length / this.bytesPerMs;
      this.options.release(chunk);
    }
    if (this.queue.length === 0) return;
    const waitMs = Math.max(1, Math.ceil(this.playedUntilMs - now - this.options.leadMs));
    this.cancelTimer = this.options.timers.after(waitMs, () => {
      this.cancelTimer = undefined;
      this.pump();
    });
  }
}
