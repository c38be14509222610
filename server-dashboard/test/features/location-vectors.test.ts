import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { LOCATION_LABEL, locationBatch } from '@conduit/contracts/dashboard/location';
import { batchAad, voiceAad } from '../../src/kernel/phone-data/sealing.js';
import { expectVectorReproduced, type PhoneDataVector } from '../support/phone-data-vector-check.js';
import { LOCATION_VECTOR_FILE, locationVectorsText } from '../fixtures/vectors/derive-location-vectors.js';

/**
 * location_vector.json (derived with node:crypto by derive-location-vectors.ts) reproduced byte for
 * byte by the host's @noble implementation under the location label: the batch direction and both
 * voice directions, each opening only with its own key.
 */

const vectors = JSON.parse(readFileSync(LOCATION_VECTOR_FILE, 'utf8')) as { features: PhoneDataVector[] };

describe('location vectors (node:crypto) reproduced by the @noble implementation', () => {
  it('regenerating the vectors gives the same file', () => {
    expect(locationVectorsText()).toBe(readFileSync(LOCATION_VECTOR_FILE, 'utf8'));
  });

  it('every key, kid and seal matches, and every seal opens only in its own direction', () => {
    const [vector] = vectors.features;
    if (!vector) throw new Error('no vector');
    expectVectorReproduced(vector, LOCATION_LABEL, [
      'ingest device-to-host',
      'voice device-to-host',
      'voice host-to-device',
      'maps host-to-device',
      'maps device-to-host',
    ]);
    const [ingest, voiceIn, voiceOut] = vector.cases;
    expect(ingest?.aad).toBe(batchAad(LOCATION_LABEL, vector.device_id, vector.kid, 'batch-0001'));
    expect(voiceIn?.aad).toBe(voiceAad(LOCATION_LABEL, 'conduit_location', vector.kid, vector.device_id, 'call-9b1e'));
    expect(voiceOut?.aad).toBe(voiceIn?.aad);
    // The vector's batch is one the host accepts: a phone can test its batch shape against it too.
    expect(locationBatch.safeParse(JSON.parse(ingest?.plaintext ?? 'null')).success).toBe(true);
  });
});
