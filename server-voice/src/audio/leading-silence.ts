import { FRAME_SAMPLES } from './types.js';

/** A frame is non-quiet when any |sample| exceeds this peak (≈ −66 dBFS): peak, not RMS, so a faint onset counts. */
export const QUIET_PEAK = 16;
/** Quiet frames kept before the onset (80 ms), so the first phoneme's attack is not clipped. */
export const LEAD_IN_FRAMES = 4;
/** Trimming gives up after one second: a reply never loses more than that. */
export const MAX_SCAN_FRAMES = 50;

function isQuiet(frame: Int16Array): boolean {
  for (let i = 0; i < frame.length; i++) {
    const sample = frame[i] as number;
    if (sample > QUIET_PEAK || sample < -QUIET_PEAK) return false;
  }
  return true;
}

/**
 * Removes near-silent frames from the start of one spoken reply (AUDIO.md §9), fed 20 ms frames (48 kHz unless told).
 * Keeps 80 ms before the first non-quiet frame, scans at most one second, buffers at most four frames, and
 * passes everything after the onset through untouched. One instance per reply.
 */
export class LeadingSilenceTrimmer {
  private pending: Int16Array[] = [];
  private scanned = 0;
  private done = false;
  private trimmed = 0;

  /** `frameSamples`: the length of the 20 ms frames it is fed (960 at 48 kHz, 480 at 24 kHz). */
  constructor(private readonly frameSamples = FRAME_SAMPLES) {}

  /** Frames dropped so far. */
  get trimmedFrames(): number {
    return this.trimmed;
  }

  /** Feeds one frame; returns the frames to play now (possibly none). */
  push(frame: Int16Array): Int16Array[] {
    if (frame.length !== this.frameSamples)
      throw new RangeError(`leading-silence trimming needs ${this.frameSamples}-sample frames, got ${frame.length}`);
    if (this.done) return [frame];
    this.scanned++;
    if (!isQuiet(frame)) {
      this.done = true;
      const out = [...this.pending, frame];
      this.pending = [];
      return out;
    }
    if (this.pending.length === LEAD_IN_FRAMES) {
      this.pending.shift();
      this.trimmed++;
    }
    this.pending.push(frame);
    if (this.scanned >= MAX_SCAN_FRAMES) return this.finish();
    return [];
  }

  /** End of the reply (or of scanning): the retained quiet frames are played. */
  finish(): Int16Array[] {
    this.done = true;
    const out = this.pending;
    this.pending = [];
    return out;
  }

  /** The reply was cancelled: retained frames are dropped. */
  discard(): void {
    this.done = true;
    this.pending = [];
  }
}

/** Logging aid: the index of the first sample with |s| > 40 within the first second, or null. */
export function pcmOnsetSample(pcm: Int16Array, thresholdPeak = 40, searchSamples = 48_000): number | null {
  const end = Math.min(pcm.length, searchSamples);
  for (let i = 0; i < end; i++) {
    const sample = pcm[i] as number;
    if (sample > thresholdPeak || sample < -thresholdPeak) return i;
  }
  return null;
}
