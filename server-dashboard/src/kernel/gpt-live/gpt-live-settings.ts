import { GPT_LIVE_VOICE_PATTERN } from '@conduit/contracts/dashboard/gpt-live';
import { configSection, type ProfileFiles } from '../profile-files.js';

/** OpenAI's public API: the API path's default base_url, and the only host the shared keys go to. */
export const OPENAI_API_BASE_URL = 'https://api.openai.com/v1';
const OPENAI_API_HOST = 'api.openai.com';

const DEFAULTS = {
  subscriptionModel: 'gpt-live-1-codex',
  subscriptionVoice: 'cove',
  apiModel: 'gpt-live-1',
  apiVoice: 'marin',
  /** The seed's default cap of API-billed calls a profile may start per day. */
  apiDailyCalls: 20,
} as const;

/** A model name of a plain shape (a configured value of another shape is not sent upstream). */
const MODEL_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/;

function modelOr(value: unknown, fallback: string): string {
  return typeof value === 'string' && MODEL_PATTERN.test(value.trim()) ? value.trim() : fallback;
}

function voiceOr(value: unknown, fallback: string): string {
  const voice = typeof value === 'string' ? value.trim().toLowerCase() : '';
  return GPT_LIVE_VOICE_PATTERN.test(voice) ? voice : fallback;
}

/** The profile's extra persona sentences (`voice.gpt_live.instructions`), trimmed; empty when unset. */
function extraInstructions(value: unknown): string {
  return typeof value === 'string' ? value.trim() : '';
}

/**
 * The daily cap as configured: a whole number of 0 or more, 20 when the key is missing. Any other value
 * (negative, fractional, text) is 0: this bound limits spending, so a value it cannot read turns API
 * calls off rather than guessing.
 */
function dailyCalls(gpt: Record<string, unknown>): number {
  if (!('conduit_api_daily_calls' in gpt) || gpt.conduit_api_daily_calls === null) return DEFAULTS.apiDailyCalls;
  const value = gpt.conduit_api_daily_calls;
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : 0;
}

/** Where the API path goes, or why it cannot go anywhere. */
export type ApiEndpoint =
  { ok: true; url: URL; host: string; isOpenAi: boolean } | { ok: false; host: string | null; reason: string };

/**
 * `voice.gpt_live.base_url` (else OpenAI's): an https URL with a host and no query or fragment (the
 * seed). `isOpenAi` is api.openai.com on the standard port, the only place a shared key may go.
 */
function apiEndpoint(value: unknown): ApiEndpoint {
  const raw = typeof value === 'string' && value.trim() ? value.trim() : OPENAI_API_BASE_URL;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, host: null, reason: 'voice.gpt_live.base_url is not a URL' };
  }
  const host = url.hostname || null;
  if (url.protocol !== 'https:' || !url.hostname || raw.includes('?') || raw.includes('#')) {
    return {
      ok: false,
      host,
      reason: 'voice.gpt_live.base_url must be an https URL with a host and no query or fragment',
    };
  }
  if (url.username || url.password) {
    return {
      ok: false,
      host,
      reason: 'voice.gpt_live.base_url must not carry credentials; set voice.gpt_live.api_key',
    };
  }
  return { ok: true, url, host: url.hostname, isOpenAi: url.hostname === OPENAI_API_HOST && url.port === '' };
}

/** The key an API-billed call sends, and whether it is one of the shared environment keys. */
export interface ApiKey {
  value: string;
  /** `voice.gpt_live.api_key`, or a key shared with Hermes' other OpenAI tools (speech-to-text, TTS). */
  source: 'voice.gpt_live.api_key' | 'VOICE_TOOLS_OPENAI_KEY' | 'OPENAI_API_KEY';
}

/**
 * The key as Hermes desktop resolves it: `voice.gpt_live.api_key`, then VOICE_TOOLS_OPENAI_KEY, then
 * OPENAI_API_KEY. Never answered or logged; only its source is named.
 */
function apiKey(gpt: Record<string, unknown>, files: ProfileFiles): ApiKey | undefined {
  const own = typeof gpt.api_key === 'string' ? gpt.api_key.trim() : '';
  if (own) return { value: own, source: 'voice.gpt_live.api_key' };
  for (const name of ['VOICE_TOOLS_OPENAI_KEY', 'OPENAI_API_KEY'] as const) {
    const value = files.env(name);
    if (value) return { value, source: name };
  }
  return undefined;
}

export interface GptLiveSettings {
  subscription: { model: string; voice: string };
  /** Extra persona sentences for both paths. */
  instructions: string;
  api: {
    /** `voice.gpt_live.conduit_api_billing` is the boolean true, nothing else. */
    enabled: boolean;
    dailyLimit: number;
    model: string;
    voice: string;
    endpoint: ApiEndpoint;
    key: ApiKey | undefined;
  };
}

/** Reads the profile's `voice.gpt_live` settings (the same keys Hermes uses) and its OpenAI keys. */
export function gptLiveSettings(files: ProfileFiles): GptLiveSettings {
  const gpt = configSection(configSection(files.config, 'voice'), 'gpt_live');
  return {
    subscription: {
      model: modelOr(gpt.subscription_model, DEFAULTS.subscriptionModel),
      voice: voiceOr(gpt.subscription_voice, DEFAULTS.subscriptionVoice),
    },
    instructions: extraInstructions(gpt.instructions),
    api: {
      enabled: gpt.conduit_api_billing === true,
      dailyLimit: dailyCalls(gpt),
      model: modelOr(gpt.model, DEFAULTS.apiModel),
      voice: voiceOr(gpt.voice, DEFAULTS.apiVoice),
      endpoint: apiEndpoint(gpt.base_url),
      key: apiKey(gpt, files),
    },
  };
}

/** An API-billed call's target and key, or why there is none (the status's `api.reason`). */
export type ApiTarget =
  | { ok: true; url: URL; isOpenAi: boolean; key: ApiKey }
  /** 403: the profile does not allow API calls; 503: it allows them but nothing usable is set up. */
  | { ok: false; status: 403 | 503; reason: string };

/**
 * Whether the API path may run for this profile, checked in the order the app can act on: allowed,
 * not switched off, a usable base_url, a key — and a shared key only for OpenAI itself, so a key set for
 * speech-to-text is never sent to another service named in base_url.
 */
export function apiTarget(api: GptLiveSettings['api']): ApiTarget {
  if (!api.enabled) {
    return {
      ok: false,
      status: 403,
      reason: 'API billing is not allowed for this profile (set voice.gpt_live.conduit_api_billing: true)',
    };
  }
  if (api.dailyLimit === 0) {
    return {
      ok: false,
      status: 403,
      reason: 'API calls are turned off for this profile (voice.gpt_live.conduit_api_daily_calls is 0)',
    };
  }
  if (!api.endpoint.ok) return { ok: false, status: 503, reason: api.endpoint.reason };
  if (!api.key) {
    return {
      ok: false,
      status: 503,
      reason: 'No OpenAI API key is set (voice.gpt_live.api_key, VOICE_TOOLS_OPENAI_KEY or OPENAI_API_KEY)',
    };
  }
  if (!api.endpoint.isOpenAi && api.key.source !== 'voice.gpt_live.api_key') {
    return {
      ok: false,
      status: 503,
      reason: `voice.gpt_live.base_url is not api.openai.com, so it needs its own voice.gpt_live.api_key (${api.key.source} is only sent to OpenAI)`,
    };
  }
  return { ok: true, url: api.endpoint.url, isOpenAi: api.endpoint.isOpenAi, key: api.key };
}
