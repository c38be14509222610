import { abortError, isAbortError } from './abort.js';
import { authorization, endpointUrl, upstreamError, type OpenAiEndpoint } from './openai-http.js';
import { SpeechProviderError, type SynthesizeOptions, type TextToSpeech } from './types.js';

/** OpenAI's `response_format: "pcm"` is raw 24 kHz, 16-bit signed little-endian, mono. */
export const OPENAI_PCM_SAMPLE_RATE_HZ = 24_000;
/** The route's input limit. */
export const OPENAI_TTS_MAX_INPUT_CHARS = 4_096;

export interface OpenAiTextToSpeechOptions extends OpenAiEndpoint {
  /** e.g. `gpt-4o-mini-tts`, `tts-1`, or a local server's model. */
  model: string;
  /** Default voice (`alloy`, `nova`, …). */
  voice: string;
  /** 0.25–4.0, default 1. */
  speed?: number;
  /** Style instructions (models that accept them). */
  instructions?: string;
  /** Rate of the server's `pcm` output, when a compatible server differs from OpenAI's 24 kHz. */
  sampleRateHz?: number;
}

/**
 * Streaming text-to-speech over an OpenAI-compatible `POST {base}/audio/speech` with
 * `response_format: "pcm"`: chunks are yielded as the body arrives (a sample split across HTTP chunks is
 * carried over), so playback can begin before synthesis ends. The timeout bounds the wait for the headers;
 * the caller's signal cancels at any time.
 */
export class OpenAiTextToSpeech implements TextToSpeech {
  readonly label: string;
  readonly sampleRateHz: number;
  private readonly url: URL;
  private readonly fetch: typeof fetch;

  constructor(private readonly options: OpenAiTextToSpeechOptions) {
    if (!options.model.trim()) throw new SpeechProviderError('text-to-speech model must be set');
    if (!options.voice.trim()) throw new SpeechProviderError('text-to-speech voice must be set');
    if (options.speed !== undefined && !(options.speed >= 0.25 && options.speed <= 4))
      throw new SpeechProviderError('text-to-speech speed must be between 0.25 and 4.0');
    this.url = endpointUrl(options.baseUrl, 'audio/speech');
    this.fetch = options.fetch ?? fetch;
    this.sampleRateHz = options.sampleRateHz ?? OPENAI_PCM_SAMPLE_RATE_HZ;
    this.label = `openai-compatible:${options.model}`;
  }

  async *synthesize(text: string, call: SynthesizeOptions = {}): AsyncIterable<Int16Array> {
    if (text.trim() === '') return;
    if (text.length > OPENAI_TTS_MAX_INPUT_CHARS)
      throw new SpeechProviderError(`text-to-speech input exceeds ${OPENAI_TTS_MAX_INPUT_CHARS} characters`);
    const body: Record<string, unknown> = {
      model: this.options.model,
      input: text,
      voice: call.voice ?? this.options.voice,
      response_format: 'pcm',
    };
    if (this.options.speed !== undefined) body.speed = this.options.speed;
    if (this.options.instructions) body.instructions = this.options.instructions;

    // The deadline covers the wait for the answer's headers only: a long reply may stream for longer.
    const controller = new AbortController();
    const onAbort = (): void => controller.abort(call.signal?.reason);
    if (call.signal?.aborted) throw abortError(call.signal);
    call.signal?.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(
      () => controller.abort(new DOMException('timed out', 'TimeoutError')),
      this.options.timeoutMs ?? 30_000,
    );
    try {
      let response: Response;
      try {
        response = await this.fetch(this.url, {
          method: 'POST',
          headers: { ...authorization(this.options.apiKey), 'content-type': 'application/json' },
          body: JSON.stringify(body),
          signal: controller.signal,
        });
      } finally {
        clearTimeout(timer);
      }
      if (!response.ok) throw await upstreamError('speech synthesis', response, this.options.apiKey);
      const type = response.headers.get('content-type') ?? '';
      if (/^(application\/json|text\/)/i.test(type))
        throw new SpeechProviderError(`speech synthesis answered ${type.split(';')[0]} instead of PCM audio`);
      if (!response.body) return;
      let dangling: number | null = null;
      for await (const chunk of response.body) {
        const bytes = chunk as Uint8Array;
        let offset = 0;
        const count = Math.floor(((dangling === null ? 0 : 1) + bytes.length) / 2);
        const samples = new Int16Array(count);
        let index = 0;
        if (dangling !== null && bytes.length > 0) {
          samples[index++] = ((bytes[0] as number) << 8) | dangling;
          dangling = null;
          offset = 1;
        }
        for (; offset + 1 < bytes.length; offset += 2)
          samples[index++] = ((bytes[offset + 1] as number) << 8) | (bytes[offset] as number);
        if (offset < bytes.length) dangling = bytes[offset] as number;
        if (samples.length > 0) yield samples;
      }
      if (dangling !== null) throw new SpeechProviderError('speech synthesis ended inside a PCM16 sample');
    } catch (error) {
      if (call.signal?.aborted) throw abortError(call.signal);
      if (error instanceof SpeechProviderError) throw error;
      if (isAbortError(error)) throw new SpeechProviderError('speech synthesis timed out');
      throw new SpeechProviderError(`speech synthesis request failed: ${(error as Error).message}`);
    } finally {
      call.signal?.removeEventListener('abort', onAbort);
      // A consumer that stops iterating early (barge-in) must not leave the request running.
      controller.abort();
    }
  }
}
