import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { InferenceSession, Tensor } from 'onnxruntime-node';
import { AdaptiveRmsGate, type AdaptiveRmsGateOptions } from './energy-gate.js';
import { pcmRms } from './pcm.js';
import { PcmResampler } from './resampler.js';
import {
  FRAME_SAMPLES,
  SAMPLE_RATE_HZ,
  type SpeechGate,
  type VoiceDetector,
  type VoiceDetectorFactory,
} from './types.js';

/**
 * The pinned Silero VAD v6.2 model (snakers4/silero-vad rev be95df9152c0d7618fa1edfeb296fc3dae32376f, MIT,
 * © Silero Team). The same file ships in `@livekit/agents-plugin-silero`; we use it from there and refuse any
 * other bytes: a changed model changes every endpoint decision.
 */
export const SILERO_MODEL_BYTES = 2_327_524;
export const SILERO_MODEL_SHA256 = '1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3';

/** Silero runs at 16 kHz on 512-sample (32 ms) windows, each preceded by the previous window's last 64 samples. */
export const SILERO_SAMPLE_RATE_HZ = 16_000;
export const SILERO_WINDOW_SAMPLES = 512;
export const SILERO_CONTEXT_SAMPLES = 64;
const STATE_SIZE = 2 * 1 * 128;

/** The model file is missing, unreadable or not the pinned one. Startup must fail: there is no fallback. */
export class SileroModelError extends Error {
  override readonly name = 'SileroModelError';
}

/** Where the pinned model is installed: beside `@livekit/agents-plugin-silero`'s entry point. */
export function defaultSileroModelPath(): string {
  const entry = createRequire(import.meta.url).resolve('@livekit/agents-plugin-silero');
  return path.join(path.dirname(entry), 'silero_vad.onnx');
}

/** Reads and verifies the model: size first (cheap), then SHA-256. Never downloads anything. */
export async function readPinnedSileroModel(modelPath: string): Promise<Uint8Array> {
  let size: number;
  try {
    size = (await stat(modelPath)).size;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unreadable';
    throw new SileroModelError(`Silero model not found at ${modelPath} (${code}); set vad_backend=rms or install it`);
  }
  if (size !== SILERO_MODEL_BYTES)
    throw new SileroModelError(
      `Silero model at ${modelPath} is ${size} bytes, expected ${SILERO_MODEL_BYTES} (pinned v6.2); refusing it`,
    );
  const bytes = await readFile(modelPath);
  const digest = createHash('sha256').update(bytes).digest('hex');
  if (digest !== SILERO_MODEL_SHA256)
    throw new SileroModelError(
      `Silero model at ${modelPath} has SHA-256 ${digest}, expected ${SILERO_MODEL_SHA256} (pinned v6.2); refusing it`,
    );
  return bytes;
}

/**
 * One ONNX session shared by every input (CPU only, one intra-op and one inter-op thread). Runs are queued so
 * concurrent inputs never overlap on the session; each input keeps its own recurrent state.
 */
export class SileroModel {
  private queue: Promise<unknown> = Promise.resolve();
  private readonly sampleRate = new Tensor('int64', BigInt64Array.from([BigInt(SILERO_SAMPLE_RATE_HZ)]), []);

  private constructor(private readonly session: InferenceSession) {}

  /** Loads the pinned model (default: the copy in `@livekit/agents-plugin-silero`). Throws `SileroModelError`. */
  static async load(modelPath: string = defaultSileroModelPath()): Promise<SileroModel> {
    const bytes = await readPinnedSileroModel(modelPath);
    try {
      const session = await InferenceSession.create(bytes, {
        executionProviders: ['cpu'],
        intraOpNumThreads: 1,
        interOpNumThreads: 1,
        executionMode: 'sequential',
        graphOptimizationLevel: 'all',
      });
      return new SileroModel(session);
    } catch (error) {
      throw new SileroModelError(`Silero model at ${modelPath} could not be loaded: ${(error as Error).message}`);
    }
  }

  /**
   * One inference: `input` = 64 context + 512 new samples (float, ±1), `state` the input's recurrent state,
   * updated in place. Returns the speech probability.
   */
  infer(input: Float32Array, state: Float32Array): Promise<number> {
    const run = this.queue.then(async () => {
      const result = await this.session.run({
        input: new Tensor('float32', input, [1, SILERO_CONTEXT_SAMPLES + SILERO_WINDOW_SAMPLES]),
        state: new Tensor('float32', state, [2, 1, 128]),
        sr: this.sampleRate,
      });
      const output = result.output?.data;
      const nextState = result.stateN?.data;
      if (!(output instanceof Float32Array) || !(nextState instanceof Float32Array) || nextState.length !== STATE_SIZE)
        throw new SileroModelError('Silero model returned unexpected outputs');
      state.set(nextState);
      return output[0] as number;
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  async close(): Promise<void> {
    await this.queue;
    await this.session.release();
  }
}

/**
 * The Silero gate: speech when the model's probability reaches `threshold` (or `threshold − 0.15`, at least
 * 0.05, while speaking). It still calibrates and tracks the RMS noise floor like the energy gate — the floor
 * judges quiet tails for prefetch reuse and goes into logs — learning only from audio the model calls non-speech.
 */
export class SileroGate extends AdaptiveRmsGate implements SpeechGate {
  private lastProbability = 0;

  constructor(
    readonly threshold: number,
    options: AdaptiveRmsGateOptions = {},
  ) {
    super(options);
  }

  override isSpeech(pcm: Int16Array, speaking: boolean, speechProbability?: number | null): boolean {
    // No window completed in this chunk: the previous verdict stands.
    const probability = speechProbability ?? this.lastProbability;
    this.lastProbability = probability;
    const threshold = speaking ? Math.max(0.05, this.threshold - 0.15) : this.threshold;
    const speech = probability >= threshold;
    if (!speech && this.calibrated)
      for (let start = 0; start < pcm.length; start += FRAME_SAMPLES) {
        const end = Math.min(pcm.length, start + FRAME_SAMPLES);
        this.learnNoise(pcmRms(pcm, start, end), speaking, (end - start) / SAMPLE_RATE_HZ);
      }
    return speech;
  }
}

/** Per-input Silero scoring: a stateful 48 → 16 kHz resampler, pending samples, context and recurrent state. */
export class SileroVoiceDetector implements VoiceDetector {
  readonly backend = 'silero' as const;
  private readonly resampler = new PcmResampler(SAMPLE_RATE_HZ, SILERO_SAMPLE_RATE_HZ);
  private pending = new Float32Array(0);
  private readonly window = new Float32Array(SILERO_CONTEXT_SAMPLES + SILERO_WINDOW_SAMPLES);
  private readonly state = new Float32Array(STATE_SIZE);
  private lastProbability: number | null = null;
  private chain: Promise<unknown> = Promise.resolve();
  private closed = false;

  constructor(
    private readonly model: SileroModel,
    private readonly threshold: number,
  ) {}

  score(pcm: Int16Array): Promise<number | null> {
    // Calls are chained so the model sees chunks in arrival order even if a caller does not await.
    const run = this.chain.then(() => this.scoreInOrder(pcm));
    this.chain = run.catch(() => undefined);
    return run;
  }

  private async scoreInOrder(pcm: Int16Array): Promise<number | null> {
    if (this.closed) throw new Error('Silero detector closed');
    const resampled = this.resampler.process(pcm);
    const pending = new Float32Array(this.pending.length + resampled.length);
    pending.set(this.pending);
    for (let i = 0; i < resampled.length; i++) pending[this.pending.length + i] = (resampled[i] as number) / 32768;
    let best: number | null = null;
    let offset = 0;
    while (pending.length - offset >= SILERO_WINDOW_SAMPLES) {
      this.window.set(pending.subarray(offset, offset + SILERO_WINDOW_SAMPLES), SILERO_CONTEXT_SAMPLES);
      // The model gets its own copy: the next window's context is taken from this one.
      const input = this.window.slice();
      const probability = await this.model.infer(input, this.state);
      this.window.copyWithin(0, SILERO_WINDOW_SAMPLES, SILERO_WINDOW_SAMPLES + SILERO_CONTEXT_SAMPLES);
      best = best === null ? probability : Math.max(best, probability);
      offset += SILERO_WINDOW_SAMPLES;
    }
    this.pending = pending.slice(offset);
    if (best !== null) this.lastProbability = best;
    return this.lastProbability ?? 0;
  }

  createGate(): SpeechGate {
    return new SileroGate(this.threshold);
  }

  close(): void {
    this.closed = true;
  }
}

/** Makes Silero detectors that share one verified model. */
export class SileroDetectorFactory implements VoiceDetectorFactory {
  readonly backend = 'silero' as const;

  constructor(
    readonly model: SileroModel,
    readonly threshold: number,
  ) {}

  static async load(threshold: number, modelPath?: string | null): Promise<SileroDetectorFactory> {
    return new SileroDetectorFactory(await SileroModel.load(modelPath ?? undefined), threshold);
  }

  create(): VoiceDetector {
    return new SileroVoiceDetector(this.model, this.threshold);
  }
}
