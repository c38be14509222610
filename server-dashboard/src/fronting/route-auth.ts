import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import type { CallerVerifier } from './caller-verification.js';

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

/**
 * Authenticates the caller of a plugin route. Registered as an `onRequest` hook inside the
 * encapsulated scope that holds the authenticated routes, so it runs for every request the router
 * matched to one of them — however the target was spelled — and before the body is read. Fails
 * closed: a dashboard that cannot answer refuses the caller (503), it never lets one through.
 */
export function authenticatedRoutes(verifier: CallerVerifier): onRequestAsyncHookHandler {
  return async function authenticate(request: FastifyRequest, reply: FastifyReply) {
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
