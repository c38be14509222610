/**
 * Text-to-speech onset probe: how long the configured provider takes to produce its first audio, and how much
 * near-silence that audio starts with (what `tts_trim_leading_silence` would remove).
 *
 *   npx tsx server-voice/src/providers/tts-onset-probe.ts [--runs N] [text…]
 *
 * Provider settings come from the `HERMES_REALTIME_TTS_*` / `HERMES_REALTIME_ESPEAK_*` environment (offline
 * espeak-ng by default). Prints one JSON document; no audio is played or stored, and no key is printed.
 */
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { LeadingSilenceTrimmer, pcmOnsetSample } from '../audio/leading-silence.js';
import { concatPcm } from '../audio/pcm.js';
import { PcmFramer } from '../audio/pcm-framer.js';
import { FRAME_SAMPLES, SAMPLE_RATE_HZ } from '../audio/types.js';
import { speechProvidersFromEnv } from './config.js';
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

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

async function main(argv: string[]): Promise<void> {
  let runs = 3;
  const words: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--runs') runs = Math.max(1, Math.min(50, Number(argv[++i]) || 1));
    else words.push(arg);
  }
  const text = words.join(' ') || 'Sure. The weather in Paris today is mild, with a light breeze in the afternoon.';
  const { tts } = speechProvidersFromEnv(process.env);
  const measurements: OnsetMeasurement[] = [];
  for (let run = 0; run < runs; run++) measurements.push(await measureTtsOnset(tts, text));
  const round = (value: number | null): number | null => (value === null ? null : Math.round(value * 10) / 10);
  console.log(
    JSON.stringify(
      {
        provider: tts.label,
        provider_sample_rate_hz: tts.sampleRateHz,
        text_chars: text.length,
        runs: measurements.map((m) => ({
          first_chunk_ms: round(m.firstChunkMs),
          synthesis_ms: round(m.synthesisMs),
          audio_ms: round(m.audioMs),
          onset_ms: round(m.onsetMs),
          trimmable_ms: round(m.trimmableMs),
        })),
        median_first_chunk_ms: round(median(measurements.map((m) => m.firstChunkMs))),
        median_onset_ms: round(median(measurements.map((m) => m.onsetMs ?? 0))),
      },
      null,
      2,
    ),
  );
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main(process.argv.slice(2));
