import { SAMPLE_RATE_HZ } from './types.js';

/** Root mean square of PCM16 samples, `sqrt(mean(s²))`; 0 for an empty chunk. */
export function pcmRms(pcm: Int16Array, start = 0, end = pcm.length): number {
  const count = end - start;
  if (count <= 0) return 0;
  let sumSquares = 0;
  for (let i = start; i < end; i++) {
    const sample = pcm[i] as number;
    sumSquares += sample * sample;
  }
  return Math.sqrt(sumSquares / count);
}

/** Duration of `samples` at 48 kHz in integer microseconds (rounded down). */
export function samplesToUs(samples: number, sampleRateHz = SAMPLE_RATE_HZ): number {
  return Math.floor((samples * 1_000_000) / sampleRateHz);
}

/** Number of 48 kHz samples in `us` microseconds (rounded down). */
export function usToSamples(us: number, sampleRateHz = SAMPLE_RATE_HZ): number {
  return Math.floor((us * sampleRateHz) / 1_000_000);
}

/** Concatenates PCM chunks into one array. */
export function concatPcm(chunks: readonly Int16Array[]): Int16Array {
  let length = 0;
  for (const chunk of chunks) length += chunk.length;
  const out = new Int16Array(length);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.length;
  }
  return out;
}

/** Little-endian PCM16 bytes of `pcm` (a copy, independent of the host's byte order). */
export function pcmToBytes(pcm: Int16Array): Buffer {
  const out = Buffer.alloc(pcm.length * 2);
  for (let i = 0; i < pcm.length; i++) out.writeInt16LE(pcm[i] as number, i * 2);
  return out;
}

/** Samples of little-endian PCM16 `bytes`; the length must be even. */
export function bytesToPcm(bytes: Uint8Array): Int16Array {
  if (bytes.length % 2 !== 0) throw new RangeError('incomplete PCM16 sample: odd byte count');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Int16Array(bytes.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = view.getInt16(i * 2, true);
  return out;
}

/**
 * A growable run of samples kept as a list of chunks, so appending 20 ms frames for two minutes stays
 * linear. Chunks are copied on the way in, so callers may reuse their buffers.
 */
export class SampleQueue {
  private chunks: Int16Array[] = [];
  private total = 0;

  get length(): number {
    return this.total;
  }

  append(pcm: Int16Array): void {
    if (pcm.length === 0) return;
    this.chunks.push(pcm.slice());
    this.total += pcm.length;
  }

  clear(): void {
    this.chunks = [];
    this.total = 0;
  }

  /** Drops samples from the front until at most `keep` remain. */
  keepLast(keep: number): void {
    let excess = this.total - Math.max(0, keep);
    while (excess > 0) {
      const head = this.chunks[0] as Int16Array;
      if (head.length <= excess) {
        this.chunks.shift();
        this.total -= head.length;
        excess -= head.length;
      } else {
        this.chunks[0] = head.subarray(excess);
        this.total -= excess;
        excess = 0;
      }
    }
  }

  /** A copy of samples [start, end). */
  slice(start = 0, end = this.total): Int16Array {
    const from = Math.max(0, Math.min(start, this.total));
    const to = Math.max(from, Math.min(end, this.total));
    const out = new Int16Array(to - from);
    let position = 0;
    let written = 0;
    for (const chunk of this.chunks) {
      const chunkEnd = position + chunk.length;
      if (chunkEnd > from && position < to) {
        const a = Math.max(from, position) - position;
        const b = Math.min(to, chunkEnd) - position;
        out.set(chunk.subarray(a, b), written);
        written += b - a;
      }
      position = chunkEnd;
      if (position >= to) break;
    }
    return out;
  }

  /** Moves everything out of `other` to the end of this queue. */
  takeFrom(other: SampleQueue): void {
    for (const chunk of other.chunks) this.chunks.push(chunk);
    this.total += other.total;
    other.chunks = [];
    other.total = 0;
  }
}
