/**
 * The path an access-log line shows: the request path without its query, with every segment that
 * could carry a secret replaced by `:redacted`. Routes put some in the path (a Live Activity's push
 * token on DELETE), and a client can put anything in a path the relay does not know (a credential, a
 * pairing code, a device token), which is logged all the same as a 404. Ids the relay hands out
 * (installation UUIDs, 22-character ring and grant ids) stay readable.
 */
export function loggablePath(url: string): string {
  const path = url.split('?')[0] || '/';
  return path
    .split('/')
    .map((segment) => (looksSecret(decoded(segment)) ? ':redacted' : segment))
    .join('/');
}

/** Secrets are 43 characters, APNs tokens 64–200 hex; nothing the relay hands out is this long. */
const LONG_SEGMENT_CHARS = 40;
/** APNs tokens and key hashes: long hex, even below the length rule (a truncated token is still one). */
const HEX_RUN = /[0-9a-f]{32,}/i;
/** A pairing code as typed: ten characters of the code alphabet, optionally split 5-5. */
const PAIRING_CODE = /^[ABCDEFGHJKLMNPQRSTUVWXYZ23456789]{5}[^A-Za-z0-9]?[ABCDEFGHJKLMNPQRSTUVWXYZ23456789]{5}$/i;

function looksSecret(segment: string): boolean {
  return segment.length >= LONG_SEGMENT_CHARS || HEX_RUN.test(segment) || PAIRING_CODE.test(segment);
}

function decoded(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
