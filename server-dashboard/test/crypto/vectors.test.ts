import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { sharedVectorPath, sharedVectorPresent, VECTOR_NAMES, vectorPath } from '../fixtures/vectors.js';

/** `SHA256SUMS` beside the copies: the digests of the shared files they were copied from. */
const pinned = new Map(
  readFileSync(new URL('../fixtures/vectors/SHA256SUMS', import.meta.url), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [digest = '', name = ''] = line.split(/\s+\*?/);
      return [name, digest] as const;
    }),
);

const sha256 = (file: URL) => createHash('sha256').update(readFileSync(file)).digest('hex');

describe('the host test vectors kept in this repository', () => {
  it.each(VECTOR_NAMES)('%s is byte for byte the copy that was taken', (name) => {
    expect(sha256(vectorPath(name))).toBe(pinned.get(name));
  });

  it.each(VECTOR_NAMES)('%s has not drifted from the shared specification (when it is checked out beside)', (name) => {
    // A clone of this repository alone has no shared folder; the pinned digest above stands for it.
    const expected = sharedVectorPresent(name) ? sha256(sharedVectorPath(name)) : pinned.get(name);
    expect(sha256(vectorPath(name))).toBe(expected);
  });
});
