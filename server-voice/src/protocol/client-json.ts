import { MAX_EVENT_BYTES } from '@conduit/contracts/voice/events';

export type DecodedClientEvent =
  | { ok: true; value: Record<string, unknown> }
  | { ok: false; code: 'event_too_large' | 'invalid_json' | 'invalid_event'; message: string };

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** True when any string (key or value) in a decoded JSON value holds half of a surrogate pair. */
function hasLoneSurrogate(value: unknown): boolean {
  if (typeof value === 'string') return LONE_SURROGATE.test(value);
  if (Array.isArray(value)) return value.some(hasLoneSurrogate);
  if (typeof value === 'object' && value !== null)
    return Object.entries(value).some(([key, inner]) => LONE_SURROGATE.test(key) || hasLoneSurrogate(inner));
  return false;
}

/**
 * Decodes one client message: at most 256 KiB of strict UTF-8 holding a JSON object. JSON.parse already
 * refuses NaN and Infinity; escaped lone surrogates (`"\ud800"`) are refused here, since they cannot be
 * re-encoded as UTF-8 for the agent.
 */
export function decodeClientJson(raw: string | Buffer): DecodedClientEvent {
  const bytes = typeof raw === 'string' ? Buffer.byteLength(raw, 'utf8') : raw.length;
  if (bytes > MAX_EVENT_BYTES)
    return { ok: false, code: 'event_too_large', message: 'Client events must be at most 256 KiB.' };
  let text: string;
  try {
    text = typeof raw === 'string' ? raw : strictUtf8.decode(raw);
  } catch {
    return { ok: false, code: 'invalid_json', message: 'Client events must be UTF-8 JSON.' };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, code: 'invalid_json', message: 'Client events must be valid JSON.' };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return { ok: false, code: 'invalid_event', message: 'Client events must be JSON objects.' };
  if (hasLoneSurrogate(value))
    return { ok: false, code: 'invalid_json', message: 'Client events must not contain lone surrogates.' };
  return { ok: true, value: value as Record<string, unknown> };
}
