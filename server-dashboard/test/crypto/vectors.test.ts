import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { readVector, sharedVectorPath, sharedVectorPresent, VECTOR_NAMES } from '../fixtures/vectors.js';

describe('the host test vectors kept in this repository', () => {
  it.each(VECTOR_NAMES)('%s is readable from the repository alone', (name) => {
    expect(readVector(name)).toEqual(expect.any(Object));
  });

  // Beside a checkout of the shared specification, the copies must not drift from it.
  it.runIf(VECTOR_NAMES.every(sharedVectorPresent)).each(VECTOR_NAMES)("%s holds the shared copy's data", (name) => {
    expect(readVector(name)).toEqual(JSON.parse(readFileSync(sharedVectorPath(name), 'utf8')));
  });
});
