import { EspeakTextToSpeech } from './espeak-tts.js';
import { OpenAiSpeechToText } from './openai-stt.js';
import { OpenAiTextToSpeech } from './openai-tts.js';
import type { FetchLike } from './openai-http.js';
import { SpeechProviderError, type SpeechToText, type TextToSpeech } from './types.js';

/**
 * Every provider setting: the environment variable, its default, and what it means. Keys never reach logs;
 * `describeSpeechProviders` prints labels only.
 */
export const SPEECH_PROVIDER_SETTINGS = {
  HERMES_REALTIME_STT_BASE_URL: {
    default: '',
    about: 'OpenAI-compatible base URL for /audio/transcriptions; unset = no speech-to-text',
  },
  HERMES_REALTIME_STT_MODEL: { default: 'whisper-1', about: 'transcription model' },
  HERMES_REALTIME_STT_API_KEY: {
    default: '',
    about: 'bearer key for the transcription endpoint (optional for local servers)',
  },
  HERMES_REALTIME_STT_LANGUAGE: { default: '', about: 'ISO-639-1 language hint' },
  HERMES_REALTIME_STT_PROMPT: { default: '', about: 'vocabulary/context prompt' },
  HERMES_REALTIME_TTS_PROVIDER: {
    default: 'espeak',
    about: '`espeak` (offline, default) or `openai` (OpenAI-compatible /audio/speech)',
  },
  HERMES_REALTIME_TTS_BASE_URL: {
    default: '',
    about: 'OpenAI-compatible base URL for /audio/speech (provider openai)',
  },
  HERMES_REALTIME_TTS_MODEL: { default: 'gpt-4o-mini-tts', about: 'speech model' },
  HERMES_REALTIME_TTS_VOICE: { default: 'alloy', about: 'speech voice' },
  HERMES_REALTIME_TTS_API_KEY: { default: '', about: 'bearer key for the speech endpoint' },
  HERMES_REALTIME_TTS_SPEED: { default: '', about: 'speech speed 0.25–4.0' },
  HERMES_REALTIME_TTS_SAMPLE_RATE: { default: '24000', about: "rate of the server's `pcm` output in Hz" },
  HERMES_REALTIME_ESPEAK_VOICE: { default: 'en-us', about: 'espeak-ng voice' },
  HERMES_REALTIME_ESPEAK_WPM: { default: '175', about: 'espeak-ng speaking rate, words per minute' },
} as const;

export interface SpeechProviders {
  /** `null` when no transcription endpoint is configured (voice turns cannot be transcribed). */
  stt: SpeechToText | null;
  tts: TextToSpeech;
}

function read(env: NodeJS.ProcessEnv, name: keyof typeof SPEECH_PROVIDER_SETTINGS): string {
  return env[name]?.trim() || SPEECH_PROVIDER_SETTINGS[name].default;
}

function number(env: NodeJS.ProcessEnv, name: keyof typeof SPEECH_PROVIDER_SETTINGS): number | undefined {
  const text = read(env, name);
  if (text === '') return undefined;
  const value = Number(text);
  if (!Number.isFinite(value)) throw new SpeechProviderError(`${name} must be a number, got "${text}"`);
  return value;
}

function named<T>(name: string, build: () => T): T {
  try {
    return build();
  } catch (error) {
    if (error instanceof SpeechProviderError) throw new SpeechProviderError(`${name}: ${error.message}`);
    throw error;
  }
}

/** Builds the configured providers from the environment; throws `SpeechProviderError` naming the variable. */
export function speechProvidersFromEnv(env: NodeJS.ProcessEnv, fetchImpl?: FetchLike): SpeechProviders {
  const sttBase = read(env, 'HERMES_REALTIME_STT_BASE_URL');
  const stt = sttBase
    ? named('HERMES_REALTIME_STT_BASE_URL', () => {
        const language = read(env, 'HERMES_REALTIME_STT_LANGUAGE');
        const prompt = read(env, 'HERMES_REALTIME_STT_PROMPT');
        const apiKey = read(env, 'HERMES_REALTIME_STT_API_KEY');
        return new OpenAiSpeechToText({
          baseUrl: sttBase,
          model: read(env, 'HERMES_REALTIME_STT_MODEL'),
          ...(apiKey ? { apiKey } : {}),
          ...(language ? { language } : {}),
          ...(prompt ? { prompt } : {}),
          ...(fetchImpl ? { fetch: fetchImpl } : {}),
        });
      })
    : null;

  const provider = read(env, 'HERMES_REALTIME_TTS_PROVIDER');
  let tts: TextToSpeech;
  if (provider === 'espeak') {
    const wordsPerMinute = number(env, 'HERMES_REALTIME_ESPEAK_WPM');
    tts = named(
      'HERMES_REALTIME_ESPEAK_VOICE/WPM',
      () =>
        new EspeakTextToSpeech({
          voice: read(env, 'HERMES_REALTIME_ESPEAK_VOICE'),
          ...(wordsPerMinute !== undefined ? { wordsPerMinute } : {}),
        }),
    );
  } else if (provider === 'openai') {
    const baseUrl = read(env, 'HERMES_REALTIME_TTS_BASE_URL');
    if (!baseUrl)
      throw new SpeechProviderError(
        'HERMES_REALTIME_TTS_BASE_URL must be set when HERMES_REALTIME_TTS_PROVIDER=openai',
      );
    const speed = number(env, 'HERMES_REALTIME_TTS_SPEED');
    const sampleRateHz = number(env, 'HERMES_REALTIME_TTS_SAMPLE_RATE');
    if (
      sampleRateHz !== undefined &&
      !(Number.isInteger(sampleRateHz) && sampleRateHz >= 8000 && sampleRateHz <= 96000)
    )
      throw new SpeechProviderError('HERMES_REALTIME_TTS_SAMPLE_RATE must be an integer between 8000 and 96000');
    const apiKey = read(env, 'HERMES_REALTIME_TTS_API_KEY');
    tts = named(
      'HERMES_REALTIME_TTS_*',
      () =>
        new OpenAiTextToSpeech({
          baseUrl,
          model: read(env, 'HERMES_REALTIME_TTS_MODEL'),
          voice: read(env, 'HERMES_REALTIME_TTS_VOICE'),
          ...(apiKey ? { apiKey } : {}),
          ...(speed !== undefined ? { speed } : {}),
          ...(sampleRateHz !== undefined ? { sampleRateHz } : {}),
          ...(fetchImpl ? { fetch: fetchImpl } : {}),
        }),
    );
  } else {
    throw new SpeechProviderError(`HERMES_REALTIME_TTS_PROVIDER must be "espeak" or "openai", got "${provider}"`);
  }
  return { stt, tts };
}

/** A log-safe one-line description (labels only, no URLs with credentials, no keys). */
export function describeSpeechProviders(providers: SpeechProviders): string {
  return `stt=${providers.stt?.label ?? 'none'} tts=${providers.tts.label}`;
}
