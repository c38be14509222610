/**
 * Pairing codes as the relay mints them: 10 characters of an alphabet without look-alikes (no I, O, 0, 1),
 * shown as `XXXXX-XXXXX`. The relay normalises by dropping non-alphanumerics and upper-casing; we check
 * the same shape first so a typo gets a clear 400 instead of a round trip.
 */
const ALPHABET = /^[ABCDEFGHJKLMNPQRSTUVWXYZ23456789]{10}$/;

/** The canonical `XXXXX-XXXXX` form, or null when the text cannot be a pairing code. */
export function normalisePairingCode(text: string): string | null {
  if (text.length > 64) return null;
  const compact = text.replace(/[\s-]/g, '').toUpperCase();
  if (!ALPHABET.test(compact)) return null;
  return `${compact.slice(0, 5)}-${compact.slice(5)}`;
}
