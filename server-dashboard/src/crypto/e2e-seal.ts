import { deflateRaw } from 'pako';
import {
  E2E_AAD_TAG,
  E2E_INNER_FIELDS,
  E2E_MAX_CT_CHARS,
  E2E_NONCE_BYTES,
  E2E_VERSION,
  type E2eClarifyRouting,
  type E2eEnvelope,
} from '@conduit/contracts/crypto/e2e';
import { encodeBase64Url } from './base64url.js';
import { keyedEventId, threadToken, type E2eKeys } from './e2e-keys.js';
import { sealChaCha20Poly1305 } from './symmetric.js';
import type { HostEvent, SealedEvent } from '@conduit/contracts/relay/events';

const utf8 = new TextEncoder();

/** The event cannot be sealed within the relay's size bound; the caller sends it content-free. */
export class E2eSealError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'E2eSealError';
  }
}

export interface SealContext {
  keys: E2eKeys;
  installationId: string;
  gatewayId: string;
  /** Unix seconds (integer) stamped as `iat`. */
  nowSeconds: number;
  /** 12 fresh random bytes per call; injected so tests can pin a nonce. Never reuse one. */
  nonce: () => Uint8Array;
}

/** The 11-line push AAD (CRYPTO.md §1): binds the ciphertext to this pairing and its routing data. */
export function pushAad(fields: {
  kid: string;
  installationId: string;
  gatewayId: string;
  msg: string;
  type: string;
  iat: number;
  tok: string;
  z: 0 | 1;
  req: string;
}): string {
  return [
    E2E_AAD_TAG,
    'push',
    `kid=${fields.kid}`,
    `inst=${fields.installationId}`,
    `gw=${fields.gatewayId}`,
    `msg=${fields.msg}`,
    `type=${fields.type}`,
    `iat=${fields.iat}`,
    `tok=${fields.tok}`,
    `z=${fields.z}`,
    `req=${fields.req}`,
  ].join('\n');
}

type Inner = Partial<Record<(typeof E2E_INNER_FIELDS)[number], unknown>>;

/** The sealed fields in their fixed order, leaving out absent and empty ones. */
export function innerPayload(event: HostEvent): Inner {
  const inner: Inner = {};
  for (const field of E2E_INNER_FIELDS) {
    const value = event[field];
    if (value !== undefined && value !== null && value !== '') inner[field] = value;
  }
  return inner;
}

/** The event's version fields, which always travel in the clear (the relay records the plugin version). */
export function versionFields(event: HostEvent): Pick<HostEvent, 'plugin_version' | 'plugin_capabilities'> {
  const out: Pick<HostEvent, 'plugin_version' | 'plugin_capabilities'> = {};
  if (event.plugin_version !== undefined) out.plugin_version = event.plugin_version;
  if (event.plugin_capabilities !== undefined) out.plugin_capabilities = event.plugin_capabilities;
  return out;
}

/** Raw deflate (no zlib header; Apple reads it as COMPRESSION_ZLIB) when strictly shorter. */
export function compressIfSmaller(data: Uint8Array): { data: Uint8Array; z: 0 | 1 } {
  // pako, not node:zlib: Node bundles Chromium's zlib, whose output differs from stock zlib, and the
  // known-answer vector (and the reference) use stock zlib at level 9.
  const compressed = deflateRaw(data, { level: 9 });
  return compressed.length < data.length ? { data: compressed, z: 1 } : { data, z: 0 };
}

/**
 * Seals an event for the phone (CRYPTO.md §1 `seal_event`). When the sealed payload would exceed the
 * relay's 2600-character bound it retries without the decision card (so the clarify card becomes
 * `card:false`), then with only the ids the phone needs to open the chat, then gives up (E2eSealError).
 */
export function sealEvent(event: HostEvent, context: SealContext): SealedEvent {
  const { keys } = context;
  const msg = keyedEventId(keys.meta, event.event_id);
  const tok = threadToken(keys.meta, event.session_id || msg);
  // A decision parked on the relay (a clarify, or an approval that names a request id) binds its id.
  const clarify = event.decision?.request_id ? event.decision : undefined;
  const req = clarify?.request_id ?? '';
  const iat = Math.floor(context.nowSeconds);

  const full = innerPayload(event);
  const withoutCard: Inner = { ...full };
  delete withoutCard.decision;
  const idsOnly: Inner = {};
  for (const field of ['session_id', 'profile', 'stored_session_id'] as const) {
    if (full[field] !== undefined) idsOnly[field] = full[field];
  }
  const attempts: Array<{ inner: Inner; card: boolean }> = [
    { inner: full, card: true },
    { inner: withoutCard, card: false },
    { inner: idsOnly, card: false },
  ];

  for (const attempt of attempts) {
    const { data, z } = compressIfSmaller(utf8.encode(JSON.stringify(attempt.inner)));
    const aad = pushAad({
      kid: keys.kid,
      installationId: context.installationId,
      gatewayId: context.gatewayId,
      msg,
      type: event.type,
      iat,
      tok,
      z,
      req,
    });
    const nonce = context.nonce();
    if (nonce.length !== E2E_NONCE_BYTES) throw new RangeError('the E2E nonce must be 12 bytes');
    const ct = encodeBase64Url(sealChaCha20Poly1305(keys.push, nonce, aad, data));
    if (ct.length > E2E_MAX_CT_CHARS) continue;
    const envelope: E2eEnvelope = {
      v: E2E_VERSION,
      kid: keys.kid,
      msg,
      iat,
      tok,
      z,
      req,
      n: encodeBase64Url(nonce),
      ct,
    };
    const sealed: SealedEvent = { event_id: msg, type: event.type, ...versionFields(event), e2e: envelope };
    if (clarify?.request_id) {
      const questions = clarify.kind === 'clarify' ? clarify.questions : undefined;
      sealed.clarify = clarifyRouting(clarify.request_id, questions, attempt.card);
    }
    return sealed;
  }
  throw new E2eSealError('the event does not fit the relay bound even without its content');
}

function clarifyRouting(
  requestId: string,
  questions: ReadonlyArray<{ qid?: string }> | undefined,
  card: boolean,
): E2eClarifyRouting {
  const qids = (questions ?? [])
    .map((q) => q.qid)
    .filter((qid): qid is string => typeof qid === 'string' && qid !== '');
  return { request_id: requestId, qids, card };
}
