import type { FastifyInstance, FastifyRequest } from 'fastify';
import { VOICE_CORS } from '@conduit/contracts/voice/calls';

/** Longest Access-Control-Request-Headers value reflected; a longer one gets the default list. */
const MAX_REQUESTED_HEADERS_CHARS = 1024;
/** A comma-separated list of HTTP header names (RFC 9110 tokens), as browsers send it. */
const HEADER_NAME_LIST = /^\s*[!#$%&'*+.^_`|~0-9A-Za-z-]+(\s*,\s*[!#$%&'*+.^_`|~0-9A-Za-z-]+)*\s*$/;

/**
 * Every answer of the gateway, whatever route or error produced it, carries the CORS headers (set when the
 * request arrives, so error answers keep them): a page on another origin can read the status, the body of an
 * error and `Location`.
 */
export function corsOnEveryAnswer(app: FastifyInstance): void {
  app.addHook('onRequest', (_request, reply, done) => {
    reply.headers(VOICE_CORS.headers);
    done();
  });
}

/**
 * The headers of a preflight's answer: the request headers the browser announced are allowed as they are
 * (the SDKs add their own, and the bearer key, not a header list, is what authorizes a call).
 */
export function preflightHeaders(request: FastifyRequest): Record<string, string> {
  const requested = request.headers['access-control-request-headers'];
  const reflected =
    typeof requested === 'string' && requested.length <= MAX_REQUESTED_HEADERS_CHARS && HEADER_NAME_LIST.test(requested)
      ? requested.trim()
      : VOICE_CORS.defaultAllowHeaders;
  return {
    ...VOICE_CORS.headers,
    'access-control-allow-methods': VOICE_CORS.allowMethods,
    'access-control-allow-headers': reflected,
    'access-control-max-age': String(VOICE_CORS.maxAgeSeconds),
    vary: 'Access-Control-Request-Headers',
  };
}
