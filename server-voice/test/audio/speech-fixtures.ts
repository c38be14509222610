import { concatPcm } from '../../src/audio/pcm.js';
import { PcmResampler } from '../../src/audio/resampler.js';
import { FRAME_SAMPLES, SAMPLE_RATE_HZ } from '../../src/audio/types.js';
import { EspeakTextToSpeech } from '../../src/providers/espeak-tts.js';

/**
 * Real audio for detection tests, made offline: speech from espeak-ng (resampled 22 050 → 48 kHz), digital
 * silence, and seeded white noise.
 */

const espeak = new EspeakTextToSpeech({ voice: 'en-us', wordsPerMinute: 160 });

/** `text` spoken by espeak-ng, as 48 kHz mono PCM16. */
export async function spokenPcm(text: string): Promise<Int16Array> {
  const chunks: Int16Array[] = [];
  for await (const chunk of espeak.synthesize(text)) chunks.push(chunk);
  const resampler = new PcmResampler(espeak.sampleRateHz, SAMPLE_RATE_HZ);
  return concatPcm([resampler.process(concatPcm(chunks)), resampler.flush()]);
}

export function silencePcm(milliseconds: number): Int16Array {
  return new Int16Array((SAMPLE_RATE_HZ / 1000) * milliseconds);
}

/** Uniform white noise of the given RMS from a fixed seed (mulberry32), so runs are reproducible. */
export function noisePcm(milliseconds: number, rms: number, seed = 1): Int16Array {
  let state = seed >>> 0;
  const random = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const amplitude = rms * Math.sqrt(3); // uniform on [−a, a] has RMS a/√3
  const out = new Int16Array((SAMPLE_RATE_HZ / 1000) * milliseconds);
  for (let i = 0; i < out.length; i++) out[i] = Math.round((random() * 2 - 1) * amplitude);
  return out;
}

/** Splits audio into 20 ms frames (the last one may be short). */
export function framesOf(pcm: Int16Array, frameSamples = FRAME_SAMPLES): Int16Array[] {
  const frames: Int16Array[] = [];
  for (let start = 0; start < pcm.length; start += frameSamples) frames.push(pcm.subarray(start, start + frameSamples));
  return frames;
}
