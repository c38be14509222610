import { z } from 'zod';
import { defineRoute } from '../route.js';

/** Limits of the call-setup body (CONTRACT.md §1); the reference allows 256 KiB + 512 KiB in total. */
export const CALL_SETUP_LIMITS = {
  sdpBytes: 256 * 1024,
  sessionBytes: 512 * 1024,
  bodyBytes: 256 * 1024 + 512 * 1024,
} as const;

/**
 * CORS of the gateway's HTTP surface. The reference allows `Authorization, Content-Type` on call setup only;
 * the OpenAI SDKs also send their own headers (`X-OpenAI-Agents-SDK`, `OpenAI-Beta`, …) and read `Location`,
 * so a preflight reflects the headers the browser asks for, and every answer of every route (errors and
 * discovery included) lets any origin read it. The bearer key, not the origin, is what authorizes a caller.
 */
export const VOICE_CORS = {
  /** On every answer. */
  headers: {
    'access-control-allow-origin': '*',
    'access-control-expose-headers': 'Location',
  },
  /** Methods a preflight allows. */
  allowMethods: 'GET, POST, OPTIONS',
  /** Allowed request headers when a preflight names none (the reference's list). */
  defaultAllowHeaders: 'Authorization, Content-Type',
  /** How long a browser may reuse a preflight's answer, in seconds. */
  maxAgeSeconds: 600,
} as const;

/** The CORS headers as documented on every answer. */
const corsHeaders: Record<string, string> = {
  'access-control-allow-origin': '*',
  'access-control-expose-headers': 'Location',
};

/** The headers of a CORS preflight's answer, as documented. */
export const PREFLIGHT_HEADERS_DOC: Record<string, string> = {
  ...corsHeaders,
  'access-control-allow-methods': VOICE_CORS.allowMethods,
  'access-control-allow-headers':
    'The headers named by Access-Control-Request-Headers, reflected; Authorization, Content-Type when it names none.',
  'access-control-max-age': String(VOICE_CORS.maxAgeSeconds),
  vary: 'Access-Control-Request-Headers',
};

/** Documents the CORS headers every answer carries. */
export const withCors = (headers: Record<string, string> = {}): Record<string, string> => ({
  ...headers,
  ...corsHeaders,
});

/** The plain-text error bodies of call setup, exactly as clients of the reference read them. */
export const CALL_SETUP_ERRORS = {
  unauthorized: 'unauthorized',
  tooManyCalls: 'too many active calls',
  unsupportedMediaType: 'expected multipart/form-data or application/sdp',
  bodyTooLarge: 'request body too large',
  sdpTooLarge: 'sdp part too large',
  sessionTooLarge: 'session part too large',
  missingSdp: 'missing sdp',
  sessionNotObject: 'session must be a JSON object',
  onlyRealtime: 'only realtime sessions are supported',
  badInstructions: 'instructions must be a bounded string',
  invalidOffer: 'invalid WebRTC offer',
  invalidProxy: 'invalid internal proxy metadata',
  proxyReplay: 'internal proxy call was already used',
} as const;

/** The preferred setup body. Raw `application/sdp` (the offer alone, session `{}`) is accepted too. */
export const createCallForm = z.object({
  /** The SDP offer (≤256 KiB). */
  sdp: z.string(),
  /** Optional JSON object (≤512 KiB): `type`, `instructions`, `tools`, `tool_choice` are read at setup. */
  session: z.string().optional(),
});

const plain = (description: string) => ({
  description,
  schema: z.string(),
  contentType: 'text/plain',
  headers: withCors(),
});

function createCallRoute(path: '/v1/realtime/calls' | '/realtime/calls', operationId: string) {
  return defineRoute({
    method: 'POST',
    path,
    operationId,
    summary: path === '/realtime/calls' ? 'Create a realtime call (alias)' : 'Create a realtime call',
    description:
      'Exchanges an SDP offer for the answer. Body: multipart/form-data with `sdp` (required) and `session` ' +
      '(optional JSON object), or the raw offer as `application/sdp`. Checks run in this order: bearer auth, ' +
      'call capacity, body (30 s setup deadline), signed proxy identity, session. Errors are text/plain.',
    tags: ['realtime'],
    auth: 'bearer',
    body: createCallForm,
    bodyContentType: 'multipart/form-data',
    responses: {
      201: {
        description: 'The answer SDP; the call resource in Location (not itself routable).',
        schema: z.string(),
        contentType: 'application/sdp',
        headers: withCors({ location: '/v1/realtime/calls/call_<32 hex>' }),
      },
      400: plain(
        'missing sdp, session must be a JSON object, only realtime sessions are supported, instructions must be a bounded string, a session tool error, or invalid WebRTC offer.',
      ),
      401: plain('unauthorized, or invalid internal proxy metadata.'),
      409: plain('internal proxy call was already used.'),
      413: plain('A part or the whole body is over its limit.'),
      415: plain('expected multipart/form-data or application/sdp'),
      429: plain('too many active calls'),
    },
  });
}

function callOptionsRoute(path: '/v1/realtime/calls' | '/realtime/calls', operationId: string) {
  return defineRoute({
    method: 'OPTIONS',
    path,
    operationId,
    summary: 'CORS preflight for call setup',
    tags: ['realtime'],
    auth: 'none',
    responses: { 204: { description: 'CORS headers, no body.', headers: PREFLIGHT_HEADERS_DOC } },
  });
}

export const createCall = createCallRoute('/v1/realtime/calls', 'createCall');
export const createCallAlias = createCallRoute('/realtime/calls', 'createCallAlias');
export const callOptions = callOptionsRoute('/v1/realtime/calls', 'callOptions');
export const callOptionsAlias = callOptionsRoute('/realtime/calls', 'callOptionsAlias');
