/**
 * `npm run probe:vad`: an offline check of voice detection through the direct capture path itself
 * (`VoiceInput` → the configured detector → `DirectEndpointer`, exactly what a WebRTC call runs), on a clock of
 * 20 ms frames. It plays a noise step (a quiet room that gets louder), then the user's speech WAV over the
 * louder room, then the same speech scaled down (quiet speech), and reports the endpoint events with their
 * times, whether noise alone started speech, and what each frame cost to process. Nothing is recorded, played
 * or sent anywhere; a synthetic fixture does not replace a check with the real room and microphone.
 */
import { EnergyDetectorFactory } from '../audio/energy-detector.js';
import { concatPcm } from '../audio/pcm.js';
import { PcmResampler } from '../audio/resampler.js';
import { parseAudioSettings } from '../audio/settings.js';
import { SileroDetectorFactory } from '../audio/silero.js';
import {
  FRAME_SAMPLES,
  SAMPLE_RATE_HZ,
  type EndpointEvent,
  type VadBackend,
  type VoiceDetectorFactory,
} from '../audio/types.js';
import { decodeWav } from '../audio/wav.js';
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { VoiceInput } from '../pipeline/voice-input.js';
import { AudioSettingsError } from '../audio/settings.js';
import { SileroModelError } from '../audio/silero.js';
import { EXIT_REFUSED, type ProbeIo } from './probe-io.js';

/** Fixture rates accepted: telephone band up to studio rates; anything else is more likely a broken header. */
const MIN_FIXTURE_RATE_HZ = 8_000;
const MAX_FIXTURE_RATE_HZ = 96_000;
/** A fixture shorter than the shortest utterance the endpointer keeps (0.5 s) cannot be endpointed. */
const MIN_FIXTURE_SECONDS = 0.5;
/** Bounded like one captured utterance (two minutes), so a wrong file cannot run for an hour. */
const MAX_FIXTURE_SECONDS = 120;
/** Quiet speech: the fixture at a quarter of its level (−12 dB), as a speaker further from the microphone. */
const QUIET_SPEECH_GAIN = 0.25;

/** The fixture cannot be used; the message says why and what is expected. */
export class VadProbeError extends Error {
  override readonly name = 'VadProbeError';
}

export interface VadProbeOptions {
  /** The user's speech, 48 kHz mono (see `readSpeechFixture`). */
  speech: Int16Array;
  backend: VadBackend;
  /** Silero model file (null: the pinned model shipped with the package). Only for `silero`. */
  modelPath?: string | null;
  /** The endpoint's silence target, as `silence_duration` (0.2–5.0 s; validated like the gateway's setting). */
  silenceSeconds: number;
  /** Silero's threshold (0.2–0.9, default 0.5). */
  vadThreshold?: number;
  /** Background RMS of the quiet room, then of the louder room (defaults 30 and 180 PCM16 units). */
  quietNoiseRms?: number;
  loudNoiseRms?: number;
}

export interface VadProbeEvent {
  type: EndpointEvent['type'];
  /** Seconds on the probe's timeline (the end of the frame that caused it). */
  at_s: number;
  segment: string;
  observed_silence_ms?: number;
  noise_rms?: number | null;
  /** Seconds of audio handed on for transcription (utterances only). */
  utterance_s?: number;
}

export interface VadProbeReport {
  backend: VadBackend;
  silence_duration_s: number;
  segments: { name: string; start_s: number; end_s: number }[];
  frames: number;
  /** Time to apply one 20 ms frame (detection and endpointing), in milliseconds of this machine. */
  cpu_ms_per_frame: { mean: number; p99: number; max: number };
  events: VadProbeEvent[];
  noise_triggered_speech: boolean;
  speech_endpointed: boolean;
  quiet_speech_endpointed: boolean;
}

/** Decodes a speech fixture (mono PCM16 WAV at any rate in range) and resamples it to 48 kHz; else a clear error. */
export function readSpeechFixture(file: Uint8Array, name = 'the speech fixture'): Int16Array {
  let audio;
  try {
    audio = decodeWav(file);
  } catch (error) {
    throw new VadProbeError(
      `${name} is not a usable WAV (${error instanceof Error ? error.message : String(error)}); expected mono PCM16`,
    );
  }
  const { pcm, sampleRateHz } = audio;
  if (sampleRateHz < MIN_FIXTURE_RATE_HZ || sampleRateHz > MAX_FIXTURE_RATE_HZ)
    throw new VadProbeError(
      `${name} says ${sampleRateHz} Hz; expected ${MIN_FIXTURE_RATE_HZ}–${MAX_FIXTURE_RATE_HZ} Hz mono PCM16`,
    );
  const seconds = pcm.length / sampleRateHz;
  if (seconds < MIN_FIXTURE_SECONDS || seconds > MAX_FIXTURE_SECONDS)
    throw new VadProbeError(
      `${name} holds ${seconds.toFixed(2)} s of audio; expected ${MIN_FIXTURE_SECONDS}–${MAX_FIXTURE_SECONDS} s`,
    );
  if (sampleRateHz === SAMPLE_RATE_HZ) return pcm;
  const resampler = new PcmResampler(sampleRateHz, SAMPLE_RATE_HZ);
  return concatPcm([resampler.process(pcm), resampler.flush()]);
}

/** Deterministic white noise of roughly `rms` (a fixed seed: two runs feed identical audio). */
function noise(seconds: number, rms: number, seed: number): Int16Array {
  const pcm = new Int16Array(Math.round(SAMPLE_RATE_HZ * seconds));
  let state = seed >>> 0;
  // Uniform noise in [-a, a] has RMS a/√3.
  const amplitude = rms * Math.sqrt(3);
  for (let i = 0; i < pcm.length; i += 1) {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    pcm[i] = Math.round((state / 0xffffffff - 0.5) * 2 * amplitude);
  }
  return pcm;
}

/** `speech` scaled by `gain` over `background` (same length or longer), clipped to PCM16. */
function over(background: Int16Array, speech: Int16Array, gain: number): Int16Array {
  const mixed = background.slice();
  for (let i = 0; i < speech.length && i < mixed.length; i += 1)
    mixed[i] = Math.max(-32768, Math.min(32767, Math.round((mixed[i] as number) + (speech[i] as number) * gain)));
  return mixed;
}

function percentile(sorted: number[], fraction: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)] as number;
}

const round = (value: number, digits: number): number => Math.round(value * 10 ** digits) / 10 ** digits;

async function detectorFor(options: VadProbeOptions): Promise<VoiceDetectorFactory> {
  if (options.backend === 'rms') return new EnergyDetectorFactory();
  return SileroDetectorFactory.load(options.vadThreshold ?? 0.5, options.modelPath ?? null);
}

/** Runs the noise step, the speech and the quiet speech through the capture path and reports what it decided. */
export async function runVadProbe(options: VadProbeOptions): Promise<VadProbeReport> {
  const settings = parseAudioSettings({
    vad_backend: options.backend,
    silence_duration: options.silenceSeconds,
    ...(options.vadThreshold === undefined ? {} : { vad_threshold: options.vadThreshold }),
  });
  const factory = await detectorFor(options);
  const quiet = options.quietNoiseRms ?? 30;
  const loud = options.loudNoiseRms ?? 180;
  // Each speech segment is followed by twice the silence target plus a second, so its endpoint lands inside it.
  const tailSeconds = 2 * options.silenceSeconds + 1;
  const speechSeconds = options.speech.length / SAMPLE_RATE_HZ;
  const plan: { name: string; pcm: Int16Array }[] = [
    { name: 'quiet_noise', pcm: noise(2, quiet, 1) },
    { name: 'noise_step', pcm: noise(3, loud, 2) },
    { name: 'speech', pcm: over(noise(speechSeconds + tailSeconds, loud, 3), options.speech, 1) },
    { name: 'quiet_speech', pcm: over(noise(speechSeconds + tailSeconds, loud, 4), options.speech, QUIET_SPEECH_GAIN) },
  ];
  const segments: VadProbeReport['segments'] = [];
  let startUs = 0;
  for (const segment of plan) {
    const endUs = startUs + Math.round((segment.pcm.length / SAMPLE_RATE_HZ) * 1_000_000);
    segments.push({ name: segment.name, start_s: round(startUs / 1e6, 3), end_s: round(endUs / 1e6, 3) });
    startUs = endUs;
  }
  const segmentAt = (atUs: number): string =>
    segments.find((segment) => atUs / 1e6 <= segment.end_s)?.name ?? (segments.at(-1)?.name as string);

  let nowUs = 0;
  const events: VadProbeEvent[] = [];
  const input = new VoiceInput(
    factory,
    settings.endpoint,
    () => nowUs,
    (decided) => {
      for (const event of decided) {
        if (event.type === 'prefetch' || event.type === 'prefetch_discarded') continue;
        const entry: VadProbeEvent = {
          type: event.type,
          at_s: round(event.atUs / 1e6, 3),
          segment: segmentAt(event.atUs),
        };
        if (event.type === 'speech_stopped') {
          entry.observed_silence_ms = Math.round(event.observedSilenceUs / 1000);
          entry.noise_rms = event.noiseRms === null ? null : round(event.noiseRms, 1);
        }
        if (event.type === 'calibrated') entry.noise_rms = round(event.noiseRms, 1);
        if (event.type === 'utterance') entry.utterance_s = round(event.pcm.length / SAMPLE_RATE_HZ, 3);
        events.push(entry);
      }
    },
  );
  const costs: number[] = [];
  try {
    for (const segment of plan)
      for (let offset = 0; offset + FRAME_SAMPLES <= segment.pcm.length; offset += FRAME_SAMPLES) {
        nowUs += 20_000;
        const started = performance.now();
        input.push(segment.pcm.subarray(offset, offset + FRAME_SAMPLES));
        // With a model the decision waits for its score: the frame's cost includes the inference.
        await input.settled();
        costs.push(performance.now() - started);
      }
  } finally {
    input.close();
  }
  const sorted = [...costs].sort((a, b) => a - b);
  const started = (segment: string) => events.some((e) => e.type === 'speech_started' && e.segment === segment);
  const endpointed = (segment: string) => events.some((e) => e.type === 'utterance' && e.segment === segment);
  return {
    backend: factory.backend,
    silence_duration_s: options.silenceSeconds,
    segments,
    frames: costs.length,
    cpu_ms_per_frame: {
      mean: round(costs.reduce((sum, cost) => sum + cost, 0) / Math.max(1, costs.length), 4),
      p99: round(percentile(sorted, 0.99), 4),
      max: round(sorted.at(-1) ?? 0, 4),
    },
    events,
    noise_triggered_speech: started('quiet_noise') || started('noise_step'),
    speech_endpointed: endpointed('speech'),
    quiet_speech_endpointed: endpointed('quiet_speech'),
  };
}

const VAD_PROBE_USAGE = 'usage: npm run probe:vad -- --speech-fixture FILE.wav [--model silero.onnx] [--silence 0.7]';

/** `npm run probe:vad`'s command line: prints the report (exit 0), or refuses with a message (exit 2). */
export async function vadProbeCli(argv: string[], io: ProbeIo): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        'speech-fixture': { type: 'string' },
        model: { type: 'string' },
        backend: { type: 'string' },
        silence: { type: 'string', default: '0.7' },
      },
    }));
  } catch (error) {
    io.err(`${error instanceof Error ? error.message : String(error)}\n${VAD_PROBE_USAGE}`);
    return EXIT_REFUSED;
  }
  const fixture = values['speech-fixture'];
  if (!fixture) {
    io.err(`--speech-fixture is required\n${VAD_PROBE_USAGE}`);
    return EXIT_REFUSED;
  }
  const backend = values.backend ?? (values.model ? 'silero' : 'rms');
  if (backend !== 'rms' && backend !== 'silero') {
    io.err(`--backend must be rms or silero\n${VAD_PROBE_USAGE}`);
    return EXIT_REFUSED;
  }
  try {
    let bytes: Buffer;
    try {
      bytes = await readFile(fixture);
    } catch (error) {
      throw new VadProbeError(`cannot read ${fixture} (${(error as NodeJS.ErrnoException).code ?? 'unreadable'})`);
    }
    const report = await runVadProbe({
      speech: readSpeechFixture(bytes, fixture),
      backend,
      modelPath: values.model ?? null,
      silenceSeconds: Number(values.silence),
    });
    io.out(JSON.stringify(report, null, 2));
    return 0;
  } catch (error) {
    if (error instanceof VadProbeError || error instanceof AudioSettingsError || error instanceof SileroModelError) {
      io.err(`probe:vad: ${error.message}`);
      return EXIT_REFUSED;
    }
    throw error;
  }
}
