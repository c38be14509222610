import { E2E_SECRET_BYTES, e2eSecretPattern, kidPattern } from '@conduit/contracts/crypto/e2e';
import { e2eState, isPaired } from '../credentials/credential-file.js';
import { readCredentials, unchanged, updateCredentials } from '../credentials/credential-store.js';
import { decodeBase64Url } from '../crypto/base64url.js';
import { keysFromRecord } from '../crypto/e2e-keys.js';

/**
 * The phone provisions the pairing's E2E root secret (ROUTES.md "End-to-end key provisioning"). The ids
 * it sends must be this profile's pairing, so a key made for one phone can never seal for another.
 */
export type ProvisionOutcome = { ok: true; kid: string } | { ok: false; status: 400 | 409; detail: string };

/** `YYYY-MM-DDTHH:MM:SSZ` */
export function isoSeconds(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function text(value: unknown): string {
  return typeof value === 'string' ? value.trim() : '';
}

export async function provisionE2eKey(home: string, body: unknown, nowMs: number): Promise<ProvisionOutcome> {
  const input =
    typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
  const installationId = text(input.installation_id);
  const gatewayId = text(input.gateway_id);
  if (!installationId || !gatewayId) {
    return { ok: false, status: 400, detail: 'installation_id and gateway_id are required' };
  }
  const kid = typeof input.kid === 'string' ? input.kid : '';
  if (!kidPattern.test(kid)) return { ok: false, status: 400, detail: 'kid must be 32 lowercase hex characters' };
  const secret = typeof input.secret === 'string' ? input.secret : '';
  if (!e2eSecretPattern.test(secret) || decodeBase64Url(secret)?.length !== E2E_SECRET_BYTES) {
    return { ok: false, status: 400, detail: 'secret must be 32 bytes, base64url without padding' };
  }
  return updateCredentials<ProvisionOutcome>(home, (current) => {
    if (!isPaired(current)) {
      return {
        next: unchanged,
        result: { ok: false, status: 409, detail: "This Hermes profile isn't paired with Conduit" },
      };
    }
    if (!current.gateway_id) {
      return {
        next: unchanged,
        result: { ok: false, status: 409, detail: 'Pair this Hermes profile with Conduit again to turn on encryption' },
      };
    }
    if (current.installation_id !== installationId || current.gateway_id !== gatewayId) {
      return {
        next: unchanged,
        result: { ok: false, status: 409, detail: 'This Hermes profile is paired with a different device' },
      };
    }
    return {
      next: {
        ...current,
        e2e: { kid, secret, created_at: isoSeconds(nowMs), installation_id: installationId, gateway_id: gatewayId },
      },
      result: { ok: true, kid },
    };
  });
}

export type E2eStatus =
  | { ok: true; paired: false; crypto: true }
  | { ok: true; paired: true; installation_id: string; gateway_id: string; e2e: { kid: string } | null; crypto: true };

/** What GET /e2e answers: the pairing ids and the key id, never the secret. */
export async function e2eStatus(home: string): Promise<E2eStatus> {
  const file = await readCredentials(home);
  if (!isPaired(file)) return { ok: true, paired: false, crypto: true };
  const state = e2eState(file);
  const usable = state.state === 'on' && keysFromRecord(state.record) !== null;
  return {
    ok: true,
    paired: true,
    installation_id: file.installation_id ?? '',
    gateway_id: file.gateway_id ?? '',
    e2e: usable && state.state === 'on' ? { kid: state.record.kid } : null,
    crypto: true,
  };
}
