/**
 * Speech provider interfaces: one small interface per capability, many implementations (OpenAI-compatible
 * HTTP, offline espeak-ng, scripted for tests). Audio is PCM16 mono as `Int16Array` (one element per
 * sample) with its rate stated beside it; every call is cancellable with an `AbortSignal`.
 */

/** A finished utterance handed to speech-to-text. */
export interface UtteranceAudio {
  /** PCM16 mono samples. */
  pcm: Int16Array;
  /** Rate of `pcm` (48 000 inside the gateway). */
  sampleRateHz: number;
  /**
   * The same utterance already converted to the provider's `uploadSampleRateHz` while it was captured, so the
   * endpoint does not wait for the conversion. Identical to converting `pcm` in one piece.
   */
  converted?: ConvertedAudio;
}

/** PCM16 mono samples at a stated rate. */
export interface ConvertedAudio {
  pcm: Int16Array;
  sampleRateHz: number;
}

export interface TranscribeOptions {
  /** Aborting rejects the call with an `AbortError` and cancels the request. */
  signal?: AbortSignal;
  /** ISO-639-1 hint, when the operator configured one. */
  language?: string;
  /** Vocabulary/context hint passed to the model. */
  prompt?: string;
}

/** Utterance PCM → transcript text. */
export interface SpeechToText {
  /** A short label for logs (`openai:whisper-1`, `scripted`). Never contains credentials. */
  readonly label: string;
  /**
   * The rate this provider uploads at, when it converts the gateway's 48 kHz audio: the capture path then
   * converts each utterance as it arrives and passes it as `converted`.
   */
  readonly uploadSampleRateHz?: number | null;
  /**
   * Transcribes one utterance. Resolves with the stripped transcript ('' when the provider heard nothing);
   * rejects with `SpeechProviderError` on a provider failure.
   */
  transcribe(audio: UtteranceAudio, options?: TranscribeOptions): Promise<string>;
}

export interface SynthesizeOptions {
  /** Aborting ends the iteration with an `AbortError` and cancels the request. */
  signal?: AbortSignal;
  /** Provider voice name; the provider's configured default when absent. */
  voice?: string;
}

/** Text → PCM16 audio, streamed. */
export interface TextToSpeech {
  readonly label: string;
  /** Rate of every chunk this provider yields (e.g. 24 000 for OpenAI `pcm`, 22 050 for espeak-ng). */
  readonly sampleRateHz: number;
  /**
   * Speaks `text`, yielding PCM16 mono chunks at `sampleRateHz` as soon as they are available. Chunk sizes are
   * arbitrary (whole samples only); concatenated they are the whole utterance. Errors before or during the
   * stream reject the iteration with `SpeechProviderError`.
   */
  synthesize(text: string, options?: SynthesizeOptions): AsyncIterable<Int16Array>;
}

/** A provider call failed. `status` is the upstream HTTP status when there was one. Never carries secrets. */
export class SpeechProviderError extends Error {
  override readonly name = 'SpeechProviderError';
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}
