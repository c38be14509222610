import { z } from 'zod';
import { defineRoute } from '../route.js';
import { detailAnswer, detailUnavailable, noStoreAnswer } from './detail-error.js';
import { unauthorized } from './notification-settings.js';
import { profileQuery } from './profile.js';
import { relayedSocketQuery, socketRefusals, upgradeHeaders } from './relayed-socket.js';

/** A Grok Live model or voice name (ROUTES.md); a configured value of another shape is not used. */
export const GROK_LIVE_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export const grokLiveStatusResponse = z.object({
  ok: z.literal(true),
  /** CONDUIT_GROK_LIVE_MODEL, else `voice.grok_live.model`, else `grok-voice-latest`. */
  model: z.string(),
  /** `voice.grok_live.voice`, else `eve`. */
  voice: z.string(),
  /** Calls go through this host's socket, never from the phone to xAI. */
  transport: z.literal('relay'),
  available: z.boolean(),
  /** Which credential a call would use: the SuperGrok sign-in, XAI_API_KEY, or none. */
  auth: z.enum(['subscription', 'api_key']).nullable(),
  /** Null, or why a call cannot start. */
  reason: z.string().nullable(),
});

/** Whether this profile can start a Grok Live call, with which model, voice and credential. 30 a minute host-wide. */
export const getGrokLiveStatus = defineRoute({
  method: 'GET',
  path: '/api/plugins/conduit_push/grok-live/status',
  operationId: 'getGrokLiveStatus',
  summary: 'Grok Live availability for a profile',
  tags: ['live-voice'],
  auth: 'bearer',
  query: profileQuery,
  responses: {
    200: noStoreAnswer('Available, or why not.', grokLiveStatusResponse),
    401: unauthorized,
    429: detailAnswer('More than 30 status checks a minute on this host.'),
    500: detailAnswer('An unexpected failure, named by its type only.'),
    503: detailUnavailable('The profile cannot be resolved.'),
    504: detailAnswer('Grok Live status timed out (25 s).'),
  },
});

/**
 * Grok Live (WebSocket): relays Conduit's frames to `wss://api.x.ai/v1/realtime?model=<model>` with
 * the host's SuperGrok sign-in or XAI_API_KEY, and xAI's frames back, unchanged.
 */
export const grokLiveSocket = defineRoute({
  method: 'GET',
  path: '/api/plugins/conduit_push/grok-live/socket',
  operationId: 'grokLiveSocket',
  summary: 'Relay a Grok Live call to xAI (WebSocket upgrade)',
  description:
    'WebSocket. Text and binary frames are relayed both ways unchanged; client frames up to 256 KiB (larger: close 1009 `Frame too large`), xAI frames up to 16 MiB; xAI must open within 15 s. Caller: `?ticket=` (the dashboard’s WebSocket ticket), a loopback dashboard’s `?token=`, or the credential headers of the other plugin routes; refused → accepted and closed 4401 `Dashboard sign-in required`. Limits: 10 calls a minute per profile and 30 host-wide (`Too many Grok Live connections; try again shortly`), 3 open per profile and 8 on the host (`Too many Grok Live calls are open on this host`), both 4429. Close codes: 4503 no credential, 4401 unauthorized, 4429 rate limited (also xAI’s 429), 4400 refused or a profile that cannot be resolved (xAI’s 401/403: `xAI refused the SuperGrok sign-in (HTTP n)` / `xAI refused the XAI_API_KEY (HTTP n)`; xAI’s close codes 3000–4999: `xAI closed the call (<code>): <reason>`), 4502 `Could not reach xAI` / `The connection to xAI was lost`, 4500 host failure, 1009 a frame over 256 KiB. Reasons are cut to 120 bytes.',
  tags: ['live-voice'],
  auth: 'bearer',
  query: relayedSocketQuery,
  responses: {
    101: { description: 'Switching protocols; refusals after this are close codes.', headers: upgradeHeaders },
    ...socketRefusals,
  },
});
