import { isIP } from 'node:net';
import type { ProfileConfig, ProfileValue } from '../profile-config.js';
import { SPEECH_PROVIDER_SETTINGS } from './config.js';
import { endpointUrl } from './openai-http.js';

/**
 * Which speech providers a gateway runs, and why: the gateway's own HERMES_REALTIME_STT_* / _TTS_* settings
 * when the operator made them, else the Hermes profile's `stt` / `tts` configuration (config.yaml and the
 * profile's .env, read as Hermes reads them), else the labelled stand-in transcript and offline espeak-ng.
 * The Hermes configuration is translated into the gateway's own speech variables, so one provider module
 * builds, validates and warms every provider whatever the source.
 */

/**
 * Where one capability's settings came from: `gateway` (HERMES_REALTIME_STT_* / _TTS_*), `hermes` (the
 * profile's config.yaml and .env), `fallback` (stand-in transcript, espeak-ng), or `override` (a provider a
 * test, probe or benchmark passed to buildApp).
 */
export type SpeechSource = 'gateway' | 'hermes' | 'fallback' | 'override';

/** One capability's choice, as discovery and the start-up log report it. Never holds a key or a URL. */
export interface SpeechChoice {
  source: SpeechSource;
  /** Hermes' provider name (`openai`, `groq`) or the gateway's (`openai-compatible`, `espeak`, `stand-in`). */
  provider: string;
  model?: string;
  voice?: string;
  /** Why the fallback runs (an unsupported Hermes provider, a missing key) or how Hermes' choice was made. */
  note?: string;
}

export interface SpeechSelection {
  stt: SpeechChoice;
  tts: SpeechChoice;
}

/** What the Hermes profile offers: its config.yaml and its variables (.env, then the environment). */
export interface HermesSpeechProfile {
  config: ProfileConfig | null;
  variable: (name: string) => string | undefined;
}

// Hermes' own defaults (tools/transcription_tools.py, tools/tts_tool_openai.py), used when the profile
// names a provider without a model or voice.
const OPENAI_BASE_URL = 'https://api.openai.com/v1';
const GROQ_BASE_URL = 'https://api.groq.com/openai/v1';
const OPENAI_STT_MODEL = 'whisper-1';
const GROQ_STT_MODEL = 'whisper-large-v3-turbo';
const OPENAI_TTS_MODEL = 'gpt-4o-mini-tts';
const OPENAI_TTS_VOICE = 'alloy';
/** Hermes clamps speech speed to what OpenAI's /audio/speech accepts. */
const TTS_SPEED_RANGE = { min: 0.25, max: 4 } as const;

/**
 * Hermes providers this gateway cannot speak to, with the reason the fallback says. They run inside the
 * Hermes process (local models, Python SDKs) or talk a wire this gateway has no client for.
 */
const UNSUPPORTED_STT: Record<string, string> = {
  local: 'faster-whisper runs inside Hermes, not in this gateway',
  local_command: 'a local whisper command runs inside Hermes, not in this gateway',
  mistral: 'Mistral Voxtral has no client in this gateway',
  xai: 'xAI Grok STT has no client in this gateway',
  elevenlabs: 'ElevenLabs Scribe has no client in this gateway',
  deepinfra: "DeepInfra's model comes from Hermes' live catalog, which this gateway does not read",
  nous: "the managed Nous audio gateway needs Hermes' own sign-in",
};
const UNSUPPORTED_TTS: Record<string, string> = {
  edge: 'Edge TTS runs inside Hermes (edge-tts), not in this gateway',
  neutts: 'NeuTTS runs inside Hermes, not in this gateway',
  kittentts: 'KittenTTS runs inside Hermes, not in this gateway',
  piper: 'Piper runs inside Hermes, not in this gateway',
  elevenlabs: 'ElevenLabs has no client in this gateway',
  minimax: 'MiniMax has no client in this gateway',
  mistral: 'Mistral Voxtral TTS has no client in this gateway',
  gemini: 'Gemini TTS has no client in this gateway',
  xai: 'xAI TTS has no client in this gateway',
  deepinfra: "DeepInfra's model comes from Hermes' live catalog, which this gateway does not read",
  nous: "the managed Nous audio gateway needs Hermes' own sign-in",
};

/**
 * The speech variables the provider module builds from, and what they are. `gatewayEnv` holds the
 * operator's HERMES_REALTIME_STT_* / _TTS_* / _ESPEAK_* settings; each capability they configure wins over
 * the profile (HERMES_REALTIME_STT_BASE_URL for transcription, HERMES_REALTIME_TTS_PROVIDER for speech).
 */
export function resolveSpeech(
  gatewayEnv: Record<string, string>,
  profile: HermesSpeechProfile,
): { speechEnv: Record<string, string>; selection: SpeechSelection } {
  const speechEnv = { ...gatewayEnv };
  // Read after the merge, so a model or voice the operator set beside Hermes' provider is the one reported.
  const setting = (name: keyof typeof SPEECH_PROVIDER_SETTINGS) =>
    speechEnv[name]?.trim() || SPEECH_PROVIDER_SETTINGS[name].default;

  let stt: SpeechChoice;
  if (gatewayEnv.HERMES_REALTIME_STT_BASE_URL?.trim()) {
    stt = { source: 'gateway', provider: 'openai-compatible', model: setting('HERMES_REALTIME_STT_MODEL') };
  } else {
    const hermes = hermesTranscription(profile);
    stt = hermes.choice;
    if ('variables' in hermes) {
      fill(speechEnv, hermes.variables);
      stt = { ...stt, model: setting('HERMES_REALTIME_STT_MODEL') };
    }
  }

  let tts: SpeechChoice;
  if (gatewayEnv.HERMES_REALTIME_TTS_PROVIDER?.trim()) {
    const provider = setting('HERMES_REALTIME_TTS_PROVIDER');
    tts =
      provider === 'openai'
        ? {
            source: 'gateway',
            provider: 'openai-compatible',
            model: setting('HERMES_REALTIME_TTS_MODEL'),
            voice: setting('HERMES_REALTIME_TTS_VOICE'),
          }
        : { source: 'gateway', provider, voice: setting('HERMES_REALTIME_ESPEAK_VOICE') };
  } else {
    const hermes = hermesSpeech(profile);
    if ('variables' in hermes) {
      fill(speechEnv, hermes.variables);
      tts = {
        ...hermes.choice,
        model: setting('HERMES_REALTIME_TTS_MODEL'),
        voice: setting('HERMES_REALTIME_TTS_VOICE'),
      };
    } else {
      tts = { ...hermes.choice, voice: setting('HERMES_REALTIME_ESPEAK_VOICE') };
    }
  }
  return { speechEnv, selection: { stt, tts } };
}

/**
 * Adds the profile's values where the operator set none: a single HERMES_REALTIME_STT_MODEL (say) still
 * overrides that one value of Hermes' configuration.
 */
function fill(speechEnv: Record<string, string>, variables: Record<string, string>): void {
  for (const [name, value] of Object.entries(variables)) if (!speechEnv[name]?.trim()) speechEnv[name] = value;
}

type Resolved = { choice: SpeechChoice } | { choice: SpeechChoice; variables: Record<string, string> };

const standIn = (note: string): Resolved => ({ choice: { source: 'fallback', provider: 'stand-in', note } });
const espeak = (note: string): Resolved => ({ choice: { source: 'fallback', provider: 'espeak', note } });

/** A non-blank string (numbers as YAML wrote them), else undefined. */
function text(value: ProfileValue | undefined): string | undefined {
  if (typeof value === 'string') return value.trim() || undefined;
  if (typeof value === 'number') return String(value);
  return undefined;
}

function first(...values: (string | undefined)[]): string | undefined {
  return values.find((value) => value !== undefined);
}

/** Hermes lets a local OpenAI-compatible server go without a key (its `_is_local_or_private_url`). */
function isLocalUrl(url: string): boolean {
  let host: string;
  try {
    host = new URL(url).hostname.toLowerCase().replace(/^\[|\]$/g, '');
  } catch {
    return false;
  }
  if (host === 'localhost' || /\.(local|lan|internal)$/.test(host)) return true;
  if (isIP(host) === 6) return host === '::1' || /^f[cd]/.test(host) || host.startsWith('fe80:');
  if (isIP(host) !== 4) return false;
  const [a = 0, b = 0] = host.split('.').map(Number);
  return a === 10 || a === 127 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168);
}

/** The base URL's problem in words, or null when the provider module will accept it. */
function badBaseUrl(url: string): string | null {
  try {
    endpointUrl(url, 'x');
    return null;
  } catch (error) {
    return error instanceof Error ? error.message : 'invalid base URL';
  }
}

/** Hermes' `stt` section → the gateway's transcription variables, or the stand-in with the reason. */
function hermesTranscription({ config, variable }: HermesSpeechProfile): Resolved {
  const get = (key: string) => config?.get(`stt.${key}`);
  const enabled = get('enabled');
  if (enabled === false || (typeof enabled === 'string' && /^(0|false|no|off)$/i.test(enabled.trim())))
    return standIn('stt.enabled is false in the Hermes profile');
  const named = text(get('provider'))?.toLowerCase();
  let provider: string;
  let note: string | undefined;
  if (named) {
    provider = named;
  } else {
    // Hermes' auto-detection when stt.provider is unset: local first (never available here), then Groq,
    // then OpenAI, by which keys the profile has.
    if (variable('GROQ_API_KEY')) provider = 'groq';
    else if (openAiKey(text(get('openai.api_key')), variable) || isLocalUrl(text(get('openai.base_url')) ?? ''))
      provider = 'openai';
    else return standIn('no speech-to-text configured in the Hermes profile (stt.provider, or a Groq or OpenAI key)');
    note = `stt.provider is not set; chosen by Hermes' auto-detection order (local is not available here)`;
  }
  if (provider === 'openai' || provider === 'groq') {
    const groq = provider === 'groq';
    const baseUrl = groq
      ? (variable('GROQ_BASE_URL') ?? GROQ_BASE_URL)
      : (first(text(get('openai.base_url')), variable('STT_OPENAI_BASE_URL')) ?? OPENAI_BASE_URL);
    const apiKey = groq ? variable('GROQ_API_KEY') : openAiKey(text(get('openai.api_key')), variable);
    const model = groq
      ? (first(text(get('groq.model')), variable('STT_GROQ_MODEL')) ?? GROQ_STT_MODEL)
      : (first(text(get('openai.model')), variable('STT_OPENAI_MODEL')) ?? OPENAI_STT_MODEL);
    const problem = badBaseUrl(baseUrl);
    if (problem) return standIn(`Hermes' stt.provider ${provider}: ${problem}`);
    if (!apiKey && !isLocalUrl(baseUrl))
      return standIn(
        groq
          ? "Hermes' stt.provider is groq but GROQ_API_KEY is not set"
          : "Hermes' stt.provider is openai but none of stt.openai.api_key, VOICE_TOOLS_OPENAI_KEY, OPENAI_API_KEY is set",
      );
    const language = first(
      text(get(`${provider}.language`)),
      text(get('language')),
      variable('HERMES_LOCAL_STT_LANGUAGE'),
    );
    const prompt = text(get('prompt'));
    return {
      choice: { source: 'hermes', provider, model, ...(note ? { note } : {}) },
      variables: {
        HERMES_REALTIME_STT_BASE_URL: baseUrl,
        HERMES_REALTIME_STT_MODEL: model,
        ...(apiKey ? { HERMES_REALTIME_STT_API_KEY: apiKey } : {}),
        ...(language ? { HERMES_REALTIME_STT_LANGUAGE: language } : {}),
        ...(prompt ? { HERMES_REALTIME_STT_PROMPT: prompt } : {}),
      },
    };
  }
  const reason = UNSUPPORTED_STT[provider] ?? 'a command or plugin provider runs inside Hermes, not in this gateway';
  return standIn(`Hermes' stt.provider ${provider} cannot be used here: ${reason}`);
}

/** Hermes' `tts` section → the gateway's speech variables, or espeak-ng with the reason. */
function hermesSpeech({ config, variable }: HermesSpeechProfile): Resolved {
  const get = (key: string) => config?.get(`tts.${key}`);
  const provider = text(get('provider'))?.toLowerCase();
  // Hermes never picks paid speech from keys alone: without tts.provider it uses Edge TTS, its free default.
  if (!provider)
    return espeak("no tts.provider in the Hermes profile (Hermes' default, Edge TTS, runs only inside Hermes)");
  if (provider !== 'openai') {
    const reason = UNSUPPORTED_TTS[provider] ?? 'a command or plugin provider runs inside Hermes, not in this gateway';
    return espeak(`Hermes' tts.provider ${provider} cannot be used here: ${reason}`);
  }
  const configuredBase = text(get('openai.base_url'));
  const baseUrl = configuredBase ?? OPENAI_BASE_URL;
  const problem = badBaseUrl(baseUrl);
  if (problem) return espeak(`Hermes' tts.provider openai: ${problem}`);
  const apiKey = openAiKey(text(get('openai.api_key')), variable);
  if (!apiKey && !isLocalUrl(baseUrl))
    return espeak(
      "Hermes' tts.provider is openai but none of tts.openai.api_key, VOICE_TOOLS_OPENAI_KEY, OPENAI_API_KEY is set",
    );
  const model = text(get('openai.model')) ?? OPENAI_TTS_MODEL;
  const voice = text(get('openai.voice')) ?? OPENAI_TTS_VOICE;
  const speedValue = get('openai.speed') ?? get('speed');
  const speed = typeof speedValue === 'number' || typeof speedValue === 'string' ? Number(speedValue) : NaN;
  const clamped = Number.isFinite(speed)
    ? Math.min(TTS_SPEED_RANGE.max, Math.max(TTS_SPEED_RANGE.min, speed))
    : undefined;
  return {
    choice: { source: 'hermes', provider: 'openai', model, voice },
    variables: {
      HERMES_REALTIME_TTS_PROVIDER: 'openai',
      HERMES_REALTIME_TTS_BASE_URL: baseUrl,
      HERMES_REALTIME_TTS_MODEL: model,
      HERMES_REALTIME_TTS_VOICE: voice,
      ...(apiKey ? { HERMES_REALTIME_TTS_API_KEY: apiKey } : {}),
      // 1.0 is OpenAI's default; Hermes sends speed only when it differs.
      ...(clamped !== undefined && clamped !== 1 ? { HERMES_REALTIME_TTS_SPEED: String(clamped) } : {}),
    },
  };
}

/** Hermes' OpenAI audio key: the section's own api_key, then VOICE_TOOLS_OPENAI_KEY, then OPENAI_API_KEY. */
function openAiKey(configured: string | undefined, variable: (name: string) => string | undefined): string | undefined {
  return configured ?? variable('VOICE_TOOLS_OPENAI_KEY') ?? variable('OPENAI_API_KEY');
}
