import { z } from 'zod';
import { defineRoute } from '../route.js';
import {
  beforeTheRoute,
  errorOf,
  firstQueryValue,
  lenient,
  rateLimited,
  sharedStateUnavailable,
  tooLarge,
  unauthorized,
} from './shared.js';

const unknownRing = {
  description: 'Unknown ring or wrong token (indistinguishable), or a ring id of the wrong shape.',
  schema: errorOf(['unknown_ring', 'not_found']),
};

const ringParams = z.object({ ringId: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/) });
const ringToken = z.string().regex(/^[A-Za-z0-9_-]{43}$/);

/** Route 5: the phone or the Watch answered or declined; the other device gets a stop push. */
export const settleRing = defineRoute({
  method: 'POST',
  path: '/v1/rings/{ringId}/settled',
  operationId: 'settleRing',
  summary: 'Settle a ring',
  tags: ['rings'],
  auth: 'ring',
  params: ringParams,
  bodyReading: 'handler',
  body: z.object({
    token: ringToken,
    by: z.enum(['phone', 'watch']),
    outcome: z.enum(['answered', 'declined']),
    start: lenient(z.string().regex(/^[A-Za-z0-9_-]{1,1024}$/)).describe(
      'Sealed call start from the Watch (≤1,024 base64url), forwarded to the phone; a malformed one is dropped.',
    ),
  }),
  invalidBodyCode: 'invalid_settle',
  responses: {
    200: {
      description: 'Settled; notified says a stop push went to the other device.',
      schema: z.object({ settled: z.literal(true), notified: z.boolean() }),
    },
    400: { description: 'Invalid body.', schema: errorOf(['invalid_json', 'invalid_settle']) },
    404: unknownRing,
    409: {
      description: 'Already settled; says how.',
      schema: z.object({
        error: z.literal('already_settled'),
        settled: z.object({ by: z.enum(['phone', 'watch']), outcome: z.enum(['answered', 'declined']) }),
      }),
    },
    413: tooLarge,
    429: rateLimited,
    503: sharedStateUnavailable,
    ...beforeTheRoute,
  },
});

/** Route 6: the phone stores the sealed session of a call answered on the Watch. */
export const storeRingSession = defineRoute({
  method: 'PUT',
  path: '/v1/rings/{ringId}/session',
  operationId: 'storeRingSession',
  summary: 'Store a ring session',
  tags: ['rings'],
  auth: 'ring',
  params: ringParams,
  bodyReading: 'handler',
  body: z.object({ token: ringToken, sealed: z.string().regex(/^[A-Za-z0-9_-]{1,98304}$/) }),
  invalidBodyCode: 'invalid_session',
  responses: {
    200: { description: 'Stored for 2 minutes.', schema: z.object({ stored: z.literal(true) }) },
    400: { description: 'Invalid body.', schema: errorOf(['invalid_json', 'invalid_session']) },
    404: unknownRing,
    409: { description: 'The ring was not answered on the Watch.', schema: errorOf(['not_answered_on_watch']) },
    413: tooLarge,
    503: sharedStateUnavailable,
    ...beforeTheRoute,
  },
});

/** Route 7: the Watch fetches that session, waiting up to 20 s. */
export const fetchRingSession = defineRoute({
  method: 'GET',
  path: '/v1/rings/{ringId}/session',
  operationId: 'fetchRingSession',
  summary: 'Fetch a ring session',
  tags: ['rings'],
  auth: 'ring',
  params: ringParams,
  query: z.object({
    wait: firstQueryValue(z.string().optional()).describe('Seconds to wait, at most 20; anything else: none.'),
  }),
  responses: {
    200: { description: 'The sealed session.', schema: z.object({ sealed: z.string() }) },
    204: { description: 'Nothing stored in time.' },
    401: unauthorized,
    404: unknownRing,
    409: {
      description: 'Not answered on the Watch, or two fetches already wait.',
      schema: errorOf(['not_answered_on_watch', 'busy']),
    },
    503: sharedStateUnavailable,
    ...beforeTheRoute,
  },
});
