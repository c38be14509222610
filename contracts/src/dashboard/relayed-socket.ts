import { z } from 'zod';
import { profileQuery } from './profile.js';

/** The query of the relayed-call sockets: the profile and the dashboard's WebSocket credential. */
export const relayedSocketQuery = profileQuery.extend({
  /** The dashboard's single-use WebSocket ticket (`POST /api/auth/ws-ticket`, valid 30 s). */
  ticket: z.string().max(512).optional(),
  /** A loopback dashboard's session token (the dashboard takes it on sockets only there). */
  token: z.string().max(512).optional(),
});

export const upgradeHeaders = {
  Upgrade: '`websocket`',
  Connection: '`Upgrade`',
  'Sec-WebSocket-Accept': 'base64(SHA-1(Sec-WebSocket-Key + RFC 6455 GUID))',
};

export const socketRefusals = {
  403: {
    description:
      'The WebSocket credential was refused and more than 30 refusals happened this minute host-wide: the upgrade is not accepted.',
  },
  426: {
    description: 'A plain GET: this route is a WebSocket.',
    schema: z.object({ detail: z.string() }),
  },
};
