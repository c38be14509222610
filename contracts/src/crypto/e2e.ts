/**
 * Notification end-to-end encryption, format "e2e-v1" (spec/host/CRYPTO.md §1).
 *
 * The phone creates a 32-byte root secret per pairing and hands it to the host over the dashboard
 * connection; the relay never sees it. Keys are HKDF-SHA256 (salt and info below, 32 bytes),
 * payloads ChaCha20-Poly1305 (IETF, 12-byte nonce, 16-byte tag appended), and every binary value on
 * the wire is unpadded base64url. These labels are part of the protocol the Conduit app speaks:
 * changing one byte breaks every paired phone.
 */
import { z } from 'zod';

export const E2E_VERSION = 1;
export const E2E_SALT = 'conduit-e2e-v1';
export const E2E_INFO = {
  /** gateway → device ChaCha20-Poly1305 key for notification payloads. */
  push: 'conduit-e2e-v1 push gateway-to-device',
  /** device → gateway ChaCha20-Poly1305 key for clarify answers. */
  answer: 'conduit-e2e-v1 answer device-to-gateway',
  /** HMAC-SHA256 key for relay-visible metadata (keyed event ids, thread tokens). */
  meta: 'conduit-e2e-v1 metadata',
} as const;
export const E2E_AAD_TAG = 'conduit-e2e/1';
export const E2E_ANSWER_PREFIX = 'e2e1.';
export const E2E_NONCE_BYTES = 12;
export const E2E_SECRET_BYTES = 32;
/** Longest sealed payload in base64url characters; the relay enforces the same bound (E2E_MAX_CT_CHARS). */
export const E2E_MAX_CT_CHARS = 2600;
/** Longest sealed answer string the relay keeps whole. */
export const E2E_MAX_ANSWER_CHARS = 11_000;
/**
 * Event fields sealed into the inner payload, in this order (the order is the JSON key order, which
 * the known-answer vector pins). `call` follows the seed (plugin 0.37): call requests are sealed like
 * any other content; plugin 0.16 did not seal it.
 */
export const E2E_INNER_FIELDS = [
  'title',
  'body',
  'session_id',
  'profile',
  'gateway',
  'stored_session_id',
  'decision',
  'call',
] as const;

export const kidPattern = /^[0-9a-f]{32}$/;
/** 32 bytes as unpadded base64url. */
export const e2eSecretPattern = /^[A-Za-z0-9_-]{43}$/;
export const threadTokenPattern = /^[0-9a-f]{16}$/;
/** A 12-byte nonce as unpadded base64url. */
export const noncePattern = /^[A-Za-z0-9_-]{16}$/;
export const ciphertextPattern = /^[A-Za-z0-9_-]{22,}$/;
export const requestIdPattern = /^[A-Za-z0-9_-]{4,128}$/;
/** The relay's shape check for a sealed clarify answer (CRYPTO.md §1, API.md §1.1 Respond). */
export const sealedAnswerPattern = /^e2e1\.[0-9a-f]{32}\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{22,10900}$/;

/** What the relay accepts as `e2e` on POST /v1/events (the time window of `iat` is checked against its clock). */
export const e2eEnvelope = z.object({
  v: z.literal(E2E_VERSION),
  kid: z.string().regex(kidPattern),
  /** The relay-visible, keyed event id; must equal the event's `event_id`. */
  msg: z.string().describe('Equals event_id.'),
  /** Unix seconds when sealed; the relay accepts [now−25 h, now+2 h], the phone [now−24 h, now+1 h]. */
  iat: z.number().int().refine(Number.isSafeInteger).describe('UNIX seconds within [now−25 h, now+2 h].'),
  /** Keyed thread token: the phone groups notifications by it without the relay learning the session. */
  tok: z.string().regex(threadTokenPattern),
  /** 1 when the plaintext is raw-deflate compressed, else 0. */
  z: z.union([z.literal(0), z.literal(1)]),
  /** The clarify request id, or '' for every other event. */
  req: z.string().regex(/^([A-Za-z0-9_-]{4,128})?$/),
  n: z.string().regex(noncePattern),
  ct: z.string().regex(ciphertextPattern).max(E2E_MAX_CT_CHARS),
});
export type E2eEnvelope = z.infer<typeof e2eEnvelope>;

/** Names an Object prototype member: never a question id, since answers are kept by qid. */
const RESERVED_QIDS = new Set(['__proto__', 'constructor', 'prototype']);

/** A batch question's id: trimmed, 1–40 of `[A-Za-z0-9_-]`, not a prototype member (API.md §1.1). */
export const questionId = z
  .string()
  .trim()
  .regex(/^[A-Za-z0-9_-]{1,40}$/)
  .refine((qid) => !RESERVED_QIDS.has(qid));

/** Routing data sent beside a sealed clarify card so the relay can park the decision. */
export const e2eClarifyRouting = z.object({
  request_id: z.string().regex(requestIdPattern),
  qids: z.array(questionId).max(8),
  /** false when the card did not fit and was sealed without its decision (the phone can't answer inline). */
  card: z.boolean(),
});
export type E2eClarifyRouting = z.infer<typeof e2eClarifyRouting>;

/** The key record the phone provisions (POST /api/plugins/conduit_push/e2e) as stored by the host. */
export const e2eKeyRecord = z.object({
  kid: z.string().regex(kidPattern),
  secret: z.string().regex(e2eSecretPattern),
  /** `YYYY-MM-DDTHH:MM:SSZ`; the newer record wins when two writers race. */
  created_at: z.string(),
  /**
   * The pairing the key was provisioned for. Not in the reference file format (which binds implicitly by
   * dropping the key on re-pair); we record it so a key can never seal for another phone or gateway.
   */
  installation_id: z.string().optional(),
  gateway_id: z.string().optional(),
});
export type E2eKeyRecord = z.infer<typeof e2eKeyRecord>;
