import { expect } from 'vitest';
import {
  deviceKeys,
  directionKey,
  keyId,
  newHostKeyPair,
  openWith,
  sealWith,
  sharedSecret,
  type PhoneDataDirection,
} from '../../src/kernel/phone-data/sealing.js';

/** One feature's vector as derive-*-vectors.ts writes it (node:crypto, independent of the host's code). */
export interface PhoneDataVector {
  label: string;
  host_secret: string;
  host_public: string;
  device_secret: string;
  device_public: string;
  shared: string;
  kid: string;
  device_id: string;
  keys: Record<PhoneDataDirection, string>;
  cases: { direction: PhoneDataDirection; aad: string; nonce: string; plaintext: string; sealed: string }[];
}

const bytes = (hex: string) => new Uint8Array(Buffer.from(hex, 'hex'));
const hex = (value: Uint8Array) => Buffer.from(value).toString('hex');

/**
 * The host's @noble implementation reproduces a feature's vector byte for byte under `label`: both
 * public keys, the shared secret, the kid, every direction's key, every seal, and each seal opens only
 * with its own direction's key. The cases' directions must be `directions`, in order.
 */
export function expectVectorReproduced(
  vector: PhoneDataVector,
  label: string,
  directions: readonly PhoneDataDirection[],
): void {
  expect(vector.label).toBe(label);
  const hostPair = newHostKeyPair(bytes(vector.host_secret));
  const devicePair = newHostKeyPair(bytes(vector.device_secret));
  expect(hex(hostPair.public)).toBe(vector.host_public);
  expect(hex(devicePair.public)).toBe(vector.device_public);
  expect(hex(sharedSecret(hostPair.secret, devicePair.public) ?? new Uint8Array())).toBe(vector.shared);
  expect(keyId(label, devicePair.public, hostPair.public)).toBe(vector.kid);
  const keys = deviceKeys(label, hostPair.secret, hostPair.public, devicePair.public);
  for (const [direction, key] of Object.entries(vector.keys) as [PhoneDataDirection, string][]) {
    expect(hex(directionKey(label, direction, bytes(vector.shared), devicePair.public, hostPair.public))).toBe(key);
    expect(hex(keys?.keys[direction] ?? new Uint8Array())).toBe(key);
  }
  expect(vector.cases.map((c) => c.direction)).toEqual([...directions]);
  for (const c of vector.cases) {
    const key = bytes(vector.keys[c.direction]);
    expect(hex(sealWith(key, bytes(c.nonce), c.aad, new TextEncoder().encode(c.plaintext)))).toBe(c.sealed);
    expect(Buffer.from(openWith(key, bytes(c.nonce), c.aad, bytes(c.sealed)) ?? []).toString('utf8')).toBe(c.plaintext);
    for (const other of Object.keys(vector.keys) as PhoneDataDirection[]) {
      if (other !== c.direction)
        expect(openWith(bytes(vector.keys[other]), bytes(c.nonce), c.aad, bytes(c.sealed))).toBeNull();
    }
  }
}
