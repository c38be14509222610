/**
 * `npm run probe:tts-onset -- [--runs N] [text…]`: how long the configured text-to-speech takes to its first
 * audio, where its onset lies and how much leading near-silence trimming (AUDIO.md §9) would remove, measured by
 * measureTtsOnset() (src/providers/tts-onset-probe.ts). Prints one JSON document; no audio is played or stored,
 * and no key is printed. The provider comes from the same HERMES_REALTIME_TTS_* / _ESPEAK_* variables as the
 * gateway (default: offline espeak-ng). The saving is PCM-domain, not an end-to-end playback measurement.
 */
import { parseArgs } from 'node:util';
import { speechProvidersFromEnv } from '../src/providers/config.js';
import { measureTtsOnset, type OnsetMeasurement } from '../src/providers/tts-onset-probe.js';

const { values, positionals } = parseArgs({
  options: { runs: { type: 'string', default: '3' } },
  allowPositionals: true,
});
const runs = Math.max(1, Math.min(50, Number(values.runs) || 1));
const text = positionals.join(' ') || 'Sure. The weather in Paris today is mild, with a light breeze in the afternoon.';
const { tts } = speechProvidersFromEnv(process.env);

const measurements: OnsetMeasurement[] = [];
for (let run = 0; run < runs; run++) measurements.push(await measureTtsOnset(tts, text));

const round = (value: number | null): number | null => (value === null ? null : Math.round(value * 10) / 10);
const median = (numbers: number[]): number => [...numbers].sort((a, b) => a - b)[Math.floor(numbers.length / 2)] ?? 0;
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
