import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * Whether a presented secret equals the expected one, in constant time: both are hashed first, so
 * neither the content nor the length of the expected secret shows in the time the check takes.
 */
export function sameSecret(given: string, expected: string): boolean {
  return timingSafeEqual(createHash('sha256').update(given).digest(), createHash('sha256').update(expected).digest());
}

/** The token of an `Authorization: Bearer <token>` header (the scheme in any case), or null. */
export function bearerToken(header: string | undefined): string | null {
  return /^Bearer\s+(\S+)\s*$/i.exec(header ?? '')?.[1] ?? null;
}

/** Whether the Authorization header carries `expected` as its bearer token (compared in constant time). */
export function bearerMatches(header: string | undefined, expected: string): boolean {
  const token = bearerToken(header);
  return token !== null && sameSecret(token, expected);
}
