/** The reference's text rules for anything a client sends that ends up in a push or the store. */

// eslint-disable-next-line no-control-regex -- the reference replaces exactly U+0000–U+001F
const CONTROL_CHARS = /[\u0000-\u001f]/g;
const IDENTIFIER = /^[A-Za-z0-9:_./-]+$/;

/** String only; control characters become spaces; trimmed; cut to `max`; empty → undefined. */
export function cleanText(value: unknown, max: number): string | undefined {
  if (typeof value !== 'string') return undefined;
  const cleaned = value.replace(CONTROL_CHARS, ' ').trim().slice(0, max);
  return cleaned === '' ? undefined : cleaned;
}

/** A string of `[A-Za-z0-9:_./-]` (else undefined), cut to `max`. */
export function cleanIdentifier(value: unknown, max: number): string | undefined {
  if (typeof value !== 'string' || !IDENTIFIER.test(value)) return undefined;
  return value.slice(0, max);
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
