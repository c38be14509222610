import { defineRoute, errorBody } from '../route.js';
import {
  beforeTheRoute,
  SHARED_STATE_UNAVAILABLE,
  sharedStateUnavailable,
  sharedStateUnavailableDescription,
} from './shared.js';
import { grantClosedBody, grantIdParam } from './watch-tools.js';

const upgradeHeaders = {
  Upgrade: '`websocket`',
  Connection: '`Upgrade`',
  'Sec-WebSocket-Accept': 'base64(SHA-1(Sec-WebSocket-Key + RFC 6455 GUID))',
};

const bridgeDescription =
  'WebSocket (RFC 6455 subset): masked, unfragmented binary messages of at most 64 KB, ping/pong/close. The relay copies binary messages between the host and the Watch untouched and reads only the first byte, which must not be 0. Close codes: 1002 protocol error (unmasked, RSV bits, control frame over 125 bytes, message starting with 0 or empty), 1003 text or fragmented message, 1009 message over 64 KB, 4429 over 96 KB/s (RELAY_WATCH_AUDIO_BYTES_PER_S) averaged over 5 s, 4408 idle 60 s (WATCH_AUDIO_IDLE_MS), 4000 replaced by a newer socket, 4010 grant closed, 4503 (Watch) no host attached or the host went away, 1001 relay shutdown. A slow reader pauses the other side (no buffering). Plain requests without an `Upgrade` header are not routed (404 not_found); one with an `Upgrade` header the server does not switch on is 400 bad_upgrade. An upgrade to a grant id of the wrong shape gets a bare `HTTP/1.1 404 Not Found` and the connection closes.';

/** Route 21: the host attaches to a grant's audio bridge. */
export const watchAudioHost = defineRoute({
  method: 'GET',
  path: '/v1/watch-audio/{gid}/host',
  operationId: 'watchAudioHost',
  summary: "Attach the host end of a grant's audio bridge (WebSocket upgrade)",
  description: `${bridgeDescription} Host notices from the relay: binary [0x00, 0x01] Watch connected, [0x00, 0x02] Watch gone. Checks before the 101, in order: the upgrade headers (version 13, key of 22 base64 characters + "=="), the gateway credential, \`watch-audio-host:<grant>\` 30/min, the grant (owner, open), audio granted, capacity (200 bridges relay-wide, RELAY_MAX_WATCH_AUDIO_BRIDGES; 2 per gateway, RELAY_MAX_WATCH_AUDIO_BRIDGES_PER_GATEWAY).`,
  tags: ['watch'],
  auth: 'gateway',
  params: grantIdParam,
  responses: {
    101: { description: 'Switching protocols.', headers: upgradeHeaders },
    400: { description: 'Not a valid WebSocket upgrade.', schema: errorBody(['bad_upgrade']) },
    404: {
      description: 'A plain request (no Upgrade header), or a grant id of the wrong shape (then no body).',
      schema: errorBody(['not_found']),
    },
    401: { description: 'Unknown or revoked gateway credential.', schema: errorBody(['unauthorized']) },
    403: { description: 'The grant was opened without audio.', schema: errorBody(['audio_not_granted']) },
    410: { description: 'The grant closed, or is not this gateway’s.', schema: grantClosedBody },
    429: { description: 'Rate limited.', schema: errorBody(['rate_limited']) },
    503: {
      description: `Too many audio bridges (watch_audio_capacity). ${sharedStateUnavailableDescription}`,
      schema: errorBody(['watch_audio_capacity', SHARED_STATE_UNAVAILABLE]),
    },
    ...beforeTheRoute,
  },
});

/** Route 22: the Watch attaches to the bridge; the host must be attached first. */
export const watchAudioWatch = defineRoute({
  method: 'GET',
  path: '/v1/watch-audio/{gid}/watch',
  operationId: 'watchAudioWatch',
  summary: "Attach the Watch end of a grant's audio bridge (WebSocket upgrade)",
  description: `${bridgeDescription} Checks before the 101, in order: \`watch-audio-ip:<ip>\` 60/min (before auth), the upgrade headers, the grant key, \`watch-audio-watch:<grant>\` 30/min, audio granted. Without an attached host the socket opens and closes with 4503.`,
  tags: ['watch'],
  auth: 'watchKey',
  params: grantIdParam,
  responses: {
    101: { description: 'Switching protocols.', headers: upgradeHeaders },
    400: { description: 'Not a valid WebSocket upgrade.', schema: errorBody(['bad_upgrade']) },
    404: {
      description: 'A plain request (no Upgrade header), or a grant id of the wrong shape (then no body).',
      schema: errorBody(['not_found']),
    },
    401: { description: 'Missing or wrong grant key, or unknown grant.', schema: errorBody(['unauthorized']) },
    403: { description: 'The grant was opened without audio.', schema: errorBody(['audio_not_granted']) },
    410: { description: 'The grant closed.', schema: grantClosedBody },
    429: { description: 'Rate limited.', schema: errorBody(['rate_limited']) },
    503: sharedStateUnavailable,
    ...beforeTheRoute,
  },
});
