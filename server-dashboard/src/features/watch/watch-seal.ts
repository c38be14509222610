import { decodeBase64Url, encodeBase64Url } from '../../crypto/base64url.js';
import { hkdfSha256, NONCE_BYTES, openChaCha20Poly1305, sealChaCha20Poly1305 } from '../../crypto/symmetric.js';

/**
 * Watch tools sealing, "conduit-watch-tools-v1" (CRYPTO.md §3): the grant root this host made is
 * stretched with HKDF-SHA256 into one key per direction, and every call and answer is a
 * ChaCha20-Poly1305 box bound to its grant, its rid and its direction, so the relay can neither read
 * nor forge one, nor move one to another grant or call.
 */
export const WATCH_SALT = 'conduit-watch-tools-v1';
export const WATCH_INFO = {
  call: 'conduit-watch-tools-v1 call watch-to-host',
  result: 'conduit-watch-tools-v1 result host-to-watch',
} as const;
export const WATCH_AAD_TAG = 'conduit-watch-tools/1';
export type WatchDirection = keyof typeof WATCH_INFO;

const NONCE_TEXT = /^[A-Za-z0-9_-]{16}$/;
const CT_TEXT = /^[A-Za-z0-9_-]{22,}$/;

export interface WatchKeys {
  call: Uint8Array;
  result: Uint8Array;
}

/** A sealed call or answer as it travels: nonce and ciphertext-with-tag, unpadded base64url. */
export interface SealedWatchMessage {
  n: string;
  ct: string;
}

export function deriveWatchKeys(root: Uint8Array): WatchKeys {
  return {
    call: hkdfSha256(root, WATCH_SALT, WATCH_INFO.call),
    result: hkdfSha256(root, WATCH_SALT, WATCH_INFO.result),
  };
}

export function watchAad(direction: WatchDirection, grantId: string, rid: string): string {
  return `${WATCH_AAD_TAG}\n${direction}\ngrant=${grantId}\nrid=${rid}`;
}

/**
 * The compact JSON the reference seals (`separators=(",",":")`, `ensure_ascii=False`): JSON.stringify
 * writes exactly that, keys in the payload's own order and non-ASCII as raw UTF-8.
 */
export function watchPlaintext(payload: Record<string, unknown>): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(payload));
}

export function sealWatchMessage(
  key: Uint8Array,
  direction: WatchDirection,
  grantId: string,
  rid: string,
  plaintext: Uint8Array,
  nonce: Uint8Array,
): SealedWatchMessage {
  if (nonce.length !== NONCE_BYTES) throw new RangeError('Watch nonces are 12 bytes');
  const ct = sealChaCha20Poly1305(key, nonce, watchAad(direction, grantId, rid), plaintext);
  return { n: encodeBase64Url(nonce), ct: encodeBase64Url(ct) };
}

export type OpenedWatchMessage = { ok: true; payload: Record<string, unknown> } | { ok: false; why: string };

/**
 * Opens a sealed message: the nonce and ciphertext shapes, a ciphertext no longer than `maxBytes` of
 * plaintext can make, the tag, and a JSON object inside — in that order, so nothing unverified is parsed.
 */
export function openWatchMessage(
  key: Uint8Array,
  direction: WatchDirection,
  grantId: string,
  rid: string,
  sealed: SealedWatchMessage,
  maxBytes: number,
): OpenedWatchMessage {
  if (!NONCE_TEXT.test(sealed.n) || !CT_TEXT.test(sealed.ct)) return { ok: false, why: 'malformed' };
  if (sealed.ct.length > Math.floor(((maxBytes + 16) * 4) / 3) + 4) return { ok: false, why: 'too large' };
  const nonce = decodeBase64Url(sealed.n);
  const ct = decodeBase64Url(sealed.ct);
  if (!nonce || !ct) return { ok: false, why: 'malformed' };
  const plaintext = openChaCha20Poly1305(key, nonce, watchAad(direction, grantId, rid), ct);
  if (!plaintext) return { ok: false, why: 'did not verify' };
  // The length bound above is base64's, a byte or two loose; the plaintext's own is exact.
  if (plaintext.length > maxBytes) return { ok: false, why: 'too large' };
  let payload: unknown;
  try {
    payload = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(plaintext));
  } catch {
    return { ok: false, why: 'not JSON' };
  }
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
    return { ok: false, why: 'not a JSON object' };
  }
  return { ok: true, payload: payload as Record<string, unknown> };
}
