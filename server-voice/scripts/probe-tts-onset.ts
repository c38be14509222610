/**
 * `npm run probe:tts-onset`: how long the configured text-to-speech takes to its first bytes and to its first
 * audible sample, and what leading-silence trimming (AUDIO.md §9) would save on the same waveform. Prints JSON.
 * The provider comes from the same HERMES_REALTIME_TTS_* / _ESPEAK_* variables as the gateway (default:
 * offline espeak-ng). The saving is PCM-domain, not an end-to-end playback measurement.
 */
import { parseArgs } from 'node:util';
import { LeadingSilenceTrimmer, pcmOnsetSample } from '../src/audio/leading-silence.js';
import { concatPcm } from '../src/audio/pcm.js';
import { PcmResampler } from '../src/audio/resampler.js';
import { FRAME_SAMPLES, SAMPLE_RATE_HZ } from '../src/audio/types.js';
import { speechProvidersFromEnv } from '../src/providers/config.js';

const { values } = parseArgs({
  options: { text: { type: 'string', default: 'Hello! Here is the answer you asked for.' } },
});
const { tts } = speechProvidersFromEnv(process.env);

const started = performance.now();
let firstChunkMs: number | null = null;
const chunks: Int16Array[] = [];
for await (const chunk of tts.synthesize(values.text)) {
  firstChunkMs ??= performance.now() - started;
  chunks.push(chunk);
}
const totalMs = performance.now() - started;
const resampler = new PcmResampler(tts.sampleRateHz, SAMPLE_RATE_HZ);
const pcm = concatPcm([resampler.process(concatPcm(chunks)), resampler.flush()]);
const frames: Int16Array[] = [];
for (let offset = 0; offset < pcm.length; offset += FRAME_SAMPLES) {
  const frame = new Int16Array(FRAME_SAMPLES);
  frame.set(pcm.subarray(offset, offset + FRAME_SAMPLES));
  frames.push(frame);
}
const cpuBefore = process.cpuUsage();
const trimmer = new LeadingSilenceTrimmer();
const kept = [...frames.flatMap((frame) => trimmer.push(frame)), ...trimmer.finish()];
const cpu = process.cpuUsage(cpuBefore);
const trimmedFrames = frames.length - kept.length;
// Every retained frame must be byte-identical to the tail of the original.
const unchanged = kept.every(
  (frame, i) =>
    Buffer.compare(Buffer.from(frame.buffer), Buffer.from((frames[trimmedFrames + i] as Int16Array).buffer)) === 0,
);
const onset = pcmOnsetSample(pcm);
const trimmedOnset = pcmOnsetSample(concatPcm(kept));
console.log(
  JSON.stringify(
    {
      provider: tts.label,
      text_chars: values.text.length,
      first_chunk_ms: firstChunkMs === null ? null : Math.round(firstChunkMs),
      synthesis_total_ms: Math.round(totalMs),
      audio_ms: Math.round((pcm.length / SAMPLE_RATE_HZ) * 1000),
      onset_ms: onset === null ? null : Math.round((onset / SAMPLE_RATE_HZ) * 1000),
      onset_after_trim_ms: trimmedOnset === null ? null : Math.round((trimmedOnset / SAMPLE_RATE_HZ) * 1000),
      trimmed_ms: trimmedFrames * 20,
      trim_cpu_us: cpu.user + cpu.system,
      retained_samples_unchanged: unchanged,
    },
    null,
    2,
  ),
);
