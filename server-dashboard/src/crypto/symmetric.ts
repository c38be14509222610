import { chacha20poly1305 } from '@noble/ciphers/chacha.js';
import { hkdf } from '@noble/hashes/hkdf.js';
import { sha256 } from '@noble/hashes/sha2.js';

/**
 * The two primitives every Conduit sealed format is built from (CRYPTO.md: notification E2E, Watch tools,
 * Watch audio): HKDF-SHA256 with an explicit salt and a direction label, and ChaCha20-Poly1305 (IETF,
 * 12-byte nonce, 16-byte tag appended). Labels and AADs are text, encoded as UTF-8.
 */
const utf8 = new TextEncoder();
const bytes = (value: string | Uint8Array) => (typeof value === 'string' ? utf8.encode(value) : value);

export const NONCE_BYTES = 12;
export const TAG_BYTES = 16;

/** HKDF-SHA256 (RFC 5869) of `secret` with `salt` and `info`; 32 bytes unless asked otherwise. */
export function hkdfSha256(
  secret: Uint8Array,
  salt: string | Uint8Array,
  info: string | Uint8Array,
  length = 32,
): Uint8Array {
  return hkdf(sha256, secret, bytes(salt), bytes(info), length);
}

/** Ciphertext followed by the tag. The nonce must never repeat under one key. */
export function sealChaCha20Poly1305(
  key: Uint8Array,
  nonce: Uint8Array,
  aad: string | Uint8Array,
  plaintext: Uint8Array,
): Uint8Array {
  if (nonce.length !== NONCE_BYTES) throw new RangeError('ChaCha20-Poly1305 nonces are 12 bytes');
  return chacha20poly1305(key, nonce, bytes(aad)).encrypt(plaintext);
}

/** The plaintext, or null when the tag does not verify (wrong key, nonce, AAD or a changed byte). */
export function openChaCha20Poly1305(
  key: Uint8Array,
  nonce: Uint8Array,
  aad: string | Uint8Array,
  sealed: Uint8Array,
): Uint8Array | null {
  if (nonce.length !== NONCE_BYTES || sealed.length < TAG_BYTES) return null;
  try {
    return chacha20poly1305(key, nonce, bytes(aad)).decrypt(sealed);
  } catch {
    return null;
  }
}
