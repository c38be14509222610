import { z } from 'zod';
import { defineRoute, errorBody } from '../route.js';
import { beforeTheRoute, sharedStateUnavailable, unreadBodyTooLarge } from './shared.js';

/** Route M-1: a paired host gets the relay's shared, short-lived Apple Maps Server API access token. */
export const mintMapsToken = defineRoute({
  method: 'POST',
  path: '/v1/maps/token',
  operationId: 'mintMapsToken',
  summary: 'Get a short-lived Apple Maps Server API access token',
  description:
    "One cached token serves every host (so it identifies none), minted from the relay's Maps key (MAPS_KEY_ID, MAPS_KEY_PATH, APNS_TEAM_ID) by exchanging a signed JWT at Apple's token endpoint, and renewed a minute before it expires. Rate limit `maps-token:<gateway>` 30/min; at most RELAY_MAPS_TOKENS_PER_INSTALLATION_PER_DAY (200) tokens handed to one installation's hosts per 24 hours (`maps_token_limit`). The relay never sees a lookup: hosts call maps-api.apple.com themselves.",
  tags: ['maps'],
  auth: 'gateway',
  responses: {
    200: {
      description: 'An access token for maps-api.apple.com.',
      schema: z.object({
        access_token: z.string(),
        /** ISO 8601 time Apple's token expires. */
        expires_at: z.string(),
        /** Seconds until then. */
        expires_in: z.int(),
      }),
    },
    401: { description: 'Unknown or revoked gateway credential.', schema: errorBody(['unauthorized']) },
    404: { description: 'This relay has no Maps key.', schema: errorBody(['maps_unavailable']) },
    413: unreadBodyTooLarge,
    429: {
      description:
        "Rate limited (`rate_limited`), or the installation's hosts had their tokens for the day (`maps_token_limit`).",
      schema: errorBody(['rate_limited', 'maps_token_limit']),
    },
    502: { description: "Apple's token endpoint failed or refused the key.", schema: errorBody(['maps_unreachable']) },
    503: sharedStateUnavailable,
    ...beforeTheRoute,
  },
});
