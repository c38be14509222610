import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The optional signed identity a trusted internal proxy attaches to call setup (CONTRACT.md §1). Either all
 * four headers are present or none; the signature binds the timestamp, call id, principal and the exact
 * offer and session bytes, so a proxy cannot be replayed onto another offer.
 */
export const PROXY_HEADERS = {
  principal: 'x-kortexa-internal-principal',
  callId: 'x-kortexa-internal-call-id',
  timestamp: 'x-kortexa-internal-timestamp',
  signature: 'x-kortexa-internal-signature',
} as const;

const CALL_ID = /^rt_[A-Za-z0-9_-]{8,96}$/;
const BASE64URL = /^[A-Za-z0-9_-]+$/;
const SIGNATURE = /^v1=([0-9a-f]{64})$/;
const MAX_PRINCIPAL_BYTES = 256;
const MAX_SKEW_SECONDS = 30;
/** A proxy call id may not be reused within this window. */
export const PROXY_REPLAY_WINDOW_MS = 60_000;
/** The identity of a caller without proxy metadata. */
export const ANONYMOUS_IDENTITY = 'webrtc-client';

const sha256hex = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');

/** The signed payload: `v1\n{ts}\n{call_id}\n{principal_b64}\n{sha256(sdp)}\n{sha256(session)}`. */
export function proxySignaturePayload(input: {
  timestamp: string;
  callId: string;
  principal: string;
  sdp: string;
  sessionJson: string;
}): string {
  return [
    'v1',
    input.timestamp,
    input.callId,
    input.principal,
    sha256hex(input.sdp),
    sha256hex(input.sessionJson),
  ].join('\n');
}

export function signProxyPayload(key: string, payload: string): string {
  return createHmac('sha256', key).update(payload).digest('hex');
}

export type ProxyVerdict =
  | { kind: 'anonymous'; identity: string }
  | { kind: 'verified'; identity: string }
  | { kind: 'invalid' }
  | { kind: 'replayed' };

/** Remembers proxy call ids for the replay window (bounded by time; entries expire as the clock passes). */
export class ProxyReplayGuard {
  private readonly seen = new Map<string, number>();
  constructor(private readonly nowMs: () => number) {}

  /** True when the id was not seen within the window; records it either way. */
  claim(callId: string): boolean {
    const now = this.nowMs();
    for (const [id, at] of this.seen) if (now - at >= PROXY_REPLAY_WINDOW_MS) this.seen.delete(id);
    if (this.seen.has(callId)) return false;
    this.seen.set(callId, now);
    return true;
  }
}

/** Checks the four headers against the offer. `signingKey` null means any proxy metadata is refused. */
export function verifyProxyIdentity(input: {
  headers: Record<string, string | string[] | undefined>;
  signingKey: string | null;
  sdp: string;
  sessionJson: string;
  nowMs: number;
  replayGuard: ProxyReplayGuard;
}): ProxyVerdict {
  const values = Object.values(PROXY_HEADERS).map((name) => input.headers[name]);
  if (values.every((value) => value === undefined)) return { kind: 'anonymous', identity: ANONYMOUS_IDENTITY };
  if (values.some((value) => typeof value !== 'string') || !input.signingKey) return { kind: 'invalid' };
  const [principal, callId, timestamp, signature] = values as [string, string, string, string];
  if (!BASE64URL.test(principal) || principal.length % 4 === 1) return { kind: 'invalid' };
  const principalBytes = Buffer.from(principal, 'base64url');
  if (principalBytes.length === 0 || principalBytes.length > MAX_PRINCIPAL_BYTES) return { kind: 'invalid' };
  // The principal must be UTF-8 text; a lossy decode means it was not.
  if (Buffer.from(principalBytes.toString('utf8'), 'utf8').compare(principalBytes) !== 0) return { kind: 'invalid' };
  if (!CALL_ID.test(callId)) return { kind: 'invalid' };
  if (!/^\d{1,12}$/.test(timestamp)) return { kind: 'invalid' };
  if (Math.abs(input.nowMs / 1000 - Number(timestamp)) > MAX_SKEW_SECONDS) return { kind: 'invalid' };
  const match = SIGNATURE.exec(signature);
  if (!match) return { kind: 'invalid' };
  const expected = Buffer.from(
    signProxyPayload(
      input.signingKey,
      proxySignaturePayload({ timestamp, callId, principal, sdp: input.sdp, sessionJson: input.sessionJson }),
    ),
    'hex',
  );
  if (!timingSafeEqual(expected, Buffer.from(match[1] ?? '', 'hex'))) return { kind: 'invalid' };
  // Only a correctly signed call id is remembered, so garbage cannot fill the replay guard.
  if (!input.replayGuard.claim(callId)) return { kind: 'replayed' };
  return { kind: 'verified', identity: `kortexa-${sha256hex(principalBytes).slice(0, 24)}` };
}
