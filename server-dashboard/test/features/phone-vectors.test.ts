import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { PHONE_LABEL, phoneBatch } from '@conduit/contracts/dashboard/phone';
import {
  batchAad,
  deviceKeys,
  directionKey,
  keyId,
  newHostKeyPair,
  openWith,
  sealWith,
  sharedSecret,
  voiceAad,
  type PhoneDataDirection,
} from '../../src/features/phone-data/sealing.js';
import {
  PHONE_VECTOR_DIRECTIONS,
  PHONE_VECTOR_FILE,
  phoneVectorsText,
} from '../fixtures/vectors/derive-phone-vectors.js';

/**
 * phone_vector.json (derived with node:crypto by derive-phone-vectors.ts) reproduced byte for byte by
 * the host's @noble implementation under the phone label: the batch direction and both voice
 * directions, each opening only with its own key.
 */

interface Vector {
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
const vectors = JSON.parse(readFileSync(PHONE_VECTOR_FILE, 'utf8')) as { features: Vector[] };

describe('phone vectors (node:crypto) reproduced by the @noble implementation', () => {
  it('regenerating the vectors gives the same file', () => {
    expect(phoneVectorsText()).toBe(readFileSync(PHONE_VECTOR_FILE, 'utf8'));
  });

  it('every key, kid and seal matches, and every seal opens only in its own direction', () => {
    const [vector] = vectors.features;
    if (!vector) throw new Error('no vector');
    expect(vector.label).toBe(PHONE_LABEL);
    const hostPair = newHostKeyPair(bytes(vector.host_secret));
    const devicePair = newHostKeyPair(bytes(vector.device_secret));
    expect(hex(hostPair.public)).toBe(vector.host_public);
    expect(hex(devicePair.public)).toBe(vector.device_public);
    expect(hex(sharedSecret(hostPair.secret, devicePair.public) ?? new Uint8Array())).toBe(vector.shared);
    expect(keyId(PHONE_LABEL, devicePair.public, hostPair.public)).toBe(vector.kid);
    const keys = deviceKeys(PHONE_LABEL, hostPair.secret, hostPair.public, devicePair.public);
    expect(Object.keys(vector.keys)).toEqual([...PHONE_VECTOR_DIRECTIONS]);
    for (const [direction, key] of Object.entries(vector.keys) as [PhoneDataDirection, string][]) {
      expect(hex(directionKey(PHONE_LABEL, direction, bytes(vector.shared), devicePair.public, hostPair.public))).toBe(
        key,
      );
      expect(hex(keys?.keys[direction] ?? new Uint8Array())).toBe(key);
    }
    expect(vector.cases.map((c) => c.direction)).toEqual([...PHONE_VECTOR_DIRECTIONS]);
    for (const c of vector.cases) {
      const key = bytes(vector.keys[c.direction]);
      expect(hex(sealWith(key, bytes(c.nonce), c.aad, new TextEncoder().encode(c.plaintext)))).toBe(c.sealed);
      expect(Buffer.from(openWith(key, bytes(c.nonce), c.aad, bytes(c.sealed)) ?? []).toString('utf8')).toBe(
        c.plaintext,
      );
      for (const other of Object.keys(vector.keys) as PhoneDataDirection[]) {
        if (other !== c.direction)
          expect(openWith(bytes(vector.keys[other]), bytes(c.nonce), c.aad, bytes(c.sealed))).toBeNull();
      }
    }
    const [ingest, voiceIn, voiceOut] = vector.cases;
    expect(ingest?.aad).toBe(batchAad(PHONE_LABEL, vector.device_id, vector.kid, 'batch-0001'));
    expect(voiceIn?.aad).toBe(voiceAad(PHONE_LABEL, 'conduit_calendar', vector.kid, vector.device_id, 'call-7c2d'));
    expect(voiceOut?.aad).toBe(voiceIn?.aad);
    // The vector's batch is one the host accepts: a phone can test its batch shape against it too.
    expect(phoneBatch.safeParse(JSON.parse(ingest?.plaintext ?? 'null')).success).toBe(true);
  });
});
