import { PcmResampler } from '../audio/resampler.js';
import { concatPcm } from '../audio/pcm.js';
import { encodeWav } from '../audio/wav.js';
import { abortError, isAbortError } from './abort.js';
import { authorization, endpointUrl, upstreamError, withDeadline, type OpenAiEndpoint } from './openai-http.js';
import { SpeechProviderError, type SpeechToText, type TranscribeOptions, type UtteranceAudio } from './types.js';

export interface OpenAiSpeechToTextOptions extends OpenAiEndpoint {
  /** e.g. `whisper-1`, `gpt-4o-mini-transcribe`, or a local server's model name. */
  model: string;
  /** Default language hint (ISO-639-1); a call's own option wins. */
  language?: string;
  /** Default prompt; a call's own option wins. */
  prompt?: string;
  /**
   * Rate of the uploaded WAV. 16 kHz (the default) is what speech models run at and a third of the bytes of
   * 48 kHz; `null` uploads the utterance at its own rate.
   */
  uploadSampleRateHz?: number | null;
}

/** Samples resampled per step (one second at 48 kHz): a long utterance never blocks the event loop for long. */
const RESAMPLE_STEP_SAMPLES = 48_000;

/**
 * `pcm` at `to` Hz for upload, in one-second steps with a turn of the event loop between them: converting a
 * two-minute capture takes a few hundred milliseconds of CPU, which in one piece would hold back every other
 * call's 20 ms frames.
 */
async function uploadPcm(pcm: Int16Array, from: number, to: number): Promise<Int16Array> {
  const resampler = new PcmResampler(from, to);
  const parts: Int16Array[] = [];
  for (let offset = 0; offset < pcm.length; offset += RESAMPLE_STEP_SAMPLES) {
    if (offset > 0) await new Promise<void>((resolve) => setImmediate(resolve));
    parts.push(resampler.process(pcm.subarray(offset, offset + RESAMPLE_STEP_SAMPLES)));
  }
  parts.push(resampler.flush());
  return concatPcm(parts);
}

const TranscriptionText = (body: unknown): string | null => {
  if (typeof body === 'object' && body !== null && 'text' in body && typeof body.text === 'string') return body.text;
  return null;
};

/**
 * Speech-to-text over an OpenAI-compatible `POST {base}/audio/transcriptions` (multipart: `file` as WAV,
 * `model`, optional `language` and `prompt`, `response_format=json`; answer `{"text": …}`). Works with OpenAI,
 * Groq, faster-whisper-server, LocalAI, vLLM and other servers that implement the same route.
 */
export class OpenAiSpeechToText implements SpeechToText {
  readonly label: string;
  private readonly url: URL;
  private readonly fetch: typeof fetch;
  /** 16 kHz (the default) is what speech models run at; null uploads the utterance at its own rate. */
  readonly uploadSampleRateHz: number | null;

  constructor(private readonly options: OpenAiSpeechToTextOptions) {
    if (!options.model.trim()) throw new SpeechProviderError('speech-to-text model must be set');
    this.url = endpointUrl(options.baseUrl, 'audio/transcriptions');
    this.fetch = options.fetch ?? fetch;
    this.label = `openai-compatible:${options.model}`;
    this.uploadSampleRateHz = options.uploadSampleRateHz === undefined ? 16_000 : options.uploadSampleRateHz;
  }

  async transcribe(audio: UtteranceAudio, call: TranscribeOptions = {}): Promise<string> {
    const target = this.uploadSampleRateHz;
    let pcm = audio.pcm;
    let rate = audio.sampleRateHz;
    if (target !== null && target !== rate) {
      // Converted during capture when the gateway could; else now.
      pcm = audio.converted?.sampleRateHz === target ? audio.converted.pcm : await uploadPcm(pcm, rate, target);
      rate = target;
    }
    const form = new FormData();
    form.append('file', new Blob([encodeWav(pcm, rate)], { type: 'audio/wav' }), 'utterance.wav');
    form.append('model', this.options.model);
    form.append('response_format', 'json');
    const language = call.language ?? this.options.language;
    if (language) form.append('language', language);
    const prompt = call.prompt ?? this.options.prompt;
    if (prompt) form.append('prompt', prompt);

    const signal = withDeadline(call.signal, this.options.timeoutMs ?? 60_000);
    let response: Response;
    try {
      response = await this.fetch(this.url, {
        method: 'POST',
        headers: { ...authorization(this.options.apiKey), accept: 'application/json' },
        body: form,
        signal,
      });
    } catch (error) {
      throw this.transportError(error, call.signal);
    }
    if (!response.ok) throw await upstreamError('transcription', response, this.options.apiKey);
    let body: unknown;
    try {
      body = await response.json();
    } catch (error) {
      if (isAbortError(error)) throw this.transportError(error, call.signal);
      throw new SpeechProviderError('transcription answer was not JSON', response.status);
    }
    const text = TranscriptionText(body);
    if (text === null) throw new SpeechProviderError('transcription answer has no "text" string', response.status);
    return text.trim();
  }

  private transportError(error: unknown, callerSignal?: AbortSignal): Error {
    if (callerSignal?.aborted) return abortError(callerSignal);
    if (isAbortError(error)) return new SpeechProviderError('transcription timed out');
    return new SpeechProviderError(`transcription request failed: ${(error as Error).message}`);
  }
}
