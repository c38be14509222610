import { inflateRaw } from 'pako';
import type { E2eEnvelope } from '@conduit/contracts/crypto/e2e';
import { decodeBase64Url } from './base64url.js';
import type { E2eKeys } from './e2e-keys.js';
import { pushAad } from './e2e-seal.js';
import { openChaCha20Poly1305 } from './symmetric.js';

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** The phone's clock window for envelopes: older than 24 h or more than 1 h ahead is refused. */
const MAX_AGE_SECONDS = 24 * 3600;
const MAX_SKEW_SECONDS = 3600;

/**
 * The phone's side of a sealed notification (what the Notification Service Extension does): checks the
 * envelope's age, opens it with the push key under the AAD rebuilt from the routing data, inflates it
 * when `z=1`, and returns the inner JSON object. Null for anything that does not verify, in which case
 * the phone keeps the generic alert. Used by tests and the end-to-end suite to check what the relay got.
 */
export function openNotification(
  envelope: E2eEnvelope,
  eventType: string,
  keys: E2eKeys,
  pairing: { installationId: string; gatewayId: string },
  nowSeconds: number,
): Record<string, unknown> | null {
  if (envelope.kid !== keys.kid) return null;
  if (envelope.iat < nowSeconds - MAX_AGE_SECONDS || envelope.iat > nowSeconds + MAX_SKEW_SECONDS) return null;
  const nonce = decodeBase64Url(envelope.n);
  const ct = decodeBase64Url(envelope.ct);
  if (!nonce || nonce.length !== 12 || !ct || ct.length < 16) return null;
  const aad = pushAad({
    kid: envelope.kid,
    installationId: pairing.installationId,
    gatewayId: pairing.gatewayId,
    msg: envelope.msg,
    type: eventType,
    iat: envelope.iat,
    tok: envelope.tok,
    z: envelope.z,
    req: envelope.req,
  });
  const opened = openChaCha20Poly1305(keys.push, nonce, aad, ct);
  if (!opened) return null;
  try {
    const data = envelope.z === 1 ? inflateRaw(opened) : opened;
    const value: unknown = JSON.parse(strictUtf8.decode(data));
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}
