import { FRAME_SAMPLES } from '../audio/types.js';
import type { FrameClock } from './frame-clock.js';

/** At most this many 20 ms frames (500 ms) wait ahead of the sender. */
export const MAX_QUEUED_FRAMES = 25;

/** Where a paced frame goes: the Opus encoder and RTP packetizer of a call (or a test's recorder). */
export type FrameSink<F = Int16Array> = (frame: F, info: { silent: boolean; deadlineMs: number }) => void;

/**
 * What a reply is spoken into: 20 ms PCM16 frames at `frameSamples` per frame, at most 500 ms ahead of the
 * wire. `PacedOutput` paces them in this process; `RemoteOutput` (media-sender.ts) encodes them here and
 * leaves the pacing to the media sender process.
 */
export interface OutboundAudio {
  readonly frameSamples: number;
  readonly epoch: number;
  readonly queuedFrames: number;
  write(frame: Int16Array, epoch: number): Promise<boolean>;
  clear(): void;
  drained(): Promise<void>;
}

/**
 * The producer side of a bounded frame queue: how many frames wait (at most 25, i.e. 500 ms), the epoch that
 * `clear()` advances, producers waiting for room and callers waiting for the queue to drain. `FramePacer`
 * keeps one for the frames it holds; `RemoteOutput` (media-sender.ts) for the frames the media sender
 * process has not yet reported sent.
 */
export class FrameBudget {
  private count = 0;
  private generation = 0;
  private waiters: (() => void)[] = [];
  private drainWaiters: (() => void)[] = [];

  /** The current generation; a producer passes it back so a `clear()` in between cancels its write. */
  get epoch(): number {
    return this.generation;
  }

  get queued(): number {
    return this.count;
  }

  get full(): boolean {
    return this.count >= MAX_QUEUED_FRAMES;
  }

  /**
   * Resolves when frames leave the queue or `clear()` runs. Producers loop on it while the queue is full and
   * their epoch is current, then check the epoch: the check and the add that follows must stay in one turn.
   */
  waitForRoom(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  added(): void {
    this.count += 1;
  }

  /** `frames` left the queue: producers get room, and drain waiters are told once it is empty. */
  removed(frames: number): void {
    this.count = Math.max(0, this.count - frames);
    this.wake();
    if (this.count === 0) this.settleDrain();
  }

  /** Empties the queue's count, advances the epoch and wakes everyone (blocked producers see the new epoch). */
  clear(): void {
    this.generation += 1;
    this.count = 0;
    this.wake();
    this.settleDrain();
  }

  /** Resolves once the queue is empty (immediately when it already is). */
  drained(): Promise<void> {
    if (this.count === 0) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  private wake(): void {
    for (const waiter of this.waiters.splice(0)) waiter();
  }

  private settleDrain(): void {
    for (const waiter of this.drainWaiters.splice(0)) waiter();
  }
}

/**
 * The outbound audio of one call: a bounded queue of 20 ms speech frames drained by the shared frame clock,
 * one frame per tick, and a silent frame on every tick with nothing queued — so the receiver's media clock
 * never stops between replies or clauses. Producers wait for room (backpressure keeps at most 500 ms
 * ahead); `clear()` drops queued speech at once and releases waiting producers, who then give up.
 *
 * The first frame of a reply is not held for the next tick: when the previous tick sent silence it goes out
 * as soon as it is written and takes that next tick's place (the tick then sends nothing for this call), so
 * a reply leaves up to 20 ms sooner without adding a frame to the stream, moving its timeline, or bursting.
 */
export class FramePacer<F> {
  private readonly queue: F[] = [];
  private readonly budget = new FrameBudget();
  private unsubscribe: (() => void) | null = null;
  /** The last tick sent a silent frame: the next speech frame starts a reply and may go out at once. */
  private idle = false;
  /** A frame went out ahead of its tick, which therefore sends nothing (the RTP timeline stays unchanged). */
  private slotTaken = false;
  /** Frames of speech sent since creation (silence excluded). */
  speechFramesSent = 0;

  constructor(
    private readonly clock: FrameClock,
    private readonly sink: FrameSink<F>,
    /** What a tick with nothing queued sends. */
    private readonly silence: F,
  ) {}

  start(): void {
    this.unsubscribe ??= this.clock.subscribe((deadlineMs) => this.tick(deadlineMs));
  }

  stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = null;
    this.clear();
  }

  get queuedFrames(): number {
    return this.queue.length;
  }

  /** The current generation; a producer passes it back so a `clear()` in between cancels its write. */
  get epoch(): number {
    return this.budget.epoch;
  }

  /**
   * Queues one frame of speech, waiting while 500 ms are already queued. Resolves false (frame dropped) when
   * `clear()` ran since `epoch` was read.
   */
  async write(frame: F, epoch: number): Promise<boolean> {
    while (this.budget.full && epoch === this.budget.epoch) await this.budget.waitForRoom();
    if (epoch !== this.budget.epoch) return false;
    if (this.idle && !this.slotTaken && this.queue.length === 0 && this.unsubscribe) {
      this.idle = false;
      this.slotTaken = true;
      try {
        this.send(frame, this.clock.now());
      } catch {
        // As on a tick: a failing sink is the call's business, never the producer's.
      }
      return true;
    }
    this.queue.push(frame);
    this.budget.added();
    return true;
  }

  /** Drops every queued frame now and wakes blocked producers (who see the new epoch and stop). */
  clear(): void {
    this.queue.length = 0;
    this.budget.clear();
  }

  /** Resolves once the queue is empty (immediately when it already is). */
  drained(): Promise<void> {
    return this.budget.drained();
  }

  private send(frame: F, deadlineMs: number): void {
    this.sink(frame, { silent: false, deadlineMs });
    this.speechFramesSent += 1;
  }

  private tick(deadlineMs: number): void {
    if (this.slotTaken) {
      // This tick's frame already went out early.
      this.slotTaken = false;
      return;
    }
    const frame = this.queue.shift();
    if (frame) {
      this.idle = false;
      this.send(frame, deadlineMs);
      this.budget.removed(1);
    } else {
      this.idle = true;
      this.sink(this.silence, { silent: true, deadlineMs });
    }
  }
}

/**
 * The in-process pacing of PCM16 frames: a `FramePacer` of 20 ms frames whose sink encodes them (the
 * gateway's `inline` media sender, and the unit tests' recorder).
 */
export class PacedOutput extends FramePacer<Int16Array> implements OutboundAudio {
  constructor(
    clock: FrameClock,
    sink: FrameSink,
    /** Samples per 20 ms frame: 960 at 48 kHz, or fewer when the call encodes at its speech provider's rate. */
    readonly frameSamples = FRAME_SAMPLES,
  ) {
    super(clock, sink, new Int16Array(frameSamples));
  }

  override async write(frame: Int16Array, epoch: number): Promise<boolean> {
    if (frame.length !== this.frameSamples) throw new RangeError(`frames are ${this.frameSamples} samples`);
    return super.write(frame, epoch);
  }
}
