import { z } from 'zod';
import { defineRoute } from '../route.js';
import { relayedSocketQuery, socketRefusals, upgradeHeaders } from './relayed-socket.js';

/** The speech-server socket's query: the relayed-call query and Classic voice's reply mode. */
export const localLiveSocketQuery = relayedSocketQuery.extend({ mode: z.enum(['speak']).optional() });

/**
 * The speech-server relay (WebSocket): Conduit's OpenAI-Realtime events to the speech-to-speech server
 * set in `voice.speech_server` and back, unchanged, with `Authorization: Bearer <api_key>` when a key
 * is set; Local Live's turn frames (local-live.ts) ride beside them and stay on the host.
 */
export const localLiveSocket = defineRoute({
  method: 'GET',
  path: '/api/plugins/conduit_push/local-live/socket',
  operationId: 'localLiveSocket',
  summary: 'Relay a call to the configured speech-to-speech server (WebSocket upgrade)',
  description:
    'WebSocket. Text and binary frames are relayed both ways unchanged; client frames up to 256 KiB (larger: close 1009 `Frame too large`); the server must open within 15 s; a socket that sends nothing for 60 s is closed 1000. `mode=speak` is Classic voice’s reply voice (relayed the same way; the sentences it sends as a user `conversation.item.create` are what the Local Live model routes read back). Local Live: the host sends `{"type":"conduit.turn","turn_id","text"}` and `{"type":"conduit.turn.cancel","turn_id"}` on the profile’s newest socket (not a speak one); the app’s `conduit.turn.delta` / `conduit.turn.done` / `conduit.turn.error` frames are read by the host and never relayed to the speech server. Caller as for the Grok Live socket (4401 `Dashboard sign-in required`). Close codes: 4503 no speech server set or its URL is not usable (plain ws:// only to loopback, private, link-local, Tailscale or LAN-style names), 4401 unauthorized, 4429 rate limited (10 a minute per profile, 30 host-wide; 2 open per profile, 8 on the host), 4400 the server refused (a 4xx answer or a close code 3000–4999) or a profile that cannot be resolved, 4502 unreachable or dropped (retryable), 4500 the relay failed on the host, 1009 a frame over 256 KiB.',
  tags: ['live-voice'],
  auth: 'bearer',
  query: localLiveSocketQuery,
  responses: {
    101: { description: 'Switching protocols; refusals after this are close codes.', headers: upgradeHeaders },
    ...socketRefusals,
  },
});
