/**
 * The path an access-log line shows: the request path without its query, with every segment that
 * could carry a secret replaced by `:redacted`. Routes put some in the path (a Live Activity's push
 * token on DELETE), and a client can put anything in a path the relay does not know (a credential, a
 * pairing code, a device token), which is logged all the same as a 404. Ids the relay hands out
 * (installation UUIDs, 22-character ring and grant ids) stay readable.
 */
export function loggablePath(url: string): string {
  // Most requests go to a handful of paths (`/v1/events`): a path already found to hold nothing to
  // redact is not split and tested again. Only those are kept, so the set never holds a secret.
  if (PLAIN_PATHS.has(url)) return url;
  const path = url.split('?')[0] || '/';
  const loggable = path
    .split('/')
    .map((segment) => (looksSecret(decoded(segment)) ? ':redacted' : segment))
    .join('/');
  if (loggable === url && url.length <= PLAIN_PATH_MAX_CHARS) {
    if (PLAIN_PATHS.size >= PLAIN_PATHS_KEPT) PLAIN_PATHS.clear();
    PLAIN_PATHS.add(url);
  }
  return loggable;
}

/** Paths (without a query) whose loggable form is themselves; bounded, emptied when full. */
const PLAIN_PATHS = new Set<string>();
const PLAIN_PATHS_KEPT = 1_024;
const PLAIN_PATH_MAX_CHARS = 128;

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
