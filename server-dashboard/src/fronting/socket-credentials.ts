import { createHash, randomBytes } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Clock } from '../clock.js';
import type { CallerVerifier, Verdict } from './caller-verification.js';

/**
 * The dashboard's WebSocket tickets (Hermes SURFACES.md, Web dashboard auth): a browser cannot set a
 * header on a WebSocket, so a signed-in client asks `POST /api/auth/ws-ticket` for a single-use
 * ticket valid 30 s and opens the socket with `?ticket=`. Kept as SHA-256 digests, so a ticket is
 * never held in this process's memory in the clear once recorded.
 */
export class WebSocketTickets {
  private readonly live = new Map<string, number>();

  constructor(private readonly clock: Clock) {}

  /** Mints a ticket valid `ttlMs` (standalone mode, where this service is the dashboard). */
  mint(ttlMs: number = TICKET_TTL_MS): string {
    const ticket = randomBytes(32).toString('base64url');
    this.record(ticket, ttlMs);
    return ticket;
  }

  /** Records a ticket the dashboard minted (seen on its answer through the proxy). */
  record(ticket: string, ttlMs: number): void {
    const now = this.clock.now();
    // Expired tickets go first; a flood of mints can never hold more than the bound.
    for (const [key, until] of this.live) if (until <= now) this.live.delete(key);
    if (this.live.size >= MAX_LIVE_TICKETS) {
      const oldest = this.live.keys().next().value;
      if (oldest !== undefined) this.live.delete(oldest);
    }
    this.live.set(digest(ticket), now + Math.min(ttlMs, TICKET_TTL_MS));
  }

  /** Spends a ticket: true once for a live ticket, false for an unknown, used or expired one. */
  consume(ticket: string): boolean {
    const key = digest(ticket);
    const until = this.live.get(key);
    this.live.delete(key);
    return until !== undefined && until > this.clock.now();
  }
}

/** Hermes' ticket lifetime; a longer one the dashboard might answer is cut to it. */
export const TICKET_TTL_MS = 30_000;

/** Tickets are spent within seconds of minting; more than this waiting means a client is looping. */
const MAX_LIVE_TICKETS = 1_000;

/** The dashboard's path for minting a WebSocket ticket (Hermes' `dashboard_auth` routes). */
export const WS_TICKET_PATH = '/api/auth/ws-ticket';

/** The dashboard's answer to a ticket request, as far as this service reads it. */
export const wsTicketAnswer = z.object({
  ticket: z.string().min(16).max(512),
  ttl_seconds: z.number().positive().max(3600).optional(),
});

function digest(ticket: string): string {
  return createHash('sha256').update(ticket).digest('hex');
}

/** The WebSocket credentials a socket route's query may carry. */
const socketQuery = z.object({
  ticket: z.string().min(1).max(512).optional(),
  token: z.string().min(1).max(512).optional(),
});

/**
 * Checks the caller of a socket route as the dashboard checks its own sockets: a `?ticket=` it
 * minted (spent here, once), or in front of a dashboard its session token as `?token=` (standalone,
 * `?token=` is refused: the bearer never rides in a URL), or the credential headers a native client
 * can set on its upgrade (checked as for every plugin route).
 */
export function socketCallerCheck(
  verifier: CallerVerifier,
  tickets: WebSocketTickets,
  mode: 'dashboard' | 'standalone',
): (request: FastifyRequest) => Promise<Verdict> {
  return async (request) => {
    const parsed = socketQuery.safeParse(request.query);
    if (!parsed.success) return 'denied';
    const { ticket, token } = parsed.data;
    if (ticket !== undefined) return tickets.consume(ticket) ? 'accepted' : 'denied';
    // The dashboard takes `?token=` on its sockets as its session token, so in front of one it is
    // passed to it as that. Standalone, our bearer never rides in a URL: a ticket or the header.
    if (token !== undefined && mode === 'dashboard') return verifier.verify({ 'x-hermes-session-token': token });
    if (token !== undefined) return 'denied';
    return verifier.verify(request.headers);
  };
}
