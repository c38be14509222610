import { createPrivateKey, sign, type KeyObject } from 'node:crypto';

/**
 * APNs provider authentication token: an ES256 JWT `{alg, kid}.{iss, iat}`. Apple refuses tokens
 * older than an hour and throttles ones refreshed more often than every 20 minutes
 * (TooManyProviderTokenUpdates), so one token is reused for 50 minutes.
 */
export const PROVIDER_TOKEN_TTL_MS = 50 * 60 * 1000;

export class ProviderToken {
  private readonly key: KeyObject;
  private cached: { jwt: string; issuedAtMs: number } | undefined;

  constructor(
    keyPem: string,
    private readonly keyId: string,
    private readonly teamId: string,
    private readonly now: () => number = Date.now,
  ) {
    // Parsed here so a bad key fails at boot, not on the first push.
    this.key = createPrivateKey(keyPem);
    if (this.key.asymmetricKeyType !== 'ec' || this.key.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
      throw new Error('APNs key must be a P-256 (ES256) private key.');
    }
  }

  /** The current JWT, re-signed once the cached one is 50 minutes old. */
  current(): string {
    const nowMs = this.now();
    if (this.cached && nowMs - this.cached.issuedAtMs < PROVIDER_TOKEN_TTL_MS && nowMs >= this.cached.issuedAtMs) {
      return this.cached.jwt;
    }
    const header = base64UrlJson({ alg: 'ES256', kid: this.keyId });
    const claims = base64UrlJson({ iss: this.teamId, iat: Math.floor(nowMs / 1000) });
    const signingInput = `${header}.${claims}`;
    // JOSE wants the raw r||s signature (IEEE P1363), not DER.
    const signature = sign('sha256', Buffer.from(signingInput), { key: this.key, dsaEncoding: 'ieee-p1363' });
    const jwt = `${signingInput}.${signature.toString('base64url')}`;
    this.cached = { jwt, issuedAtMs: nowMs };
    return jwt;
  }

  /** Drops the cached token, e.g. after APNs answered 403 ExpiredProviderToken. */
  invalidate(): void {
    this.cached = undefined;
  }
}

function base64UrlJson(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}
