import { z } from 'zod';
import { postEvent } from '@conduit/contracts/relay/events';
import { createRelayClient } from '@conduit/sdk/relay';
import { isCredentialSafeRelayUrl } from '../kernel/loopback.js';
import type { SendOutcome } from './outcome.js';

/** A paired profile's way to the relay: where, and with which gateway credential. */
export interface RelayTarget {
  relayUrl: string;
  /** `<installation_id>.<gateway_id>.<secret>`; only ever placed in the Authorization header. */
  credential: string;
}

export type DecisionPoll =
  | { status: 'pending'; deliverable: boolean; remaining?: string[]; answers?: Record<string, unknown> }
  | { status: 'answered'; answer?: unknown; answers?: Record<string, unknown>; remaining?: string[] }
  | { status: 'unknown' }
  | { status: 'rejected' };

export type PollResult = { kind: 'ok'; poll: DecisionPoll } | { kind: 'error'; reason: string };

/** The relay's gateway routes this host uses (spec/relay/API.md §1 rows 10, 12, 13). */
export interface RelayGateway {
  postEvent(target: RelayTarget, body: unknown): Promise<SendOutcome>;
  pollDecision(target: RelayTarget, requestId: string): Promise<PollResult>;
  releaseDecision(target: RelayTarget, requestId: string): Promise<boolean>;
}

const acceptedBody = z.looseObject({
  accepted: z.literal(true),
  delivered: z.boolean().optional(),
  duplicate: z.boolean().optional(),
});
const errorBody = z.looseObject({ error: z.string() });
const pollBody = z.looseObject({
  status: z.enum(['pending', 'answered', 'unknown', 'rejected']),
  deliverable: z.boolean().optional(),
  remaining: z.array(z.string()).optional(),
  answers: z.record(z.string(), z.unknown()).optional(),
  answer: z.unknown().optional(),
});

/** The relay's error code, printable and short, for logs (never the body as a whole). */
function errorCode(body: unknown): string {
  const parsed = errorBody.safeParse(body);
  return parsed.success ? parsed.data.error.replace(/[^\x20-\x7e]/g, '').slice(0, 200) : 'unknown';
}

/** APNs failures are final: the relay consumed the event id, so a resend would only be a duplicate. */
const FINAL_5XX = new Set(['apns_rejected', 'apns_unreachable']);

/** The relay URL without a trailing slash, the form every request path is appended to. */
function normaliseRelayUrl(raw: string): string {
  return raw.trim().replace(/\/+$/, '');
}

/** The body the relay contract accepts on POST /v1/events (validated before anything is sent). */
const relayEventBody = postEvent.body ?? z.never();
export type RelayEventBody = z.output<typeof relayEventBody>;

/**
 * The relay's gateway wire through the generated relay client. Every request refuses redirects (a
 * redirect could carry the credential elsewhere) and refuses relay URLs that would send the
 * credential in clear; an event that does not match the relay contract is never sent.
 */
export function httpRelayGateway(options: {
  userAgent: string;
  timeoutMs: number;
  fetch?: typeof fetch;
}): RelayGateway {
  const doFetch = options.fetch ?? fetch;
  const clients = new Map<string, ReturnType<typeof createRelayClient>>();

  function clientFor(target: RelayTarget) {
    const baseUrl = normaliseRelayUrl(target.relayUrl);
    let client = clients.get(baseUrl);
    if (!client) {
      client = createRelayClient({
        baseUrl,
        fetch: (request: Request) =>
          doFetch(request, { redirect: 'manual', signal: AbortSignal.timeout(options.timeoutMs) }),
      });
      if (clients.size > 64) clients.clear();
      clients.set(baseUrl, client);
    }
    return client;
  }

  function headers(target: RelayTarget): Record<string, string> {
    return {
      accept: 'application/json',
      'user-agent': options.userAgent,
      authorization: `Bearer ${target.credential}`,
    };
  }

  async function call<T>(
    target: RelayTarget,
    send: (client: ReturnType<typeof createRelayClient>) => Promise<{ response: Response; data?: T; error?: unknown }>,
  ): Promise<
    | { kind: 'unsafe' }
    | { kind: 'network'; reason: string }
    | { kind: 'http'; status: number; data: T | undefined; error: unknown }
  > {
    if (!isCredentialSafeRelayUrl(target.relayUrl)) return { kind: 'unsafe' };
    try {
      const { response, data, error } = await send(clientFor(target));
      return { kind: 'http', status: response.status, data, error };
    } catch (error) {
      return { kind: 'network', reason: error instanceof Error ? error.name : 'error' };
    }
  }

  return {
    async postEvent(target, body) {
      const parsed = relayEventBody.safeParse(body);
      if (!parsed.success) return { kind: 'failed', status: 0, error: 'invalid_event' };
      const result = await call(target, (client) =>
        client.POST('/v1/events', { body: parsed.data, headers: headers(target) }),
      );
      if (result.kind === 'unsafe') return { kind: 'failed', status: 0, error: 'insecure_relay_url' };
      if (result.kind === 'network') return { kind: 'retry', reason: result.reason };
      const { status } = result;
      if (status >= 300 && status < 400) return { kind: 'failed', status, error: 'redirect_refused' };
      if (status === 200 || status === 202) {
        const accepted = acceptedBody.safeParse(result.data);
        return {
          kind: 'accepted',
          delivered: accepted.success ? accepted.data.delivered === true : false,
          duplicate: accepted.success ? accepted.data.duplicate === true : false,
        };
      }
      const code = errorCode(result.error);
      if (status === 401) return { kind: 'failed', status, error: 'unauthorized' };
      // Rate limits pass; decision capacity frees up as decisions settle (the id is not consumed).
      if (status === 429 && code !== 'call_limit') return { kind: 'retry', reason: code };
      if (status >= 500 && !FINAL_5XX.has(code)) return { kind: 'retry', reason: `http_${status}` };
      return { kind: 'failed', status, error: code };
    },

    async pollDecision(target, requestId) {
      const result = await call(target, (client) =>
        client.GET('/v1/decisions/{id}', { params: { path: { id: requestId } }, headers: headers(target) }),
      );
      if (result.kind === 'unsafe') return { kind: 'error', reason: 'insecure_relay_url' };
      if (result.kind === 'network') return { kind: 'error', reason: result.reason };
      if (result.status !== 200) return { kind: 'error', reason: `http_${result.status}` };
      const parsed = pollBody.safeParse(result.data);
      if (!parsed.success) return { kind: 'error', reason: 'malformed_poll' };
      const p = parsed.data;
      if (p.status === 'pending') {
        const poll: DecisionPoll = { status: 'pending', deliverable: p.deliverable !== false };
        if (p.remaining) poll.remaining = p.remaining;
        if (p.answers) poll.answers = p.answers;
        return { kind: 'ok', poll };
      }
      if (p.status === 'answered') {
        const poll: DecisionPoll = { status: 'answered' };
        if (p.answer !== undefined) poll.answer = p.answer;
        if (p.answers) poll.answers = p.answers;
        if (p.remaining) poll.remaining = p.remaining;
        return { kind: 'ok', poll };
      }
      return { kind: 'ok', poll: { status: p.status } };
    },

    async releaseDecision(target, requestId) {
      const result = await call(target, (client) =>
        client.DELETE('/v1/decisions/{id}', { params: { path: { id: requestId } }, headers: headers(target) }),
      );
      return result.kind === 'http' && result.status === 200;
    },
  };
}
