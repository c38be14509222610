import { createHash } from 'node:crypto';

/**
 * The pure rules of Conference remote tools (CONTRACT.md §4): RPC method names, participant identities,
 * Hermes registry names, the HERMES_LIVEKIT_REMOTE_TOOL_POLICY tiers, the bounded byte-stream reference and
 * its transfer deadline.
 */

const METHOD_PATTERN = /^[a-zA-Z_][a-zA-Z0-9_]*(\.[a-zA-Z_][a-zA-Z0-9_]*)*$/;
const MAX_METHOD_CHARS = 64;
const MAX_IDENTITY_BYTES = 128;
const MAX_REGISTRY_NAME_CHARS = 64;
const utf8 = (text: string): number => Buffer.byteLength(text, 'utf8');

/** An RPC method (= remote tool) name: ASCII identifiers joined by single dots, ≤64 chars, taken as it is. */
export function isValidMethodName(name: string): boolean {
  return name.length <= MAX_METHOD_CHARS && METHOD_PATTERN.test(name);
}

/** A participant identity that may own tools: non-empty, untrimmed-clean, no control/format/surrogate chars. */
export function isValidIdentity(identity: string): boolean {
  if (identity.length === 0 || utf8(identity) > MAX_IDENTITY_BYTES) return false;
  if (/^\s|\s$/u.test(identity)) return false;
  if (/[\p{Cc}\p{Cf}]/u.test(identity)) return false;
  // Lone surrogates (Cs): a well-formed string has none.
  return !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(identity);
}

/** `lk_<16 hex of sha256(len16BE(identity) ‖ identity ‖ name)>_<name with dots as underscores>`, ≤64 chars. */
export function registryName(identity: string, method: string): string {
  const id = Buffer.from(identity, 'utf8');
  const length = Buffer.alloc(2);
  length.writeUInt16BE(id.length);
  const digest = createHash('sha256')
    .update(Buffer.concat([length, id, Buffer.from(method, 'ascii')]))
    .digest('hex')
    .slice(0, 16);
  return `lk_${digest}_${method.replace(/\./g, '_')}`.slice(0, MAX_REGISTRY_NAME_CHARS);
}

// ------------------------------------------------------------------------------------------ policy

export type PolicyReason = 'not-allowlisted' | 'tier1-allowed' | 'tier3-denied' | 'consent-valid' | 'consent-expired';

export interface PolicyDecision {
  allowed: boolean;
  tier: 0 | 1 | 2 | 3;
  reason: PolicyReason;
}

interface PolicyEntry {
  tier: 1 | 2 | 3;
  consentExpiresAt: number | null;
}

/** The loaded policy; an absent or invalid one denies everything (`invalid` says why, for one log line). */
export interface RemoteToolPolicy {
  readonly entries: ReadonlyMap<string, PolicyEntry>;
  readonly invalid: string | null;
  decide(identity: string, tool: string, nowSeconds: number): PolicyDecision;
}

const MAX_POLICY_BYTES = 16 * 1024;
const MAX_POLICY_ENTRIES = 64;
const ENTRY_KEYS = new Set(['participant_identity', 'tool_name', 'tier', 'consent_expires_at']);

const entryKey = (identity: string, tool: string): string => JSON.stringify([identity, tool]);

/** True when some JSON object in `text` repeats a key (JSON.parse would silently keep the last). */
export function hasDuplicateKeys(text: string): boolean {
  const stack: (Set<string> | null)[] = [];
  let i = 0;
  let expectKey = false;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      const top = stack.at(-1);
      if (expectKey && top) {
        const key = JSON.parse(text.slice(i, j + 1)) as string;
        if (top.has(key)) return true;
        top.add(key);
      }
      expectKey = false;
      i = j + 1;
      continue;
    }
    if (c === '{') {
      stack.push(new Set());
      expectKey = true;
    } else if (c === '[') {
      stack.push(null);
    } else if (c === '}' || c === ']') {
      stack.pop();
    } else if (c === ',') {
      expectKey = stack.at(-1) instanceof Set;
    }
    i += 1;
  }
  return false;
}

function parseEntries(text: string): Map<string, PolicyEntry> {
  if (utf8(text) > MAX_POLICY_BYTES) throw new Error('larger than 16 KiB');
  const value: unknown = JSON.parse(text);
  if (hasDuplicateKeys(text)) throw new Error('duplicate JSON keys');
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error('not an object');
  const keys = Object.keys(value);
  if (keys.length !== 1 || keys[0] !== 'tools') throw new Error('the only key must be "tools"');
  const tools = (value as { tools: unknown }).tools;
  if (!Array.isArray(tools) || tools.length > MAX_POLICY_ENTRIES) throw new Error('tools must be an array of ≤64');
  const entries = new Map<string, PolicyEntry>();
  for (const raw of tools) {
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error('entries must be objects');
    const entry = raw as Record<string, unknown>;
    if (Object.keys(entry).some((key) => !ENTRY_KEYS.has(key))) throw new Error('unknown entry key');
    const identity = entry.participant_identity;
    const tool = entry.tool_name;
    const tier = entry.tier;
    if (typeof identity !== 'string' || !isValidIdentity(identity)) throw new Error('invalid participant_identity');
    if (typeof tool !== 'string' || !isValidMethodName(tool)) throw new Error('invalid tool_name');
    if (tier !== 1 && tier !== 2 && tier !== 3) throw new Error('tier must be 1, 2 or 3');
    const expires = entry.consent_expires_at;
    let consentExpiresAt: number | null = null;
    if (tier === 2) {
      if (typeof expires !== 'number' || !Number.isFinite(expires) || expires <= 0)
        throw new Error('tier 2 needs a positive consent_expires_at');
      consentExpiresAt = expires;
    } else if (expires !== undefined) {
      throw new Error('only tier 2 has consent_expires_at');
    }
    const key = entryKey(identity, tool);
    if (entries.has(key)) throw new Error('duplicate participant/tool entry');
    entries.set(key, { tier, consentExpiresAt });
  }
  return entries;
}

/** Loads HERMES_LIVEKIT_REMOTE_TOOL_POLICY once. Absent or invalid → every remote tool is denied. */
export function loadRemoteToolPolicy(text: string | null): RemoteToolPolicy {
  let entries = new Map<string, PolicyEntry>();
  let invalid: string | null = null;
  if (text !== null && text.trim() !== '') {
    try {
      entries = parseEntries(text);
    } catch (error) {
      invalid = error instanceof Error ? error.message : 'invalid';
      entries = new Map();
    }
  }
  return {
    entries,
    invalid,
    decide(identity, tool, nowSeconds) {
      const entry = entries.get(entryKey(identity, tool));
      if (!entry) return { allowed: false, tier: 0, reason: 'not-allowlisted' };
      if (entry.tier === 1) return { allowed: true, tier: 1, reason: 'tier1-allowed' };
      if (entry.tier === 3) return { allowed: false, tier: 3, reason: 'tier3-denied' };
      // Equality denies, and so does a clock that is not a finite number.
      const valid = Number.isFinite(nowSeconds) && nowSeconds < (entry.consentExpiresAt ?? 0);
      return { allowed: valid, tier: 2, reason: valid ? 'consent-valid' : 'consent-expired' };
    },
  };
}

// ------------------------------------------------------------------------------------------ byte streams

/** The largest tool result a byte stream may carry. */
export const MAX_RESULT_BYTES = 12 * 1024 * 1024;
const MAX_REFERENCE_BYTES = 4096;
const MAX_SUMMARY_CHARS = 1024;
const REFERENCE_KEYS = [
  'type',
  'version',
  'owner_identity',
  'stream_id',
  'topic',
  'mime_type',
  'expected_size',
  'text_summary',
] as const;
const IMAGE_TYPES = new Set(['image/jpeg', 'image/png', 'image/webp', 'image/gif']);
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const MIME_PATTERN = new RegExp(`^${TOKEN}/${TOKEN}$`);

export interface ByteStreamReference {
  ownerIdentity: string;
  streamId: string;
  topic: string;
  mimeType: string;
  expectedSize: number;
  textSummary: string;
}

export type ReferenceCheck =
  | { ok: true; reference: ByteStreamReference }
  | { ok: false; code: 'invalid_reference' | 'invalid_owner' | 'unsupported_image_type' };

/** True when an RPC result is meant as a byte-stream reference (then it must be a valid one). */
export function looksLikeReference(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    (value as Record<string, unknown>).type === 'livekit-byte-stream'
  );
}

/** Validates a byte-stream reference exactly: no extra, missing or duplicate keys, ≤4096 bytes. */
export function checkReference(text: string, value: Record<string, unknown>, owner: string): ReferenceCheck {
  const bad = { ok: false as const, code: 'invalid_reference' as const };
  if (utf8(text) > MAX_REFERENCE_BYTES || hasDuplicateKeys(text)) return bad;
  const keys = Object.keys(value);
  if (keys.length !== REFERENCE_KEYS.length || !REFERENCE_KEYS.every((key) => keys.includes(key))) return bad;
  const { version, owner_identity, stream_id, topic, mime_type, expected_size, text_summary } = value;
  if (version !== 1) return bad;
  if (typeof owner_identity !== 'string' || typeof stream_id !== 'string' || typeof topic !== 'string') return bad;
  if (!/^[0-9a-f]{32}$/.test(stream_id) || topic !== `hermes-tool-result/${stream_id}`) return bad;
  if (typeof mime_type !== 'string' || !MIME_PATTERN.test(mime_type)) return bad;
  if (typeof expected_size !== 'number' || !Number.isInteger(expected_size)) return bad;
  if (expected_size < 1 || expected_size > MAX_RESULT_BYTES) return bad;
  if (typeof text_summary !== 'string' || text_summary.length < 1 || text_summary.length > MAX_SUMMARY_CHARS)
    return bad;
  // eslint-disable-next-line no-control-regex
  if (text_summary.trim() === '' || /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(text_summary)) return bad;
  if (owner_identity !== owner) return { ok: false, code: 'invalid_owner' };
  if (mime_type.toLowerCase().startsWith('image/') && !IMAGE_TYPES.has(mime_type.toLowerCase()))
    return { ok: false, code: 'unsupported_image_type' };
  return {
    ok: true,
    reference: {
      ownerIdentity: owner_identity,
      streamId: stream_id,
      topic,
      mimeType: mime_type,
      expectedSize: expected_size,
      textSummary: text_summary,
    },
  };
}

/** Seconds the stream-ready + transfer may take: min(120, max(configured, 15 + size / 256 KiB)). */
export function transferTimeoutSeconds(configuredSeconds: number, expectedSize: number): number {
  return Math.min(120, Math.max(configuredSeconds, 15 + expectedSize / 262_144));
}
