import { z } from 'zod';
import { createRelayClient } from '@conduit/sdk/relay';
import { setBounded } from '../../bounded-map.js';
import type { Clock } from '../../clock.js';
import { isCredentialSafeRelayUrl } from '../../kernel/loopback.js';
import { MAPS_LIMITS } from './maps-limits.js';

/** A paired profile's relay and its gateway credential (`conduit-push.json`). */
export interface MapsRelayTarget {
  relayUrl: string;
  /** Only ever placed in the Authorization header. */
  credential: string;
}

/** What asking the relay for a Maps token came to. The token itself is never logged or persisted. */
export type MapsTokenAnswer =
  | { kind: 'token'; accessToken: string }
  /** The relay has no Maps key (404): not asked again until `untilMs`. */
  | { kind: 'unavailable'; untilMs: number }
  | { kind: 'refused'; reason: MapsTokenRefusal };

export type MapsTokenRefusal =
  | 'insecure_relay_url'
  | 'unauthorized'
  | 'rate_limited'
  | 'maps_token_limit'
  | 'maps_unreachable'
  | 'relay_unreachable'
  | 'relay_error';

/** POST /v1/maps/token's answer (contracts/src/relay/maps.ts), checked again: the relay is another process. */
const tokenBody = z.object({
  access_token: z.string().min(1).max(8192),
  expires_at: z.string(),
  expires_in: z.number().int().nonnegative(),
});
const errorBody = z.looseObject({ error: z.string() });

/** Relays remembered at once (a host pairs its profiles with one relay, rarely a few). */
const RELAYS_REMEMBERED = 16;

interface CachedToken {
  accessToken: string;
  /** On this host's clock: the relay's `expires_in` from when it answered, less the renewal margin. */
  useUntilMs: number;
}

/**
 * The relay's short-lived Apple Maps token, per relay (the seed: "the relay hands paired hosts a
 * short-lived Apple Maps Server API token"). Kept in memory only, until shortly before it expires;
 * concurrent lookups share one exchange; a relay without a Maps key (404) is not asked again for an
 * hour. Requests go through the generated relay client with the delivery path's rules: the credential
 * only over HTTPS or to this machine, no redirects, a timeout, a bounded answer.
 */
export class RelayMapsTokens {
  private readonly tokens = new Map<string, CachedToken>();
  private readonly inflight = new Map<string, Promise<MapsTokenAnswer>>();
  private readonly unavailableUntil = new Map<string, number>();

  constructor(private readonly options: { clock: Clock; fetch: typeof fetch; userAgent: string }) {}

  /** When a relay answered 404 within the hour, the time the host asks it again; otherwise null. */
  unavailableUntilMs(relayUrl: string): number | null {
    const until = this.unavailableUntil.get(normalise(relayUrl));
    return until !== undefined && this.options.clock.now() < until ? until : null;
  }

  async token(target: MapsRelayTarget): Promise<MapsTokenAnswer> {
    const relay = normalise(target.relayUrl);
    const until = this.unavailableUntilMs(relay);
    if (until !== null) return { kind: 'unavailable', untilMs: until };
    const cached = this.tokens.get(relay);
    if (cached && this.options.clock.now() < cached.useUntilMs)
      return { kind: 'token', accessToken: cached.accessToken };
    let pending = this.inflight.get(relay);
    if (!pending) {
      pending = this.exchange(relay, target.credential).finally(() => this.inflight.delete(relay));
      this.inflight.set(relay, pending);
    }
    return pending;
  }

  /** Apple refused the token (401): the next lookup asks the relay for a fresh one. */
  forget(relayUrl: string, accessToken: string): void {
    const relay = normalise(relayUrl);
    if (this.tokens.get(relay)?.accessToken === accessToken) this.tokens.delete(relay);
  }

  private async exchange(relay: string, credential: string): Promise<MapsTokenAnswer> {
    if (!isCredentialSafeRelayUrl(relay)) return { kind: 'refused', reason: 'insecure_relay_url' };
    const client = createRelayClient({
      baseUrl: relay,
      fetch: (request: Request) =>
        this.options.fetch(request, {
          redirect: 'manual',
          signal: AbortSignal.timeout(MAPS_LIMITS.requestTimeoutMs),
        }),
    });
    let status: number;
    let data: unknown;
    let error: unknown;
    try {
      const answer = await client.POST('/v1/maps/token', {
        headers: { authorization: `Bearer ${credential}`, 'user-agent': this.options.userAgent },
      });
      status = answer.response.status;
      data = answer.data;
      error = answer.error;
    } catch {
      return { kind: 'refused', reason: 'relay_unreachable' };
    }
    const now = this.options.clock.now();
    if (status === 200) {
      const parsed = tokenBody.safeParse(data);
      if (!parsed.success) return { kind: 'refused', reason: 'relay_error' };
      this.unavailableUntil.delete(relay);
      // expires_in, not expires_at: the relay's clock and this host's may disagree.
      const useUntilMs = now + parsed.data.expires_in * 1000 - MAPS_LIMITS.tokenRenewBeforeMs;
      // A token that is already about to lapse serves this lookup but is not kept for the next.
      if (useUntilMs > now)
        setBounded(this.tokens, relay, { accessToken: parsed.data.access_token, useUntilMs }, RELAYS_REMEMBERED);
      return { kind: 'token', accessToken: parsed.data.access_token };
    }
    if (status === 404) {
      const untilMs = now + MAPS_LIMITS.relayUnavailableMs;
      setBounded(this.unavailableUntil, relay, untilMs, RELAYS_REMEMBERED);
      this.tokens.delete(relay);
      return { kind: 'unavailable', untilMs };
    }
    if (status === 401) return { kind: 'refused', reason: 'unauthorized' };
    if (status === 429) {
      const code = errorBody.safeParse(error);
      return {
        kind: 'refused',
        reason: code.success && code.data.error === 'maps_token_limit' ? 'maps_token_limit' : 'rate_limited',
      };
    }
    if (status === 502) return { kind: 'refused', reason: 'maps_unreachable' };
    return { kind: 'refused', reason: 'relay_error' };
  }
}

function normalise(relayUrl: string): string {
  return relayUrl.trim().replace(/\/+$/, '');
}
