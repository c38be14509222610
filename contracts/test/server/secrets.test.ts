import { describe, expect, it } from 'vitest';
import { bearerMatches, bearerToken, sameSecret } from '../../src/server/secrets.js';

describe('secret checks', () => {
  it('sameSecret: equal strings only, whatever their lengths', () => {
    expect(sameSecret('s3cret-token', 's3cret-token')).toBe(true);
    expect(sameSecret('s3cret-token', 's3cret-tokeN')).toBe(false);
    expect(sameSecret('s3cret', 's3cret-token')).toBe(false);
    expect(sameSecret('', 's3cret-token')).toBe(false);
  });

  it('bearerToken: the token of a Bearer header, the scheme in any case, nothing else', () => {
    expect(bearerToken('Bearer abc.def')).toBe('abc.def');
    expect(bearerToken('bearer abc ')).toBe('abc');
    expect(bearerToken('Basic abc')).toBeNull();
    expect(bearerToken('Bearer')).toBeNull();
    expect(bearerToken('Bearer a b')).toBeNull();
    expect(bearerToken(undefined)).toBeNull();
  });

  it('bearerMatches: the expected token only; an empty or absent header never', () => {
    expect(bearerMatches('Bearer k-0123456789', 'k-0123456789')).toBe(true);
    expect(bearerMatches('Bearer k-012345678', 'k-0123456789')).toBe(false);
    expect(bearerMatches('k-0123456789', 'k-0123456789')).toBe(false);
    expect(bearerMatches('Bearer ', 'k-0123456789')).toBe(false);
    expect(bearerMatches(undefined, 'k-0123456789')).toBe(false);
  });
});
