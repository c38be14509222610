import { z } from 'zod';
import { defineRoute } from '../route.js';
import { PREFLIGHT_HEADERS_DOC, withCors } from './calls.js';

/** Which provider answers one speech capability, and where its settings came from. Never a key or URL. */
export const speechChoice = z.object({
  /** `gateway` (HERMES_REALTIME_STT_* / _TTS_*), `hermes` (the profile's stt/tts), `fallback`, or `override`. */
  source: z.enum(['gateway', 'hermes', 'fallback', 'override']),
  /** Hermes' provider name (`openai`, `groq`) or the gateway's (`openai-compatible`, `espeak`, `stand-in`). */
  provider: z.string(),
  model: z.string().optional(),
  voice: z.string().optional(),
  /** Why the fallback runs (an unsupported Hermes provider, a missing key) or how the choice was made. */
  note: z.string().optional(),
});

export const discoveryResponse = z.object({
  version: z.literal(1),
  /** The Hermes profile this gateway speaks for (`default` unless HERMES_HOME is a named profile). */
  profile: z.string(),
  /** Where to POST the SDP offer. */
  realtime_path: z.literal('/v1/realtime/calls'),
  /** The transcription and speech providers in use. */
  speech: z.object({ stt: speechChoice, tts: speechChoice }),
});

/** Authenticated discovery: tells a client which profile answers and where to start a call. */
export const getDiscovery = defineRoute({
  method: 'GET',
  path: '/v1/realtime/discovery',
  operationId: 'getDiscovery',
  summary: 'Realtime profile discovery',
  tags: ['realtime'],
  auth: 'bearer',
  responses: {
    200: {
      description: 'The gateway profile.',
      schema: discoveryResponse,
      headers: withCors({ 'cache-control': 'no-store' }),
    },
    401: {
      description: 'Missing or wrong bearer token.',
      schema: z.literal('unauthorized'),
      contentType: 'text/plain',
      headers: withCors(),
    },
  },
});

/** CORS preflight for discovery (a browser sends one before a GET with Authorization). */
export const discoveryOptions = defineRoute({
  method: 'OPTIONS',
  path: '/v1/realtime/discovery',
  operationId: 'discoveryOptions',
  summary: 'CORS preflight for discovery',
  tags: ['realtime'],
  auth: 'none',
  responses: { 204: { description: 'CORS headers, no body.', headers: PREFLIGHT_HEADERS_DOC } },
});
