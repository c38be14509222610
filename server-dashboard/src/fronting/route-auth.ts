import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { acceptThenClose, isPendingUpgrade, isSocketRoute } from '../kernel/socket-route.js';
import { RELAY_CLOSE } from '../kernel/socket-relay.js';
import type { SlidingWindowLimit } from '../kernel/rate-window.js';
import type { CallerVerifier, Verdict } from './caller-verification.js';

/**
 * The body types a page of another site can send without a CORS preflight (an HTML form, or fetch in
 * no-cors mode). No state-changing route of ours reads them, so a cross-site form can never reach a
 * handler, whatever the caller's cookies.
 */
const PREFLIGHT_FREE_TYPES = new Set(['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data']);

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

function mediaType(header: string | undefined): string {
  return (header ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
}

function refuse(reply: FastifyReply, status: number, body: { error: string; detail?: string }): FastifyReply {
  // Closed after the answer: a body the caller may still be sending is never read.
  return reply.status(status).header('cache-control', 'no-store').header('connection', 'close').send(body);
}

/** How socket routes check their caller (the dashboard's WebSocket credential, socket-credentials.ts). */
export interface SocketCallerGate {
  check(request: FastifyRequest): Promise<Verdict>;
  /** Refusals host-wide; past it a refused upgrade is not even accepted (ROUTES.md, Grok Live auth). */
  refusals: SlidingWindowLimit;
}

/**
 * A socket route refuses as the reference does: it accepts and closes 4401 `Dashboard sign-in
 * required`, which the app shows; past 30 refusals a minute host-wide it answers the upgrade 403
 * without accepting (what the dashboard's server sends for a socket closed before accept), so a
 * guessing loop costs one HTTP answer each. Either way nothing is relayed or opened upstream.
 */
async function checkSocketCaller(gate: SocketCallerGate, request: FastifyRequest, reply: FastifyReply) {
  const verdict = await gate.check(request);
  if (verdict === 'accepted') return undefined;
  if (verdict === 'unavailable') {
    await acceptThenClose(request, reply, RELAY_CLOSE.hostFailure, 'The dashboard could not check the sign-in');
    return reply;
  }
  if (!gate.refusals.tryTake('')) return refuse(reply, 403, { error: 'forbidden' });
  await acceptThenClose(request, reply, RELAY_CLOSE.unauthorized, 'Dashboard sign-in required');
  return reply;
}

/**
 * Authenticates the caller of a plugin route. Registered as an `onRequest` hook inside the
 * encapsulated scope that holds the authenticated routes, so it runs for every request the router
 * matched to one of them — however the target was spelled — and before the body is read. Fails
 * closed: a dashboard that cannot answer refuses the caller (503), it never lets one through.
 */
export function authenticatedRoutes(verifier: CallerVerifier, sockets?: SocketCallerGate): onRequestAsyncHookHandler {
  return async function authenticate(request: FastifyRequest, reply: FastifyReply) {
    // A plain GET on a socket route is checked as any route is (and then answered 426).
    if (sockets && isSocketRoute(request) && isPendingUpgrade(request))
      return checkSocketCaller(sockets, request, reply);
    const verdict = await verifier.verify(request.headers);
    if (verdict === 'denied') return refuse(reply, 401, { error: 'unauthorized' });
    if (verdict === 'unavailable') return refuse(reply, 503, { error: 'dashboard_unavailable' });
    if (!SAFE_METHODS.has(request.method) && PREFLIGHT_FREE_TYPES.has(mediaType(request.headers['content-type']))) {
      // Both shapes: the pairing routes' clients read FastAPI's `detail`, the others read `error`.
      return refuse(reply, 415, {
        error: 'unsupported_media_type',
        detail: 'Send the request body as application/json',
      });
    }
    return undefined;
  };
}
