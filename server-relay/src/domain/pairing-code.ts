import { randomBytes } from 'node:crypto';
import { sha256Hex } from './credentials.js';

/** No 0/O/1/I: codes are read off a phone screen and typed into a terminal. */
const ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';

/** 10 random bytes → `XXXXX-XXXXX`. */
export function newPairingCode(random: (size: number) => Buffer = randomBytes): string {
  const chars = [...random(10)].map((byte) => ALPHABET[byte % ALPHABET.length] ?? 'A');
  return `${chars.slice(0, 5).join('')}-${chars.slice(5).join('')}`;
}

/** Codes are stored under sha256 of their normalised form: non-alphanumerics stripped, uppercased. */
export function pairingCodeHash(code: unknown): string | undefined {
  if (typeof code !== 'string') return undefined;
  const normalized = code.replace(/[^A-Za-z0-9]/g, '').toUpperCase();
  return normalized === '' ? undefined : sha256Hex(normalized);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const NIL_UUID = '00000000-0000-0000-0000-000000000000';

/**
 * A dashboard binding: a UUID, canonicalised to lowercase; the nil UUID is rejected.
 * Returns null for "absent" (undefined/null), undefined for invalid.
 */
export function parseDashboardId(value: unknown): string | null | undefined {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string' || !UUID.test(value)) return undefined;
  const canonical = value.toLowerCase();
  return canonical === NIL_UUID ? undefined : canonical;
}
