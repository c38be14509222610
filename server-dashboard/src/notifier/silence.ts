/**
 * When a finished turn sends nothing. Two rules, on purpose different:
 * - any turn: the reply is exactly "[Silent]" (case and surrounding whitespace ignored);
 * - a cron run additionally follows Hermes' own delivery rule, so the phone stays quiet exactly
 *   when Hermes does not deliver the run: a marker as the whole reply, on its own first or last
 *   line, or opening the reply. A marker in the middle of a sentence is content.
 */

export function isSilentReply(reply: string): boolean {
  return reply.split(/\s+/).filter(Boolean).join(' ').toLowerCase() === '[silent]';
}

// The bracketed marker is matched case-insensitively; the bare words only in capitals, so an
// ordinary reply that opens with "Silent" or "No reply" is not swallowed.
const BRACKETED = /^\[silent\]/i;
const BARE = /^(SILENT|NO_REPLY)(?![A-Za-z0-9_])/;

function isMarker(text: string): boolean {
  const trimmed = text.trim();
  return /^\[silent\]$/i.test(trimmed) || trimmed === 'SILENT' || trimmed === 'NO_REPLY';
}

export function isCronSilent(reply: string): boolean {
  const trimmed = reply.trim();
  if (trimmed === '') return false;
  if (isMarker(trimmed)) return true;
  if (BRACKETED.test(trimmed) || BARE.test(trimmed)) return true;
  const lines = trimmed.split(/\r?\n/).filter((line) => line.trim() !== '');
  const first = lines[0];
  const last = lines[lines.length - 1];
  return (first !== undefined && isMarker(first)) || (last !== undefined && isMarker(last));
}
