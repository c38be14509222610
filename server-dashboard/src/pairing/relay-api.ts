import { z } from 'zod';
import { createRelayClient, type operations } from '@conduit/sdk/relay';
import { createRelayFetch, RelayTransportError } from './relay-http.js';
import { RELAY_EVENT_TYPES, type HostEvent, type OutgoingEvent } from '@conduit/contracts/relay/events';

/**
 * The relay routes pairing uses (spec/relay/API.md): claim a pairing code (route 9), revoke this gateway
 * (route 14), and post an event (route 10, for `conduit push test`). Calls go through a `fetch` that
 * verifies TLS and never follows redirects (relay-http.ts).
 */

/** The relay answered with an error. `code` is its `{"error": code}`, cleaned for printing. */
export class RelayRejected extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
  ) {
    super(`Conduit relay rejected the request: ${code} (${status}).`);
    this.name = 'RelayRejected';
  }
}

/** The relay could not be reached, timed out, redirected, or answered something unreadable. */
export class RelayUnreachable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RelayUnreachable';
  }
}

export const claimAnswer = z
  .object({
    installation_id: z.string().regex(/^[0-9a-f-]{1,64}$/),
    gateway_id: z.string().regex(/^[0-9a-f-]{1,64}$/),
    credential: z.string().regex(/^[0-9a-f-]+\.[0-9a-f-]+\.[A-Za-z0-9_-]+$/),
    relay_url: z.string().optional(),
  })
  // The credential names the pairing it belongs to; one that names another would authenticate elsewhere.
  .refine((answer) => answer.credential.startsWith(`${answer.installation_id}.${answer.gateway_id}.`));
export type ClaimAnswer = z.infer<typeof claimAnswer>;

export const eventAnswer = z.object({
  accepted: z.literal(true),
  delivered: z.boolean().optional(),
  duplicate: z.boolean().optional(),
  rang: z.boolean().optional(),
});
export type EventAnswer = z.infer<typeof eventAnswer>;

export interface RelayApi {
  claimPairing(relayUrl: string, body: { pairing_code: string; gateway_name: string }): Promise<ClaimAnswer>;
  revokeGateway(relayUrl: string, credential: string): Promise<void>;
  postEvent(relayUrl: string, credential: string, event: OutgoingEvent, timeoutMs?: number): Promise<EventAnswer>;
}

export interface RelayApiOptions {
  userAgent: string;
  /** The transport; defaults to relay-http.ts (verified TLS, no redirects). */
  fetch?: typeof fetch;
  timeoutMs?: number;
}

type RelayEventBody = operations['postEvent']['requestBody']['content']['application/json'];
const RELAY_EVENT_TYPE_SET = new Set<string>(RELAY_EVENT_TYPES);

function isRelayEventType(type: string): type is RelayEventBody['type'] {
  return RELAY_EVENT_TYPE_SET.has(type);
}

/** The outgoing event as the relay contract types it (a fresh object, so nested records are plain). */
function relayEventBody(event: OutgoingEvent): RelayEventBody {
  if (!isRelayEventType(event.type)) throw new RelayRejected(400, 'invalid_event_type');
  const body: RelayEventBody = { type: event.type, event_id: event.event_id };
  if (event.plugin_version !== undefined) body.plugin_version = event.plugin_version;
  if (event.plugin_capabilities !== undefined) body.plugin_capabilities = [...event.plugin_capabilities];
  if ('e2e' in event) {
    // Sealed: only routing data travels beside the envelope.
    body.e2e = { ...event.e2e };
    if (event.clarify) body.clarify = { ...event.clarify, qids: [...event.clarify.qids] };
    return body;
  }
  const plain: Partial<HostEvent> = event;
  for (const field of ['title', 'body', 'session_id', 'profile', 'gateway'] as const) {
    const value = plain[field];
    if (value !== undefined) body[field] = value;
  }
  if (plain.decision) body.decision = { ...plain.decision };
  if (plain.call) body.call = { ...plain.call };
  return body;
}

/** The relay's error string, printable characters only and at most 200, as the reference shows it. */
function errorCodeOf(body: unknown, status: number): string {
  if (typeof body === 'object' && body !== null && 'error' in body && typeof body.error === 'string') {
    const cleaned = body.error.replace(/[^\x20-\x7e]/g, '').slice(0, 200);
    if (cleaned) return cleaned;
  }
  return `HTTP ${status}`;
}

/**
 * The relay API over the generated relay client (`createRelayClient`), so a change of the relay's wire
 * fails to compile here.
 */
export function createRelayApi(options: RelayApiOptions): RelayApi {
  const relayFetch = options.fetch ?? createRelayFetch({ timeoutMs: options.timeoutMs ?? 15_000 });
  const headers = (credential?: string): Record<string, string> => ({
    accept: 'application/json',
    'user-agent': options.userAgent,
    ...(credential ? { authorization: `Bearer ${credential}` } : {}),
  });

  /** Runs one call; maps transport failures, redirects and error statuses to our two errors. */
  async function send<T extends { response: Response; data?: unknown; error?: unknown }>(
    relayUrl: string,
    call: (client: ReturnType<typeof createRelayClient>) => Promise<T>,
  ): Promise<T> {
    const origin = new URL(relayUrl).origin;
    let result: T;
    try {
      result = await call(createRelayClient({ baseUrl: relayUrl, fetch: relayFetch }));
    } catch (error) {
      const reason = error instanceof RelayTransportError || error instanceof Error ? error.message : 'unknown error';
      throw new RelayUnreachable(`Could not reach the Conduit relay at ${origin}: ${reason}`);
    }
    const status = result.response.status;
    if (status >= 300 && status < 400) {
      throw new RelayUnreachable(
        `The Conduit relay at ${origin} answered with a redirect (${status}); redirects are never followed`,
      );
    }
    if (status >= 400) throw new RelayRejected(status, errorCodeOf(result.error, status));
    return result;
  }

  return {
    async claimPairing(relayUrl, body) {
      const { data } = await send(relayUrl, (client) =>
        client.POST('/v1/pairings/claim', { body, headers: headers(), redirect: 'manual' }),
      );
      const parsed = claimAnswer.safeParse(data);
      if (!parsed.success)
        throw new RelayUnreachable('The Conduit relay answered the pairing claim with an unreadable body');
      return parsed.data;
    },
    async revokeGateway(relayUrl, credential) {
      await send(relayUrl, (client) =>
        client.DELETE('/v1/gateways/current', { headers: headers(credential), redirect: 'manual' }),
      );
    },
    async postEvent(relayUrl, credential, event, timeoutMs) {
      const { data } = await send(relayUrl, (client) =>
        client.POST('/v1/events', {
          body: relayEventBody(event),
          headers: headers(credential),
          redirect: 'manual',
          ...(timeoutMs ? { signal: AbortSignal.timeout(timeoutMs) } : {}),
        }),
      );
      const parsed = eventAnswer.safeParse(data);
      if (!parsed.success) throw new RelayUnreachable('The Conduit relay answered the event with an unreadable body');
      return parsed.data;
    },
  };
}
