import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { PHONE_LABEL, phoneBatch } from '@conduit/contracts/dashboard/phone';
import { batchAad, voiceAad } from '../../src/kernel/phone-data/sealing.js';
import { expectVectorReproduced, type PhoneDataVector } from '../support/phone-data-vector-check.js';
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

const vectors = JSON.parse(readFileSync(PHONE_VECTOR_FILE, 'utf8')) as { features: PhoneDataVector[] };

describe('phone vectors (node:crypto) reproduced by the @noble implementation', () => {
  it('regenerating the vectors gives the same file', () => {
    expect(phoneVectorsText()).toBe(readFileSync(PHONE_VECTOR_FILE, 'utf8'));
  });

  it('every key, kid and seal matches, and every seal opens only in its own direction', () => {
    const [vector] = vectors.features;
    if (!vector) throw new Error('no vector');
    expectVectorReproduced(vector, PHONE_LABEL, [...PHONE_VECTOR_DIRECTIONS]);
    const [ingest, voiceIn, voiceOut] = vector.cases;
    expect(ingest?.aad).toBe(batchAad(PHONE_LABEL, vector.device_id, vector.kid, 'batch-0001'));
    expect(voiceIn?.aad).toBe(voiceAad(PHONE_LABEL, 'conduit_calendar', vector.kid, vector.device_id, 'call-7c2d'));
    expect(voiceOut?.aad).toBe(voiceIn?.aad);
    // The vector's batch is one the host accepts: a phone can test its batch shape against it too.
    expect(phoneBatch.safeParse(JSON.parse(ingest?.plaintext ?? 'null')).success).toBe(true);
  });
});
