import { abortError, throwIfAborted } from './abort.js';
import {
  SpeechProviderError,
  type SpeechToText,
  type SynthesizeOptions,
  type TextToSpeech,
  type TranscribeOptions,
  type UtteranceAudio,
} from './types.js';

/** A scripted answer: a transcript, a failure, or a transcript released only when a promise settles. */
export type ScriptedTranscript = string | Error | { text: string; after: Promise<unknown> };

/**
 * Speech-to-text for tests: answers from a script (in order; the last entry repeats) or from a function of
 * the audio, and records every call. Honours abort like a real provider.
 */
export class ScriptedSpeechToText implements SpeechToText {
  readonly label = 'scripted';
  readonly calls: { audio: UtteranceAudio; options: TranscribeOptions }[] = [];
  private readonly script: ScriptedTranscript[] | ((audio: UtteranceAudio) => ScriptedTranscript);

  constructor(script: ScriptedTranscript[] | ((audio: UtteranceAudio) => ScriptedTranscript)) {
    if (Array.isArray(script) && script.length === 0) throw new Error('a scripted transcript list needs an entry');
    this.script = script;
  }

  async transcribe(audio: UtteranceAudio, options: TranscribeOptions = {}): Promise<string> {
    throwIfAborted(options.signal);
    const index = this.calls.length;
    this.calls.push({ audio, options });
    const entry =
      typeof this.script === 'function'
        ? this.script(audio)
        : (this.script[Math.min(index, this.script.length - 1)] as ScriptedTranscript);
    if (entry instanceof Error) throw entry;
    if (typeof entry === 'string') return entry.trim();
    await new Promise<void>((resolve, reject) => {
      const onAbort = (): void => reject(abortError(options.signal));
      options.signal?.addEventListener('abort', onAbort, { once: true });
      entry.after.then(
        () => {
          options.signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        (error: unknown) => reject(error instanceof Error ? error : new SpeechProviderError(String(error))),
      );
    });
    return entry.text.trim();
  }
}

export interface ScriptedTextToSpeechOptions {
  /** Rate of the yielded chunks (default 24 000). */
  sampleRateHz?: number;
  /** Samples per yielded chunk (default 20 ms worth). */
  chunkSamples?: number;
  /** Audio length per character of text (default 1 ms per character… plus 100 ms). */
  samplesFor?: (text: string, sampleRateHz: number) => number;
  /** Fail with this error after yielding `afterChunks` chunks (0 = before any audio). */
  failure?: { afterChunks: number; error?: Error };
  /** Wait for this promise before each chunk (a slow provider). */
  pace?: () => Promise<void>;
}

/**
 * Text-to-speech for tests: a deterministic tone (a 440 Hz sine at a fixed level) whose length follows the text,
 * in fixed chunks, optionally failing part-way. Records every text it was asked to speak.
 */
export class ScriptedTextToSpeech implements TextToSpeech {
  readonly label = 'scripted';
  readonly sampleRateHz: number;
  readonly texts: string[] = [];
  private readonly options: ScriptedTextToSpeechOptions;

  constructor(options: ScriptedTextToSpeechOptions = {}) {
    this.options = options;
    this.sampleRateHz = options.sampleRateHz ?? 24_000;
  }

  /** The exact samples `synthesize(text)` yields, concatenated. */
  render(text: string): Int16Array {
    const rate = this.sampleRateHz;
    const length = this.options.samplesFor
      ? this.options.samplesFor(text, rate)
      : Math.round(rate * 0.1) + text.length * Math.round(rate / 1000);
    const pcm = new Int16Array(length);
    for (let i = 0; i < length; i++) pcm[i] = Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / rate));
    return pcm;
  }

  async *synthesize(text: string, options: SynthesizeOptions = {}): AsyncIterable<Int16Array> {
    throwIfAborted(options.signal);
    this.texts.push(text);
    const pcm = this.render(text);
    const chunk = this.options.chunkSamples ?? Math.round(this.sampleRateHz / 50);
    let yielded = 0;
    for (let start = 0; start < pcm.length; start += chunk) {
      if (this.options.failure && yielded === this.options.failure.afterChunks)
        throw this.options.failure.error ?? new SpeechProviderError('scripted synthesis failure');
      if (this.options.pace) await this.options.pace();
      throwIfAborted(options.signal);
      yield pcm.slice(start, start + chunk);
      yielded++;
    }
    if (this.options.failure && yielded === this.options.failure.afterChunks)
      throw this.options.failure.error ?? new SpeechProviderError('scripted synthesis failure');
  }
}
