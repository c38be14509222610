import { x25519 } from '@noble/curves/ed25519.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, concatBytes } from '@noble/hashes/utils.js';
import { hkdfSha256, openChaCha20Poly1305, sealChaCha20Poly1305 } from '../../crypto/symmetric.js';

/**
 * The key schedule of the phone-data features (contracts/dashboard/phone-data.ts has the wire's
 * description; test/fixtures/vectors/phone_data_vector.json pins it against node:crypto). Every
 * feature passes its own label (`conduit-health-v1`), so one feature's key never opens another's data
 * even for the same device key pair.
 */

/**
 * The directions a key is derived for. Each has its own key, so a sealed answer can never be replayed
 * as a request in the other direction. The maps directions are location's (the phone answers
 * conduit_maps lookups); another feature's label derives them too but never uses them.
 */
export type PhoneDataDirection =
  | 'ingest device-to-host'
  | 'voice device-to-host'
  | 'voice host-to-device'
  | 'maps host-to-device'
  | 'maps device-to-host';

export const PHONE_DATA_DIRECTIONS: readonly PhoneDataDirection[] = [
  'ingest device-to-host',
  'voice device-to-host',
  'voice host-to-device',
  'maps host-to-device',
  'maps device-to-host',
];

const utf8 = new TextEncoder();

export interface HostKeyPair {
  secret: Uint8Array;
  public: Uint8Array;
}

export function newHostKeyPair(secret: Uint8Array = x25519.utils.randomSecretKey()): HostKeyPair {
  return { secret, public: x25519.getPublicKey(secret) };
}

/**
 * The X25519 shared secret, or null for a device key that is a low-order point (the result would be
 * all zeros, a key anyone can compute).
 */
export function sharedSecret(hostSecret: Uint8Array, devicePublic: Uint8Array): Uint8Array | null {
  if (devicePublic.length !== 32) return null;
  try {
    const shared = x25519.getSharedSecret(hostSecret, devicePublic);
    return shared.every((byte) => byte === 0) ? null : shared;
  } catch {
    return null;
  }
}

/** `kid`: the first 16 bytes of SHA-256(`<label> kid` ‖ device public ‖ host public), as hex. */
export function keyId(label: string, devicePublic: Uint8Array, hostPublic: Uint8Array): string {
  return bytesToHex(sha256(concatBytes(utf8.encode(`${label} kid`), devicePublic, hostPublic))).slice(0, 32);
}

/**
 * One direction's ChaCha20-Poly1305 key: HKDF-SHA256 with both public keys as the salt (so the key is
 * bound to this exact pair) and `<label> <direction>` as the info.
 */
export function directionKey(
  label: string,
  direction: PhoneDataDirection,
  shared: Uint8Array,
  devicePublic: Uint8Array,
  hostPublic: Uint8Array,
): Uint8Array {
  return hkdfSha256(shared, concatBytes(devicePublic, hostPublic), `${label} ${direction}`);
}

/** The associated data of a batch: feature (label), device, key and batch id. */
export function batchAad(label: string, deviceId: string, kid: string, batchId: string): string {
  return `${label} ingest\n${deviceId}\n${kid}\n${batchId}`;
}

/** The associated data of a voice read, the same in both directions: tool, key, device and call id. */
export function voiceAad(label: string, tool: string, kid: string, deviceId: string, callId: string): string {
  return `${label} voice\n${tool}\n${kid}\n${deviceId}\n${callId}`;
}

/**
 * The associated data of a maps lookup and of its answer, the same in both directions: key, device and
 * lookup id, so a lookup sealed for one phone (or one key) opens for no other, nor for another lookup.
 */
export function mapsAad(label: string, kid: string, deviceId: string, lookupId: string): string {
  return `${label} maps\n${kid}\n${deviceId}\n${lookupId}`;
}

/** The keys of one device key pair: everything a sealed exchange with that device needs. */
export interface DeviceKeys {
  kid: string;
  keys: Record<PhoneDataDirection, Uint8Array>;
}

/** Keys for a device, or null when its public key is refused. */
export function deviceKeys(
  label: string,
  hostSecret: Uint8Array,
  hostPublic: Uint8Array,
  devicePublic: Uint8Array,
): DeviceKeys | null {
  const shared = sharedSecret(hostSecret, devicePublic);
  if (shared === null) return null;
  const derive = (direction: PhoneDataDirection) => directionKey(label, direction, shared, devicePublic, hostPublic);
  return {
    kid: keyId(label, devicePublic, hostPublic),
    keys: {
      'ingest device-to-host': derive('ingest device-to-host'),
      'voice device-to-host': derive('voice device-to-host'),
      'voice host-to-device': derive('voice host-to-device'),
      'maps host-to-device': derive('maps host-to-device'),
      'maps device-to-host': derive('maps device-to-host'),
    },
  };
}

export function sealWith(key: Uint8Array, nonce: Uint8Array, aad: string, plaintext: Uint8Array): Uint8Array {
  return sealChaCha20Poly1305(key, nonce, aad, plaintext);
}

/** The plaintext, or null when the seal does not open (wrong key, changed byte, other ids). */
export function openWith(key: Uint8Array, nonce: Uint8Array, aad: string, sealed: Uint8Array): Uint8Array | null {
  return openChaCha20Poly1305(key, nonce, aad, sealed);
}
