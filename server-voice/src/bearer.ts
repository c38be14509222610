import { createHash, timingSafeEqual } from 'node:crypto';

/** Constant-time check of `Authorization: Bearer <key>` (hashes first so lengths never leak). */
export function bearerMatches(header: string | undefined, apiKey: string): boolean {
  const match = /^Bearer\s+(.+)$/i.exec(header ?? '');
  const presented = createHash('sha256')
    .update(match?.[1]?.trim() ?? '')
    .digest();
  const expected = createHash('sha256').update(apiKey).digest();
  return match !== null && timingSafeEqual(presented, expected);
}
