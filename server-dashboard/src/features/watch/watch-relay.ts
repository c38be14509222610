import { z } from 'zod';
import { createRelayClient } from '@conduit/sdk/relay';
import { watchGrantIdPattern } from '@conduit/contracts/dashboard/watch-tools';
import type { SealedWatchMessage } from './watch-seal.js';
import { WATCH_LIMITS } from './watch-limits.js';

/** A paired profile's relay and gateway credential; the credential only ever goes in Authorization. */
export interface WatchRelayTarget {
  relayUrl: string;
  credential: string;
}

export type OpenGrantAnswer =
  | { kind: 'opened'; grantId: string; expiresAt: string; audio: boolean }
  /** 404: a relay from before Watch tools. */
  | { kind: 'unsupported' }
  | { kind: 'capacity' }
  | { kind: 'refused'; status: number }
  | { kind: 'unreachable' };

export type PollAnswer =
  | { kind: 'calls'; calls: { rid: string; n: string; ct: string }[] }
  /** 401, 404 or 410: the grant is gone for good (closed, expired, replaced, or the pairing revoked). */
  | { kind: 'gone'; status: number }
  /** Anything else (a 5xx, a 429, the network): try again later. */
  | { kind: 'failed'; status: number | null };

/** The relay's answers, checked again: the relay is another process. */
const openedBody = z.object({
  grant_id: z.string().regex(watchGrantIdPattern),
  expires_at: z.string().min(1).max(64),
  audio: z.boolean().optional(),
});
const pollBody = z.object({
  calls: z.array(z.object({ rid: z.string(), n: z.string(), ct: z.string() }).loose()).max(64),
});

/**
 * The relay's Watch tool routes as the host side uses them (EVENTS.md §4, API.md routes 16, 18–20),
 * through the generated relay client and the pairing's fetch: certificates always verified, no
 * redirects, bounded answers.
 */
export class WatchRelay {
  constructor(private readonly options: { fetch: typeof fetch; userAgent: string }) {}

  async openGrant(
    target: WatchRelayTarget,
    request: { watchKeySha256: string; maxCalls: number; audio?: boolean },
  ): Promise<OpenGrantAnswer> {
    try {
      const answer = await this.client(target, WATCH_LIMITS.relayTimeoutMs).POST('/v1/watch-tools/grants', {
        headers: this.headers(target),
        body: {
          watch_key_sha256: request.watchKeySha256,
          ttl_s: WATCH_LIMITS.grantTtlS,
          max_calls: request.maxCalls,
          ...(request.audio ? { audio: true } : {}),
        },
      });
      const status = answer.response.status;
      if (status === 201) {
        const parsed = openedBody.safeParse(answer.data);
        return parsed.success
          ? {
              kind: 'opened',
              grantId: parsed.data.grant_id,
              expiresAt: parsed.data.expires_at,
              audio: parsed.data.audio === true,
            }
          : { kind: 'refused', status };
      }
      if (status === 404) return { kind: 'unsupported' };
      if (status === 503) return { kind: 'capacity' };
      return { kind: 'refused', status };
    } catch {
      return { kind: 'unreachable' };
    }
  }

  /** One long poll; `signal` ends it early when the grant closes here. */
  async poll(target: WatchRelayTarget, grantId: string, signal: AbortSignal): Promise<PollAnswer> {
    try {
      const answer = await this.client(target, WATCH_LIMITS.pollTimeoutMs, signal).GET(
        '/v1/watch-tools/grants/{gid}/calls',
        {
          headers: this.headers(target),
          params: { path: { gid: grantId }, query: { wait_ms: String(WATCH_LIMITS.pollWaitMs) } },
        },
      );
      const status = answer.response.status;
      if (status === 200) {
        const parsed = pollBody.safeParse(answer.data);
        return parsed.success ? { kind: 'calls', calls: parsed.data.calls } : { kind: 'failed', status };
      }
      if (status === 401 || status === 404 || status === 410) return { kind: 'gone', status };
      return { kind: 'failed', status };
    } catch {
      return { kind: 'failed', status: null };
    }
  }

  /** Posts a sealed answer; true when the relay handed it to the waiting Watch request. */
  async postResult(
    target: WatchRelayTarget,
    grantId: string,
    rid: string,
    sealed: SealedWatchMessage,
  ): Promise<boolean> {
    try {
      const answer = await this.client(target, WATCH_LIMITS.relayTimeoutMs).POST(
        '/v1/watch-tools/grants/{gid}/results/{rid}',
        { headers: this.headers(target), params: { path: { gid: grantId, rid } }, body: sealed },
      );
      return answer.response.status === 200;
    } catch {
      return false;
    }
  }

  /** Tells the relay the grant is over (it answers 204 whatever it knew). */
  async closeGrant(target: WatchRelayTarget, grantId: string): Promise<void> {
    try {
      await this.client(target, WATCH_LIMITS.relayTimeoutMs).DELETE('/v1/watch-tools/grants/{gid}', {
        headers: this.headers(target),
        params: { path: { gid: grantId } },
      });
    } catch {
      // The relay closes it on its own at expiry; nothing here depends on the answer.
    }
  }

  private headers(target: WatchRelayTarget): Record<string, string> {
    return { authorization: `Bearer ${target.credential}`, 'user-agent': this.options.userAgent };
  }

  private client(target: WatchRelayTarget, timeoutMs: number, signal?: AbortSignal) {
    return createRelayClient({
      baseUrl: target.relayUrl.trim().replace(/\/+$/, ''),
      fetch: (request: Request) =>
        this.options.fetch(request, {
          redirect: 'manual',
          signal: signal ? AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]) : AbortSignal.timeout(timeoutMs),
        }),
    });
  }
}
