import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { LOCATION_LABEL, mapsAnswerPlaintext, mapsLookupPlaintext } from '@conduit/contracts/dashboard/location';
import {
  deviceKeys,
  mapsAad,
  newHostKeyPair,
  openWith,
  sealWith,
  type PhoneDataDirection,
} from '../../src/kernel/phone-data/sealing.js';
import { LOCATION_VECTOR_FILE } from '../fixtures/vectors/derive-location-vectors.js';

/**
 * The maps directions of location_vector.json (derived with node:crypto): the host's @noble code derives
 * the same `maps host-to-device` / `maps device-to-host` keys and associated data, seals the lookup and
 * opens the answer byte for byte, and each opens only with its own direction, lookup, device and key.
 */

interface Vector {
  host_secret: string;
  device_secret: string;
  kid: string;
  device_id: string;
  keys: Record<string, string>;
  cases: { direction: string; aad: string; nonce: string; plaintext: string; sealed: string }[];
}

const bytes = (hex: string) => new Uint8Array(Buffer.from(hex, 'hex'));
const hex = (value: Uint8Array) => Buffer.from(value).toString('hex');
const utf8 = new TextEncoder();
const [vector] = (JSON.parse(readFileSync(LOCATION_VECTOR_FILE, 'utf8')) as { features: Vector[] }).features;

describe('maps lookup vectors', () => {
  if (!vector) throw new Error('no vector');
  const host = newHostKeyPair(bytes(vector.host_secret));
  const device = newHostKeyPair(bytes(vector.device_secret));
  const keys = deviceKeys(LOCATION_LABEL, host.secret, host.public, device.public);
  const lookupCase = vector.cases.find((c) => c.direction === 'maps host-to-device');
  const answerCase = vector.cases.find((c) => c.direction === 'maps device-to-host');

  it('derives both maps keys and binds the lookup id, kid and device in the associated data', () => {
    if (!keys || !lookupCase || !answerCase) throw new Error('missing keys or cases');
    for (const direction of ['maps host-to-device', 'maps device-to-host'] as PhoneDataDirection[]) {
      expect(hex(keys.keys[direction])).toBe(vector.keys[direction]);
    }
    expect(keys.keys['maps host-to-device']).not.toEqual(keys.keys['voice host-to-device']);
    const lookup = mapsLookupPlaintext.parse(JSON.parse(lookupCase.plaintext));
    expect(lookupCase.aad).toBe(mapsAad(LOCATION_LABEL, vector.kid, vector.device_id, lookup.lookup_id));
    expect(answerCase.aad).toBe(lookupCase.aad);
    expect(mapsAnswerPlaintext.safeParse(JSON.parse(answerCase.plaintext)).success).toBe(true);
  });

  it('seals the lookup and opens the answer as node:crypto did, and nothing else opens them', () => {
    if (!keys || !lookupCase || !answerCase) throw new Error('missing keys or cases');
    const toDevice = keys.keys['maps host-to-device'];
    const toHost = keys.keys['maps device-to-host'];
    expect(hex(sealWith(toDevice, bytes(lookupCase.nonce), lookupCase.aad, utf8.encode(lookupCase.plaintext)))).toBe(
      lookupCase.sealed,
    );
    const opened = openWith(toHost, bytes(answerCase.nonce), answerCase.aad, bytes(answerCase.sealed));
    expect(Buffer.from(opened ?? []).toString('utf8')).toBe(answerCase.plaintext);
    // The wrong direction, another lookup, another device or another key: nothing opens.
    expect(openWith(toDevice, bytes(answerCase.nonce), answerCase.aad, bytes(answerCase.sealed))).toBeNull();
    const lookupId = mapsLookupPlaintext.parse(JSON.parse(lookupCase.plaintext)).lookup_id;
    for (const aad of [
      mapsAad(LOCATION_LABEL, vector.kid, vector.device_id, `${lookupId}x`),
      mapsAad(LOCATION_LABEL, vector.kid, 'another-device', lookupId),
      mapsAad(LOCATION_LABEL, 'f'.repeat(32), vector.device_id, lookupId),
    ]) {
      expect(openWith(toHost, bytes(answerCase.nonce), aad, bytes(answerCase.sealed))).toBeNull();
    }
  });
});
