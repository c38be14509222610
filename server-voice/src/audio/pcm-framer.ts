import { PcmResampler } from './resampler.js';
import { FRAME_SAMPLES, SAMPLE_RATE_HZ } from './types.js';

/** Bytes converted per resampler call, bounding the work done per HTTP chunk. */
const SLICE_BYTES = 8192;

/**
 * Turns a stream of PCM16 little-endian bytes at any rate (an HTTP body: arbitrary chunk boundaries, possibly
 * splitting a sample) into exact 20 ms frames of 48 kHz mono PCM16. The output is identical whatever the
 * chunking, because both the dangling byte and the resampler state carry over.
 */
export class PcmFramer {
  private readonly resampler: PcmResampler;
  private danglingByte: number | null = null;
  private partial = new Int16Array(FRAME_SAMPLES);
  private partialLength = 0;

  constructor(readonly inputRateHz: number) {
    this.resampler = new PcmResampler(inputRateHz, SAMPLE_RATE_HZ);
  }

  /** Feeds bytes; returns the complete frames they finish. */
  write(bytes: Uint8Array): Int16Array[] {
    const frames: Int16Array[] = [];
    let offset = 0;
    if (this.danglingByte !== null && bytes.length > 0) {
      const sample = new Int16Array(1);
      sample[0] = ((bytes[0] as number) << 8) | this.danglingByte;
      this.danglingByte = null;
      offset = 1;
      this.collect(this.resampler.process(sample), frames);
    }
    while (offset < bytes.length) {
      const end = Math.min(bytes.length, offset + SLICE_BYTES);
      const whole = end - offset - ((end - offset) % 2);
      if (whole > 0) {
        const view = new DataView(bytes.buffer, bytes.byteOffset + offset, whole);
        const samples = new Int16Array(whole / 2);
        for (let i = 0; i < samples.length; i++) samples[i] = view.getInt16(i * 2, true);
        this.collect(this.resampler.process(samples), frames);
      }
      if (whole < end - offset) this.danglingByte = bytes[end - 1] as number;
      offset = end;
    }
    return frames;
  }

  /** Feeds whole samples (providers that already decoded their PCM). */
  writeSamples(pcm: Int16Array): Int16Array[] {
    if (this.danglingByte !== null) throw new Error('incomplete PCM16 sample before whole samples');
    const frames: Int16Array[] = [];
    this.collect(this.resampler.process(pcm), frames);
    return frames;
  }

  /** Ends the stream: the resampler's tail and a last frame zero-padded to 20 ms. A dangling byte is an error. */
  finish(): Int16Array[] {
    if (this.danglingByte !== null) throw new Error('incomplete PCM16 sample at the end of the stream');
    const frames: Int16Array[] = [];
    this.collect(this.resampler.flush(), frames);
    if (this.partialLength > 0) {
      frames.push(this.partial.slice()); // the rest is already zero
      this.partialLength = 0;
    }
    return frames;
  }

  private collect(samples: Int16Array, frames: Int16Array[]): void {
    let offset = 0;
    while (offset < samples.length) {
      const take = Math.min(FRAME_SAMPLES - this.partialLength, samples.length - offset);
      this.partial.set(samples.subarray(offset, offset + take), this.partialLength);
      this.partialLength += take;
      offset += take;
      if (this.partialLength === FRAME_SAMPLES) {
        frames.push(this.partial);
        this.partial = new Int16Array(FRAME_SAMPLES);
        this.partialLength = 0;
      }
    }
  }
}
