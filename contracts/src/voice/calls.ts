import { z } from 'zod';
import { defineRoute } from '../route.js';

/** Limits of the call-setup body (CONTRACT.md §1); the reference allows 256 KiB + 512 KiB in total. */
export const CALL_SETUP_LIMITS = {
  sdpBytes: 256 * 1024,
  sessionBytes: 512 * 1024,
  bodyBytes: 256 * 1024 + 512 * 1024,
} as const;

/** The headers every call-setup answer carries, errors included, so browsers can read them. */
export const CALL_CORS_HEADERS = {
  'access-control-allow-origin': '*',
  'access-control-allow-headers': 'Authorization, Content-Type',
  'access-control-allow-methods': 'POST, OPTIONS',
} as const;

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

const corsHeaders: Record<string, string> = { ...CALL_CORS_HEADERS };
/** The preferred setup body. Raw `application/sdp` (the offer alone, session `{}`) is accepted too. */
export const createCallForm = z.object({
  /** The SDP offer (≤256 KiB). */
  sdp: z.string(),
  /** Optional JSON object (≤512 KiB): `type`, `instructions`, `tools`, `tool_choice` are read at setup. */
  session: z.string().optional(),
});

const plain = (description: string) => ({ description, schema: z.string(), contentType: 'text/plain' });

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
        headers: { location: '/v1/realtime/calls/call_<32 hex>', ...corsHeaders },
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
    responses: { 204: { description: 'CORS headers, no body.', headers: corsHeaders } },
  });
}

export const createCall = createCallRoute('/v1/realtime/calls', 'createCall');
export const createCallAlias = createCallRoute('/realtime/calls', 'createCallAlias');
export const callOptions = callOptionsRoute('/v1/realtime/calls', 'callOptions');
export const callOptionsAlias = callOptionsRoute('/realtime/calls', 'callOptionsAlias');
