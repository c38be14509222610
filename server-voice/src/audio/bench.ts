/**
 * Micro-benchmark of input detection costs, printed as a table and one JSON line:
 *   npx tsx server-voice/src/audio/bench.ts [--seconds N]
 * - Silero inference time per 32 ms window (one thread, as in production) and per 20 ms frame including
 *   the 48 → 16 kHz resampling;
 * - energy gate + endpointer cost per 20 ms frame;
 * - resampling and framing of streamed speech (24 kHz → 48 kHz frames) per 20 ms of output.
 * Audio: espeak-ng speech alternating with seeded noise and silence. CPU time (process.cpuUsage) is reported
 * beside wall-clock percentiles because a busy machine inflates wall time. A script, not a test.
 */
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { EspeakTextToSpeech } from '../providers/espeak-tts.js';
import { DirectEndpointer } from './endpointer.js';
import { AdaptiveRmsGate } from './energy-gate.js';
import { concatPcm, pcmToBytes } from './pcm.js';
import { PcmFramer } from './pcm-framer.js';
import { PcmResampler } from './resampler.js';
import { SILERO_CONTEXT_SAMPLES, SILERO_WINDOW_SAMPLES, SileroDetectorFactory, SileroModel } from './silero.js';
import { FRAME_SAMPLES, MAX_CAPTURE_SAMPLES, SAMPLE_RATE_HZ } from './types.js';

interface Summary {
  count: number;
  meanUs: number;
  p50Us: number;
  p99Us: number;
  maxUs: number;
}

function summarize(samplesMs: number[]): Summary {
  const sorted = [...samplesMs].sort((a, b) => a - b);
  const at = (q: number): number => (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0) * 1000;
  const mean = (samplesMs.reduce((sum, value) => sum + value, 0) / Math.max(1, samplesMs.length)) * 1000;
  return { count: samplesMs.length, meanUs: mean, p50Us: at(0.5), p99Us: at(0.99), maxUs: at(1) };
}

/** CPU time (user + system) of this process in microseconds: robust to other processes competing for the cores. */
function cpuUs(): number {
  const usage = process.cpuUsage();
  return usage.user + usage.system;
}

function frames(pcm: Int16Array): Int16Array[] {
  const out: Int16Array[] = [];
  for (let start = 0; start + FRAME_SAMPLES <= pcm.length; start += FRAME_SAMPLES)
    out.push(pcm.subarray(start, start + FRAME_SAMPLES));
  return out;
}

function noise(samples: number, rms: number, seed: number): Int16Array {
  let state = seed;
  const out = new Int16Array(samples);
  for (let i = 0; i < samples; i++) {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    out[i] = Math.round((state / 2 ** 32 - 0.5) * 2 * rms * Math.sqrt(3));
  }
  return out;
}

async function speechAt48k(): Promise<Int16Array> {
  const tts = new EspeakTextToSpeech();
  const chunks: Int16Array[] = [];
  for await (const chunk of tts.synthesize('Hello there. Could you tell me what the weather is like in Paris today?'))
    chunks.push(chunk);
  const resampler = new PcmResampler(tts.sampleRateHz, SAMPLE_RATE_HZ);
  return concatPcm([resampler.process(concatPcm(chunks)), resampler.flush()]);
}

async function main(): Promise<void> {
  const secondsArg = process.argv.indexOf('--seconds');
  const seconds = secondsArg > 0 ? Number(process.argv[secondsArg + 1]) : 30;
  const speech = await speechAt48k();
  const pieces: Int16Array[] = [];
  let total = 0;
  for (let seed = 1; total < seconds * SAMPLE_RATE_HZ; seed++) {
    for (const piece of [new Int16Array(SAMPLE_RATE_HZ / 2), noise(SAMPLE_RATE_HZ / 2, 200, seed), speech]) {
      pieces.push(piece);
      total += piece.length;
    }
  }
  const audio = concatPcm(pieces).subarray(0, seconds * SAMPLE_RATE_HZ);
  const audioFrames = frames(audio);
  const settings = {
    silenceDurationUs: 700_000,
    asrPrefetchSilenceUs: 350_000,
    maxCaptureSamples: MAX_CAPTURE_SAMPLES,
  };

  // Energy gate + endpointer, per 20 ms frame (warm-up pass first).
  const energyTimes: number[] = [];
  let energyCpuUs = 0;
  for (let pass = 0; pass < 2; pass++) {
    const cpuStart = cpuUs();
    const endpointer = new DirectEndpointer(new AdaptiveRmsGate(), settings);
    let nowUs = 0;
    for (const frame of audioFrames) {
      nowUs += 20_000;
      const start = performance.now();
      endpointer.push(frame, nowUs);
      if (pass === 1) energyTimes.push(performance.now() - start);
    }
    if (pass === 1) energyCpuUs = (cpuUs() - cpuStart) / audioFrames.length;
  }

  // Silero: raw inference per window, then score() per 20 ms frame (resampling + inference when a window completes).
  const model = await SileroModel.load();
  const windowTimes: number[] = [];
  const state = new Float32Array(256);
  const input = new Float32Array(SILERO_CONTEXT_SAMPLES + SILERO_WINDOW_SAMPLES);
  const resampled = new PcmResampler(SAMPLE_RATE_HZ, 16_000).process(audio);
  const windowCpuStart = cpuUs();
  for (let start = 0; start + SILERO_WINDOW_SAMPLES <= resampled.length; start += SILERO_WINDOW_SAMPLES) {
    for (let i = 0; i < SILERO_WINDOW_SAMPLES; i++)
      input[SILERO_CONTEXT_SAMPLES + i] = (resampled[start + i] as number) / 32768;
    const begin = performance.now();
    await model.infer(input.slice(), state);
    windowTimes.push(performance.now() - begin);
  }
  const windowCpuUs = (cpuUs() - windowCpuStart) / Math.max(1, windowTimes.length);
  const factory = new SileroDetectorFactory(model, 0.5);
  const detector = factory.create();
  const frameTimes: number[] = [];
  const frameCpuStart = cpuUs();
  for (const frame of audioFrames) {
    const begin = performance.now();
    await detector.score(frame);
    frameTimes.push(performance.now() - begin);
  }
  const frameCpuUs = (cpuUs() - frameCpuStart) / audioFrames.length;
  await model.close();

  // Streamed speech: 24 kHz bytes → 48 kHz 20 ms frames, per 20 ms of output.
  const tts24 = pcmToBytes(new PcmResampler(SAMPLE_RATE_HZ, 24_000).process(audio));
  const framer = new PcmFramer(24_000);
  const framerCpuStart = cpuUs();
  let framed = 0;
  for (let start = 0; start < tts24.length; start += 4096)
    framed += framer.write(tts24.subarray(start, start + 4096)).length;
  const framerCpuUs = (cpuUs() - framerCpuStart) / Math.max(1, framed);

  const energy = summarize(energyTimes);
  const window = summarize(windowTimes.slice(10));
  const perFrame = summarize(frameTimes.slice(10));
  const rows: [string, string][] = [
    [
      'audio analysed',
      `${seconds} s (${audioFrames.length} frames of 20 ms), load average ${os.loadavg()[0]?.toFixed(1)}`,
    ],
    [
      'energy gate + endpointer per frame',
      `CPU ${energyCpuUs.toFixed(1)} µs; wall p50 ${energy.p50Us.toFixed(1)} µs, p99 ${energy.p99Us.toFixed(1)} µs`,
    ],
    [
      'Silero inference per 32 ms window',
      `CPU ${windowCpuUs.toFixed(0)} µs; wall p50 ${window.p50Us.toFixed(0)} µs, p99 ${window.p99Us.toFixed(0)} µs`,
    ],
    [
      'Silero score() per 20 ms frame',
      `CPU ${frameCpuUs.toFixed(0)} µs; wall p50 ${perFrame.p50Us.toFixed(0)} µs, p99 ${perFrame.p99Us.toFixed(0)} µs`,
    ],
    ['Silero CPU per input', `${((frameCpuUs / 20_000) * 100).toFixed(2)} % of one core`],
    ['TTS framing 24→48 kHz per 20 ms', `CPU ${framerCpuUs.toFixed(1)} µs`],
  ];
  const width = Math.max(...rows.map(([name]) => name.length));
  for (const [name, value] of rows) console.log(`${name.padEnd(width)}  ${value}`);
  console.log(
    JSON.stringify({
      loadAverage: os.loadavg()[0],
      energyGateCpuPerFrameUs: energyCpuUs,
      energyGateWallPerFrameUs: energy,
      sileroCpuPerWindowUs: windowCpuUs,
      sileroWallPerWindowUs: window,
      sileroCpuPerFrameUs: frameCpuUs,
      sileroWallPerFrameUs: perFrame,
      sileroCorePercentPerInput: (frameCpuUs / 20_000) * 100,
      ttsFramingCpuPerFrameUs: framerCpuUs,
    }),
  );
}

await main();
