import { z } from 'zod';
import { defineRoute, errorBody } from '../route.js';
import {
  beforeTheRoute,
  firstQueryValue,
  SHARED_STATE_UNAVAILABLE,
  sharedStateUnavailable,
  sharedStateUnavailableDescription,
  unreadBodyTooLarge,
} from './shared.js';

/** Grant and call ids: 16 random bytes, base64url (22 characters). */
export const watchIdPattern = /^[A-Za-z0-9_-]{22}$/;
const b64url = /^[A-Za-z0-9_-]+$/;

export const grantIdParam = z.object({
  gid: z
    .string()
    .regex(watchIdPattern)
    .describe('Grant id (22 base64url characters); any other id answers 404 not_found.'),
});

/** Why a grant closed, as answered to requests it held and in 410 grant_closed bodies. */
export const grantCloseReason = z.enum(['expired', 'replaced', 'host', 'watch']);

export const grantClosedBody = z.object({ error: z.literal('grant_closed'), reason: grantCloseReason });

/** Body of POST /v1/watch-tools/grants. Strict types: `"600"` for a number is 400 invalid_grant. */
export const watchGrantRequest = z.object({
  /** SHA-256 (lowercase hex) of the Watch key; the relay never sees the key itself. */
  watch_key_sha256: z.string().regex(/^[0-9a-f]{64}$/),
  /** Lifetime in seconds, 60–1800. */
  ttl_s: z.int().min(60).max(1800),
  /** Calls the Watch may make over the grant's life, 1–120. */
  max_calls: z.int().min(1).max(120),
  /** Also open the Watch audio bridge for this grant. */
  audio: z.boolean().optional(),
});

export const watchGrantResponse = z.object({
  grant_id: z.string(),
  /** ISO 8601 time the grant closes as `expired`. */
  expires_at: z.string(),
  /** How long the relay holds a Watch call for the host's answer, in ms. */
  call_wait_ms: z.int(),
  audio: z.boolean(),
});

/** Route 16: a host opens a grant for one Watch call's sealed lookups. */
export const createWatchGrant = defineRoute({
  method: 'POST',
  path: '/v1/watch-tools/grants',
  operationId: 'createWatchGrant',
  summary: 'Open a Watch tool grant',
  description:
    'Rate limit `watch-grant:<gateway>` 12/min. A gateway holds at most 4 live grants (RELAY_MAX_WATCH_GRANTS_PER_GATEWAY): a fifth closes its oldest as `replaced`. Relay-wide at most 2,048 (RELAY_MAX_WATCH_GRANTS), then 503. Grants live in memory only.',
  tags: ['watch'],
  auth: 'gateway',
  body: watchGrantRequest,
  bodyReading: 'handler',
  invalidBodyCode: 'invalid_grant',
  responses: {
    201: { description: 'Grant opened.', schema: watchGrantResponse },
    400: { description: 'Malformed body or JSON.', schema: errorBody(['invalid_grant', 'invalid_json']) },
    401: { description: 'Unknown or revoked gateway credential.', schema: errorBody(['unauthorized']) },
    413: { description: 'Body over 32,768 characters.', schema: errorBody(['payload_too_large']) },
    429: { description: 'Rate limited.', schema: errorBody(['rate_limited']) },
    503: {
      description: `The relay holds its maximum of grants (watch_grant_capacity). ${sharedStateUnavailableDescription}`,
      schema: errorBody(['watch_grant_capacity', SHARED_STATE_UNAVAILABLE]),
    },
    ...beforeTheRoute,
  },
});

/** Body of a Watch call: a call id and the call sealed for the host (the relay never sees plaintext). */
export const watchCallRequest = z.object({
  rid: z.string().regex(watchIdPattern),
  n: z.string().regex(/^[A-Za-z0-9_-]{16}$/),
  ct: z.string().min(22).max(5483).regex(b64url),
});

export const sealedMessage = z.object({ n: z.string(), ct: z.string() });

/** Route 17: the Watch posts a sealed call; the request is held until the host answers. */
export const postWatchCall = defineRoute({
  method: 'POST',
  path: '/v1/watch-tools/grants/{gid}/calls',
  operationId: 'postWatchCall',
  summary: 'Make a sealed Watch tool call (held open)',
  description:
    'Limits in order: `watch-call-ip:<ip>` 120/min (before auth), the grant key, `watch-call:<grant>` 30/min, `watch-call-global` (RELAY_WATCH_CALLS_PER_MINUTE, 1,200/min), then the body. Held until the host posts the result (200) or 25 s (504, WATCH_CALL_WAIT_MS). With no host poll waiting and the host unseen for 40 s (WATCH_HOST_GONE_MS): 503 at once. At most 2 calls wait per grant; `rid` is single-use; a client that disconnects drops its call.',
  tags: ['watch'],
  auth: 'watchKey',
  params: grantIdParam,
  body: watchCallRequest,
  bodyReading: 'handler',
  invalidBodyCode: 'invalid_call',
  responses: {
    200: { description: "The host's sealed answer.", schema: sealedMessage },
    400: { description: 'Malformed call or JSON.', schema: errorBody(['invalid_call', 'invalid_json']) },
    401: { description: 'Missing or wrong grant key, or unknown grant.', schema: errorBody(['unauthorized']) },
    404: { description: 'Grant id of the wrong shape.', schema: errorBody(['not_found']) },
    409: { description: 'This rid was already used on the grant.', schema: errorBody(['duplicate_call']) },
    410: { description: 'The grant closed (also answered to held calls).', schema: grantClosedBody },
    413: { description: 'Body over 32,768 characters.', schema: errorBody(['payload_too_large']) },
    429: {
      description: 'Grant out of calls, two calls already waiting, or rate limited.',
      schema: errorBody(['grant_exhausted', 'too_many_calls', 'rate_limited']),
    },
    503: {
      description: `The host has not polled for 40 s, or the replica holding the grant went away (host_offline). ${sharedStateUnavailableDescription}`,
      schema: errorBody(['host_offline', SHARED_STATE_UNAVAILABLE]),
    },
    504: { description: 'The host did not answer within 25 s.', schema: errorBody(['host_timeout']) },
    ...beforeTheRoute,
  },
});

export const hostPollQuery = z.object({
  wait_ms: firstQueryValue(z.string().optional()).describe(
    'Longest wait in ms, capped at 25,000 (WATCH_HOST_POLL_WAIT_MS); missing or invalid means the cap.',
  ),
});

export const hostPollResponse = z.object({
  calls: z.array(z.object({ rid: z.string(), n: z.string(), ct: z.string() })),
});

/** Route 18: the host long-polls for the Watch's sealed calls. */
export const pollWatchCalls = defineRoute({
  method: 'GET',
  path: '/v1/watch-tools/grants/{gid}/calls',
  operationId: 'pollWatchCalls',
  summary: "Long-poll a grant's Watch calls",
  description:
    'Answers at once with queued calls, otherwise holds until a call arrives or `wait_ms` passes. One poll per grant: a newer poll answers the older with `{calls: []}`. A new or completed poll marks the host seen; a dropped one does not. Rate limit `watch-poll:<grant>` 240/min.',
  tags: ['watch'],
  auth: 'gateway',
  params: grantIdParam,
  query: hostPollQuery,
  responses: {
    200: { description: 'Calls to run (possibly none).', schema: hostPollResponse },
    401: { description: 'Unknown or revoked gateway credential.', schema: errorBody(['unauthorized']) },
    404: { description: 'Grant id of the wrong shape.', schema: errorBody(['not_found']) },
    410: { description: 'The grant closed, or is not this gateway’s.', schema: grantClosedBody },
    429: { description: 'Rate limited.', schema: errorBody(['rate_limited']) },
    503: sharedStateUnavailable,
    ...beforeTheRoute,
  },
});

export const ridParams = z.object({
  gid: z.string().regex(watchIdPattern),
  rid: z.string().regex(watchIdPattern),
});

export const watchResultRequest = z.object({
  n: z.string().regex(/^[A-Za-z0-9_-]{16}$/),
  ct: z.string().min(1).max(24_000).regex(b64url),
});

/** Route 19: the host posts a call's sealed answer; the held Watch request gets it. */
export const postWatchResult = defineRoute({
  method: 'POST',
  path: '/v1/watch-tools/grants/{gid}/results/{rid}',
  operationId: 'postWatchResult',
  summary: "Answer a Watch call with the host's sealed result",
  description: 'Rate limit `watch-result:<grant>` 120/min.',
  tags: ['watch'],
  auth: 'gateway',
  params: ridParams,
  body: watchResultRequest,
  bodyReading: 'handler',
  invalidBodyCode: 'invalid_result',
  responses: {
    200: { description: 'Handed to the waiting Watch request.', schema: z.object({ status: z.literal('delivered') }) },
    400: { description: 'Malformed result or JSON.', schema: errorBody(['invalid_result', 'invalid_json']) },
    401: { description: 'Unknown or revoked gateway credential.', schema: errorBody(['unauthorized']) },
    404: {
      description: 'No call with this rid is waiting (timed out, dropped, answered), or an id of the wrong shape.',
      schema: errorBody(['unknown_call', 'not_found']),
    },
    410: { description: 'The grant closed, or is not this gateway’s.', schema: grantClosedBody },
    413: { description: 'Body over 32,768 characters.', schema: errorBody(['payload_too_large']) },
    429: { description: 'Rate limited.', schema: errorBody(['rate_limited']) },
    503: sharedStateUnavailable,
    ...beforeTheRoute,
  },
});

/** Route 20: either side closes the grant. */
export const closeWatchGrant = defineRoute({
  method: 'DELETE',
  path: '/v1/watch-tools/grants/{gid}',
  operationId: 'closeWatchGrant',
  summary: 'Close a Watch tool grant',
  description:
    "The owning gateway's credential closes it as `host`, the grant key as `watch`. Always 204, also for a wrong key or a foreign grant, so the answer reveals nothing. The Watch branch is rate limited with `watch-call-ip`.",
  tags: ['watch'],
  auth: 'gateway',
  params: grantIdParam,
  responses: {
    204: { description: 'Closed, or nothing to close.' },
    404: { description: 'Grant id of the wrong shape.', schema: errorBody(['not_found']) },
    413: unreadBodyTooLarge,
    503: sharedStateUnavailable,
    ...beforeTheRoute,
  },
});
