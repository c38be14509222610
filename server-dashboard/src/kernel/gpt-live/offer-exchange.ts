import type { Timers } from '../timers.js';
import { readAtMost, UpstreamTimeout, UpstreamUnreachable } from '../upstream-http.js';

/** One SDP offer sent to OpenAI: where, with which headers (the credential), and its bounds. */
export interface OfferRequest {
  url: string;
  headers: Record<string, string>;
  json: unknown;
  timeoutMs: number;
  /** The largest answer read; a larger one is unusable, and is not read whole. */
  answerMaxBytes: number;
}

/**
 * How OpenAI answered: a refusal (any status outside 2xx, redirects included), or a yes — whose body
 * may still turn out unusable (`text` null: larger than the bound, or cut off while being read). The
 * difference matters for billing: after a yes a session may have started.
 */
export type OfferAnswer =
  | { accepted: false; status: number }
  | { accepted: true; status: number; location: string | null; text: string | null };

/**
 * Posts an offer (fetch, i.e. undici) and reads the answer within one deadline. Never follows a
 * redirect: a 3xx is a refusal here, so the credential is never replayed to another origin. A refusal's
 * body is not read at all: nothing of it is ever passed on. Nothing here logs.
 */
export async function exchangeOffer(request: OfferRequest, timers: Timers): Promise<OfferAnswer> {
  const abort = new AbortController();
  let timedOut = false;
  const cancel = timers.after(request.timeoutMs, () => {
    timedOut = true;
    abort.abort();
  });
  try {
    let response: Response;
    try {
      response = await fetch(request.url, {
        method: 'POST',
        redirect: 'manual',
        signal: abort.signal,
        headers: { ...request.headers, 'Content-Type': 'application/json' },
        body: JSON.stringify(request.json),
      });
    } catch {
      throw timedOut ? new UpstreamTimeout() : new UpstreamUnreachable();
    }
    if (response.status < 200 || response.status > 299) {
      await response.body?.cancel().catch(() => undefined);
      return { accepted: false, status: response.status };
    }
    let text: string | null;
    try {
      text = await readAtMost(response, request.answerMaxBytes);
    } catch {
      // Cut off (or past the deadline) after OpenAI said yes: an unusable answer, not a refusal.
      text = null;
    }
    return { accepted: true, status: response.status, location: response.headers.get('location'), text };
  } finally {
    cancel();
  }
}
