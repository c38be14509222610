/**
 * The settings that are Hermes' own, not Conduit's (the seed): speech providers and their keys,
 * voice.gpt_live and models. conduit_settings never asks a Conduit to change one, even if a Conduit
 * shares it; it tells Hermes to change it in its own config instead. One rule, matched on the key's
 * dotted segments, so `tts.provider`, `stt`, `voice.gpt_live.voice`, `openai_api_key` and
 * `gemini_live.model` are all caught while Conduit's own `live.voice` or `calls.style` are not.
 */

/** Segments that name a Hermes setting wherever they appear in a key. */
const HERMES_SEGMENTS = new Set([
  'stt',
  'tts',
  'speech',
  'speech_to_text',
  'text_to_speech',
  'transcription',
  'provider',
  'providers',
  'model',
  'models',
  'gpt_live',
  'api_key',
  'api_keys',
  'key',
  'keys',
  'secret',
  'secrets',
  'token',
  'tokens',
  'base_url',
]);

/** A segment ending in one of these names one too (`tts_provider`, `voice_model`, `openai_api_key`). */
const HERMES_SUFFIX = /_(?:provider|providers|model|models|key|keys|secret|token)$/;
/** A segment starting with one of these names one too (`stt_language`, `tts_voice`). */
const HERMES_PREFIX = /^(?:stt|tts|gpt_live)_/;

/** Whether `key` is one of Hermes' own settings (case and `-`/`_` spelling do not matter). */
export function isHermesSetting(key: string): boolean {
  const segments = key
    .toLowerCase()
    .replace(/-/g, '_')
    .split(/[./:\s]+/)
    .filter((segment) => segment !== '');
  return segments.some(
    (segment) => HERMES_SEGMENTS.has(segment) || HERMES_SUFFIX.test(segment) || HERMES_PREFIX.test(segment),
  );
}

/** What the tool answers when asked to change one of Hermes' own settings. */
export function hermesSettingRefusal(key: string): string {
  return (
    `${key} is a Hermes setting, not Conduit's: speech providers and their keys, voice.gpt_live and models ` +
    "belong to this Hermes profile. Change it in Hermes' own config yourself (the profile's config.yaml, " +
    'keys in its .env), not with conduit_settings.'
  );
}
