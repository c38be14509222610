import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import ESpeakNg from 'espeak-ng';
import { decodeWav } from '../audio/wav.js';
import { throwIfAborted } from './abort.js';
import { SpeechProviderError, type SynthesizeOptions, type TextToSpeech } from './types.js';

/** espeak-ng's native output rate. */
export const ESPEAK_SAMPLE_RATE_HZ = 22_050;
/** Yielded chunk size: 100 ms, so a consumer can start framing before the whole reply is copied. */
const CHUNK_SAMPLES = 2_205;
/** Longest text spoken in one call; longer text is cut (the reference trims TTS text to 4 000 characters). */
export const ESPEAK_MAX_TEXT_CHARS = 4_000;

export interface EspeakOptions {
  /** espeak-ng voice, e.g. `en-us`, `en-gb`, `de`. */
  voice?: string;
  /** Speaking rate in words per minute (80–450). */
  wordsPerMinute?: number;
}

const VOICE_NAME = /^[a-z]{2,3}([-_][a-z0-9]{1,8})*$/i;

/** The WebAssembly API of Node (this project compiles without the DOM library, which declares it). */
interface WasmApi {
  compile(bytes: Uint8Array): Promise<object>;
  instantiate(module: object, imports: object): Promise<object>;
}
const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

let compiled: Promise<object> | null = null;

/** The espeak-ng WebAssembly module, compiled once per process (18 MB: compiling dominates a cold call). */
function compiledEspeak(): Promise<object> {
  if (!compiled) {
    const wasmPath = createRequire(import.meta.url)
      .resolve('espeak-ng')
      .replace(/\.js$/, '.wasm');
    compiled = readFile(wasmPath).then((bytes) => wasm.compile(bytes));
    compiled.catch(() => {
      compiled = null;
    });
  }
  return compiled;
}

/** Runs espeak-ng once (a fresh instance: the program runs its `main` on instantiation) and returns its WAV. */
async function runEspeak(text: string, voice: string, wordsPerMinute: number): Promise<Uint8Array> {
  const module = await compiledEspeak();
  const errors: string[] = [];
  // The text goes through a file, never argv, so text starting with "-" cannot become an option.
  const instance = await ESpeakNg({
    arguments: ['-b', '1', '-v', voice, '-s', String(wordsPerMinute), '-w', '/tmp/out.wav', '-f', '/tmp/in.txt'],
    print: () => undefined,
    printErr: (line: string) => errors.push(line),
    preRun: [(m) => m.FS.writeFile('/tmp/in.txt', text)],
    instantiateWasm(imports, done) {
      void wasm.instantiate(module, imports).then(done);
      return {};
    },
  });
  try {
    return instance.FS.readFile('/tmp/out.wav');
  } catch {
    throw new SpeechProviderError(
      `espeak-ng produced no audio${errors.length ? `: ${errors.join(' ').slice(0, 200)}` : ''}`,
    );
  }
}

/**
 * The offline default: espeak-ng compiled to WebAssembly (no account, no network). Robotic but intelligible;
 * each call synthesizes its whole text, then yields 100 ms chunks at 22 050 Hz.
 */
export class EspeakTextToSpeech implements TextToSpeech {
  readonly sampleRateHz = ESPEAK_SAMPLE_RATE_HZ;
  readonly label: string;
  private readonly voice: string;
  private readonly wordsPerMinute: number;

  constructor(options: EspeakOptions = {}) {
    this.voice = options.voice ?? 'en-us';
    this.wordsPerMinute = options.wordsPerMinute ?? 175;
    if (!VOICE_NAME.test(this.voice)) throw new SpeechProviderError(`invalid espeak-ng voice name: ${this.voice}`);
    if (!Number.isInteger(this.wordsPerMinute) || this.wordsPerMinute < 80 || this.wordsPerMinute > 450)
      throw new SpeechProviderError('espeak-ng speaking rate must be an integer between 80 and 450 words per minute');
    this.label = `espeak-ng:${this.voice}`;
  }

  /**
   * Compiles the WebAssembly module ahead of the first reply and speaks one word, so a voice that espeak-ng
   * does not have fails at startup rather than on the first reply.
   */
  async warmUp(): Promise<void> {
    await compiledEspeak();
    for await (const _chunk of this.synthesize('ok')) break;
  }

  async *synthesize(text: string, options: SynthesizeOptions = {}): AsyncIterable<Int16Array> {
    throwIfAborted(options.signal);
    const spoken = text.slice(0, ESPEAK_MAX_TEXT_CHARS);
    if (spoken.trim() === '') return;
    const voice = options.voice ?? this.voice;
    if (!VOICE_NAME.test(voice)) throw new SpeechProviderError(`invalid espeak-ng voice name: ${voice}`);
    let wav: Uint8Array;
    try {
      wav = await runEspeak(spoken, voice, this.wordsPerMinute);
    } catch (error) {
      if (error instanceof SpeechProviderError) throw error;
      throw new SpeechProviderError(`espeak-ng failed: ${(error as Error).message}`);
    }
    throwIfAborted(options.signal);
    const { pcm, sampleRateHz } = decodeWav(wav);
    if (sampleRateHz !== ESPEAK_SAMPLE_RATE_HZ)
      throw new SpeechProviderError(`espeak-ng produced ${sampleRateHz} Hz audio, expected ${ESPEAK_SAMPLE_RATE_HZ}`);
    for (let start = 0; start < pcm.length; start += CHUNK_SAMPLES) {
      throwIfAborted(options.signal);
      yield pcm.slice(start, start + CHUNK_SAMPLES);
    }
  }
}
