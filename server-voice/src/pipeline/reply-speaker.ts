import { LeadingSilenceTrimmer } from '../audio/leading-silence.js';
import { PcmResampler } from '../audio/resampler.js';
import { FRAME_INTERVAL_MS } from '../media/frame-clock.js';
import type { OutboundAudio } from '../media/paced-output.js';
import type { TextToSpeech } from '../providers/types.js';

/** How a reply's speech ended. */
export type SpeechOutcome =
  | { status: 'spoken' }
  /** Nothing audible was queued before the provider failed: whole-reply synthesis may be tried. */
  | { status: 'failed_before_audio' }
  /** The provider failed after audio played: the rest is not spoken and nothing is replayed. */
  | { status: 'failed_after_audio' }
  | { status: 'cancelled' };

/** Cuts a stream of samples into exact 20 ms frames, whatever the chunk boundaries. */
class Framer {
  private partial: Int16Array;
  private filled = 0;

  constructor(private readonly frameSamples: number) {
    this.partial = new Int16Array(frameSamples);
  }

  push(pcm: Int16Array): Int16Array[] {
    const frames: Int16Array[] = [];
    let offset = 0;
    while (offset < pcm.length) {
      const take = Math.min(this.frameSamples - this.filled, pcm.length - offset);
      this.partial.set(pcm.subarray(offset, offset + take), this.filled);
      this.filled += take;
      offset += take;
      if (this.filled === this.frameSamples) {
        frames.push(this.partial);
        this.partial = new Int16Array(this.frameSamples);
        this.filled = 0;
      }
    }
    return frames;
  }

  /** The last partial frame, zero-padded. */
  flush(): Int16Array[] {
    if (this.filled === 0) return [];
    const frame = this.partial;
    this.partial = new Int16Array(this.frameSamples);
    this.filled = 0;
    return [frame];
  }
}

export interface ReplySpeakerOptions {
  tts: TextToSpeech;
  output: OutboundAudio;
  /** Drop near-silent frames at the start of the reply (AUDIO.md §9). */
  trimLeadingSilence: boolean;
  /** Called once, when the first frame of this reply enters the output queue. */
  onFirstAudio: () => void;
  /** Called once, when the provider's first chunk of this reply arrives (latency tracing). */
  onFirstChunk?: () => void;
}

/**
 * Speaks one reply clause by clause, in order, while the agent is still writing: each clause is synthesized
 * as a stream, resampled to the output's rate if it differs, cut into 20 ms frames and queued on the call's paced output (which
 * holds at most 500 ms, so synthesis runs just ahead of playback). `abort()` stops synthesis at once.
 */
export class ReplySpeaker {
  private readonly clauses: string[] = [];
  private wake: (() => void) | null = null;
  private ended = false;
  private readonly controller = new AbortController();
  private readonly framer: Framer;
  /** The output's rate: the provider's audio is resampled to it when they differ. */
  private readonly outputRateHz: number;
  private readonly trimmer: LeadingSilenceTrimmer | null;
  private readonly epoch: number;
  private audibleNow = false;
  private chunkSeen = false;
  private failure: SpeechOutcome | null = null;
  private readonly done: Promise<SpeechOutcome>;

  constructor(private readonly options: ReplySpeakerOptions) {
    const frameSamples = options.output.frameSamples;
    this.outputRateHz = (frameSamples * 1000) / FRAME_INTERVAL_MS;
    this.framer = new Framer(frameSamples);
    this.trimmer = options.trimLeadingSilence ? new LeadingSilenceTrimmer(frameSamples) : null;
    this.epoch = options.output.epoch;
    this.done = this.run();
  }

  /** True once a frame of this reply was queued for playback. */
  get audible(): boolean {
    return this.audibleNow;
  }

  say(clause: string): void {
    if (this.ended) return;
    this.clauses.push(clause);
    this.wake?.();
  }

  /** No more clauses: resolves when every clause is queued for playback (or speech failed/cancelled). */
  finish(): Promise<SpeechOutcome> {
    this.ended = true;
    this.wake?.();
    return this.done;
  }

  /** Cancel: stop synthesizing now. Queued frames are the output's business (`clear()`). */
  abort(): void {
    this.ended = true;
    this.clauses.length = 0;
    this.controller.abort();
    this.trimmer?.discard();
    this.wake?.();
  }

  private get cancelled(): boolean {
    return this.controller.signal.aborted || this.options.output.epoch !== this.epoch;
  }

  private async run(): Promise<SpeechOutcome> {
    for (;;) {
      const clause = this.clauses.shift();
      if (clause === undefined) {
        if (this.ended) break;
        await new Promise<void>((resolve) => (this.wake = resolve));
        this.wake = null;
        continue;
      }
      if (this.failure || this.cancelled) continue;
      try {
        await this.speakClause(clause);
      } catch {
        if (this.cancelled) continue;
        this.failure = this.audibleNow ? { status: 'failed_after_audio' } : { status: 'failed_before_audio' };
      }
    }
    if (this.cancelled) return { status: 'cancelled' };
    if (this.failure) return this.failure;
    const tail = [...this.framer.flush()];
    const frames = this.trimmer ? tail.flatMap((frame) => this.trimmer?.push(frame) ?? []) : tail;
    if (this.trimmer) frames.push(...this.trimmer.finish());
    for (const frame of frames) await this.queue(frame);
    return this.cancelled ? { status: 'cancelled' } : { status: 'spoken' };
  }

  private async speakClause(clause: string): Promise<void> {
    const { tts } = this.options;
    const rate = this.outputRateHz;
    const resampler = tts.sampleRateHz === rate ? null : new PcmResampler(tts.sampleRateHz, rate);
    for await (const chunk of tts.synthesize(clause, { signal: this.controller.signal })) {
      if (this.cancelled) return;
      if (!this.chunkSeen) {
        this.chunkSeen = true;
        this.options.onFirstChunk?.();
      }
      await this.frames(resampler ? resampler.process(chunk) : chunk);
    }
    if (resampler && !this.cancelled) await this.frames(resampler.flush());
  }

  private async frames(pcm: Int16Array): Promise<void> {
    for (const frame of this.framer.push(pcm)) {
      const playable = this.trimmer ? this.trimmer.push(frame) : [frame];
      for (const out of playable) await this.queue(out);
    }
  }

  private async queue(frame: Int16Array): Promise<void> {
    if (this.cancelled) return;
    const accepted = await this.options.output.write(frame, this.epoch);
    if (accepted && !this.audibleNow) {
      this.audibleNow = true;
      this.options.onFirstAudio();
    }
  }
}
