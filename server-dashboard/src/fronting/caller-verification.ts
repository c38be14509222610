import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { Clock } from '../clock.js';

export type Verdict = 'accepted' | 'denied' | 'unavailable';

export interface CallerVerifier {
  verify(headers: IncomingHttpHeaders): Promise<Verdict>;
}

/** The headers a Hermes dashboard reads a caller's identity from (session token, bearer, login cookie). */
const CREDENTIAL_HEADERS = ['x-hermes-session-token', 'authorization', 'cookie'] as const;

function credentialHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of CREDENTIAL_HEADERS) {
    const value = headers[name];
    if (typeof value === 'string' && value) out[name] = value;
  }
  return out;
}

/**
 * Accepts exactly the callers the Hermes dashboard accepts: the caller's own credential headers are
 * replayed on an authenticated dashboard route. A verdict of "accepted" is cached for `cacheMs`
 * under a hash of those headers (never the headers themselves); anything but a clear 2xx or 401/403
 * — a timeout, a 5xx, a refused connection — is "unavailable", which callers treat as a refusal.
 */
export function dashboardVerifier(options: {
  dashboardUrl: string;
  /** An authenticated dashboard route that answers cheaply. */
  probePath?: string;
  cacheMs: number;
  timeoutMs: number;
  clock: Clock;
  fetch?: typeof fetch;
}): CallerVerifier {
  const doFetch = options.fetch ?? fetch;
  const probe = new URL(options.probePath ?? '/api/sessions?limit=1', options.dashboardUrl).href;
  const cache = new Map<string, number>();
  return {
    async verify(headers) {
      const creds = credentialHeaders(headers);
      if (Object.keys(creds).length === 0) return 'denied';
      const key = createHash('sha256').update(JSON.stringify(creds)).digest('hex');
      const now = options.clock.now();
      const until = cache.get(key);
      if (until !== undefined && until > now) return 'accepted';
      cache.delete(key);
      try {
        const response = await doFetch(probe, {
          headers: { ...creds, accept: 'application/json' },
          redirect: 'manual',
          signal: AbortSignal.timeout(options.timeoutMs),
        });
        await response.body?.cancel();
        if (response.status >= 200 && response.status < 300) {
          if (options.cacheMs > 0) {
            if (cache.size > 10_000) cache.clear();
            cache.set(key, now + options.cacheMs);
          }
          return 'accepted';
        }
        if (response.status === 401 || response.status === 403) return 'denied';
        return 'unavailable';
      } catch {
        return 'unavailable';
      }
    },
  };
}

/** Standalone mode: the caller must present this service's own bearer token. */
export function bearerVerifier(token: string): CallerVerifier {
  const expected = createHash('sha256').update(token).digest();
  return {
    async verify(headers) {
      const match = /^Bearer\s+(\S+)\s*$/i.exec(headers.authorization ?? '');
      if (!match?.[1]) return 'denied';
      const given = createHash('sha256').update(match[1]).digest();
      return timingSafeEqual(given, expected) ? 'accepted' : 'denied';
    },
  };
}
