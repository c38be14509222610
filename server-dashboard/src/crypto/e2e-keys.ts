import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import {
  E2E_INFO,
  E2E_SALT,
  E2E_SECRET_BYTES,
  e2eSecretPattern,
  kidPattern,
  type E2eKeyRecord,
} from '@conduit/contracts/crypto/e2e';
import { decodeBase64Url } from './base64url.js';
import { hkdfSha256 } from './symmetric.js';

const utf8 = new TextEncoder();

/** The three keys derived from a pairing's root secret (CRYPTO.md §1 "Key derivation"). */
export interface E2eKeys {
  kid: string;
  /** gateway → device ChaCha20-Poly1305 key. */
  push: Uint8Array;
  /** device → gateway ChaCha20-Poly1305 key. */
  answer: Uint8Array;
  /** HMAC-SHA256 key for keyed ids and thread tokens. */
  meta: Uint8Array;
}

export function deriveE2eKeys(kid: string, secret: Uint8Array): E2eKeys {
  if (!kidPattern.test(kid)) throw new RangeError('kid must be 32 lowercase hex characters');
  if (secret.length !== E2E_SECRET_BYTES) throw new RangeError('the E2E secret must be 32 bytes');
  const derive = (info: string) => hkdfSha256(secret, E2E_SALT, info);
  return { kid, push: derive(E2E_INFO.push), answer: derive(E2E_INFO.answer), meta: derive(E2E_INFO.meta) };
}

/** Keys for a stored record, or null when the record cannot yield any (malformed kid or secret). */
export function keysFromRecord(record: Pick<E2eKeyRecord, 'kid' | 'secret'>): E2eKeys | null {
  if (!kidPattern.test(record.kid) || !e2eSecretPattern.test(record.secret)) return null;
  const secret = decodeBase64Url(record.secret);
  if (!secret || secret.length !== E2E_SECRET_BYTES) return null;
  return deriveE2eKeys(record.kid, secret);
}

/** HMAC-SHA256 as lowercase hex. */
export function hmacHex(key: Uint8Array, message: Uint8Array | string): string {
  return bytesToHex(hmac(sha256, key, typeof message === 'string' ? utf8.encode(message) : message));
}

/** The text of an event id before its first `:`, which stays readable to the relay after re-keying. */
export function eventIdPrefix(eventId: string): string {
  const colon = eventId.indexOf(':');
  return colon > 0 ? eventId.slice(0, colon) : 'event';
}

/**
 * Relay-visible event id under the meta key: `prefix:<first 32 hex of HMAC(meta, event_id)>`. The
 * same event keeps the same id across retries, so the relay still dedupes it without learning it.
 */
export function keyedEventId(meta: Uint8Array, eventId: string): string {
  return `${eventIdPrefix(eventId)}:${hmacHex(meta, eventId).slice(0, 32)}`;
}

/** Keyed thread token: the phone groups a session's notifications without the relay learning the session. */
export function threadToken(meta: Uint8Array, seed: string): string {
  return hmacHex(meta, `thread\n${seed}`).slice(0, 16);
}
