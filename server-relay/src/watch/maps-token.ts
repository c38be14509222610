import { createPrivateKey, sign, type KeyObject } from 'node:crypto';
import type { MapsKeySettings } from './deps.js';

/** Renew the shared token this long before Apple's expiry, so a host never gets one about to lapse. */
export const MAPS_RENEW_BEFORE_MS = 60_000;
/** Lifetime of the signed JWT we exchange (Apple only needs it for the exchange). */
const AUTH_JWT_TTL_S = 10 * 60;
const EXCHANGE_TIMEOUT_MS = 10_000;

export interface MapsAccessToken {
  accessToken: string;
  expiresAtMs: number;
}

export class MapsUnavailableError extends Error {}

/**
 * The relay's one Apple Maps Server API access token, shared by every host so it identifies none.
 * Minted by exchanging an ES256 JWT `{alg, kid, typ}.{iss, iat, exp}` signed with the Maps key at
 * Apple's token endpoint (`GET /v1/token`, answer `{accessToken, expiresInSeconds}`); cached until a
 * minute before it expires; concurrent requests share one exchange.
 */
export class MapsTokenSource {
  private readonly key: KeyObject;
  private cached: MapsAccessToken | undefined;
  private inflight: Promise<MapsAccessToken> | undefined;

  constructor(
    private readonly settings: MapsKeySettings,
    private readonly now: () => number,
    private readonly fetchImpl: typeof fetch = fetch,
  ) {
    this.key = createPrivateKey(settings.keyPem);
  }

  async token(): Promise<MapsAccessToken> {
    if (this.cached && this.now() < this.cached.expiresAtMs - MAPS_RENEW_BEFORE_MS) return this.cached;
    this.inflight ??= this.exchange().finally(() => {
      this.inflight = undefined;
    });
    return this.inflight;
  }

  private async exchange(): Promise<MapsAccessToken> {
    const issuedAtS = Math.floor(this.now() / 1000);
    const header = Buffer.from(JSON.stringify({ alg: 'ES256', kid: this.settings.keyId, typ: 'JWT' })).toString(
      'base64url',
    );
    const claims = Buffer.from(
      JSON.stringify({ iss: this.settings.teamId, iat: issuedAtS, exp: issuedAtS + AUTH_JWT_TTL_S }),
    ).toString('base64url');
    const signature = sign('sha256', Buffer.from(`${header}.${claims}`), { key: this.key, dsaEncoding: 'ieee-p1363' });
    let response: Response;
    try {
      response = await this.fetchImpl(this.settings.tokenUrl, {
        headers: { authorization: `Bearer ${header}.${claims}.${signature.toString('base64url')}` },
        signal: AbortSignal.timeout(EXCHANGE_TIMEOUT_MS),
      });
    } catch {
      throw new MapsUnavailableError('Apple Maps token endpoint unreachable');
    }
    if (!response.ok) throw new MapsUnavailableError(`Apple Maps token endpoint answered ${response.status}`);
    const body: unknown = await response.json().catch(() => undefined);
    const accessToken = (body as { accessToken?: unknown } | undefined)?.accessToken;
    const expiresIn = (body as { expiresInSeconds?: unknown } | undefined)?.expiresInSeconds;
    if (typeof accessToken !== 'string' || !accessToken || typeof expiresIn !== 'number' || !(expiresIn > 0)) {
      throw new MapsUnavailableError('Apple Maps token endpoint answered an unexpected body');
    }
    this.cached = { accessToken, expiresAtMs: this.now() + expiresIn * 1000 };
    return this.cached;
  }
}
