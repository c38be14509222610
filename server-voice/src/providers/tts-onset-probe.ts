/**
 * Text-to-speech onset probe: how long a provider takes to produce its first audio, and how much near-silence
 * that audio starts with (what `tts_trim_leading_silence` would remove). Run it with `npm run probe:tts-onset`
 * (scripts/probe-tts-onset.ts).
 */
import { performance } from 'node:perf_hooks';
import { LeadingSilenceTrimmer, pcmOnsetSample } from '../audio/leading-silence.js';
import { concatPcm } from '../audio/pcm.js';
import { PcmFramer } from '../audio/pcm-framer.js';
import { FRAME_SAMPLES, SAMPLE_RATE_HZ } from '../audio/types.js';
import type { TextToSpeech } from './types.js';

export interface OnsetMeasurement {
  /** Request to the first PCM chunk. */
  firstChunkMs: number;
  /** Request to the end of synthesis. */
  synthesisMs: number;
  /** Audio produced, at 48 kHz after framing. */
  audioMs: number;
  /** Position of the first sample louder than |40| in the first second, or null (a logging aid, as in the reference). */
  onsetMs: number | null;
  /** Audio the §9 trimmer removes (quiet frames before the onset beyond its 80 ms lead-in). */
  trimmableMs: number;
}

const nowMs = (): number => performance.now();

/** Speaks `text` once and measures the onset. Pure of side effects beyond the provider call. */
export async function measureTtsOnset(tts: TextToSpeech, text: string): Promise<OnsetMeasurement> {
  const framer = new PcmFramer(tts.sampleRateHz);
  const trimmer = new LeadingSilenceTrimmer();
  const frames: Int16Array[] = [];
  const started = nowMs();
  let firstChunkMs: number | null = null;
  for await (const chunk of tts.synthesize(text)) {
    firstChunkMs ??= nowMs() - started;
    frames.push(...framer.writeSamples(chunk));
  }
  const synthesisMs = nowMs() - started;
  frames.push(...framer.finish());
  for (const frame of frames) trimmer.push(frame);
  trimmer.finish();
  const audio = concatPcm(frames);
  const onset = pcmOnsetSample(audio);
  return {
    firstChunkMs: firstChunkMs ?? synthesisMs,
    synthesisMs,
    audioMs: (audio.length / SAMPLE_RATE_HZ) * 1000,
    onsetMs: onset === null ? null : (onset / SAMPLE_RATE_HZ) * 1000,
    trimmableMs: (trimmer.trimmedFrames * FRAME_SAMPLES * 1000) / SAMPLE_RATE_HZ,
  };
}
