import { z } from 'zod';
import { defineRoute } from '../route.js';
import {
  beforeTheRoute,
  errorOf,
  hasVisibleText,
  lenient,
  malformedId,
  rateLimited,
  sharedStateUnavailable,
  tooLarge,
  unauthorized,
  unreadBodyTooLarge,
} from './shared.js';

const decisionParams = z.object({ id: z.string().regex(/^[A-Za-z0-9_-]{4,128}$/) });

const respondBody = z.object({
  answer: z
    .string()
    .refine(hasVisibleText)
    .describe('≤2,000 characters, or a sealed `e2e1.…` answer kept whole (≤11,000).'),
  question_id: lenient(z.string()).describe('≤40 characters; a batch answer names its question.'),
  gateway_id: lenient(z.string()).describe('The host that parked the decision (older apps leave it out).'),
});

const respondResponses = {
  200: {
    description: 'Recorded; a batch answers with its still-open question ids.',
    schema: z.object({ status: z.literal('answered'), remaining: z.array(z.string()).optional() }),
  },
  400: {
    description: 'Invalid answer, unknown question, or an ambiguous legacy answer.',
    schema: errorOf(['invalid_json', 'invalid_answer', 'ambiguous_decision', 'invalid_question_id']),
  },
  401: unauthorized,
  404: {
    description: 'No such decision, or an id of the wrong shape.',
    schema: errorOf(['unknown_decision', 'not_found']),
  },
  409: { description: 'Already answered (first answer wins).', schema: errorOf(['already_answered']) },
  410: { description: 'The host released the decision.', schema: errorOf(['decision_released']) },
  413: tooLarge,
  429: rateLimited,
  503: sharedStateUnavailable,
  ...beforeTheRoute,
} as const;

/** Route 11: a device answers a parked clarify decision. */
export const respondDecision = defineRoute({
  method: 'POST',
  path: '/v1/decisions/{id}/respond',
  operationId: 'respondDecision',
  summary: 'Answer a decision',
  tags: ['decisions'],
  auth: 'device',
  params: decisionParams,
  bodyReading: 'handler',
  body: respondBody,
  bodyErrorCodes: { answer: 'invalid_answer' },
  responses: respondResponses,
});

/** Route 11 (alias kept for pre-batch app builds): the same handler. */
export const respondDecisionLegacy = defineRoute({
  method: 'POST',
  path: '/v1/decisions/{id}',
  operationId: 'respondDecisionLegacy',
  summary: 'Answer a decision (legacy path)',
  tags: ['decisions'],
  auth: 'device',
  params: decisionParams,
  bodyReading: 'handler',
  body: respondBody,
  bodyErrorCodes: { answer: 'invalid_answer' },
  responses: respondResponses,
});

/** Route 12: the host's short poll. */
export const pollDecision = defineRoute({
  method: 'GET',
  path: '/v1/decisions/{id}',
  operationId: 'pollDecision',
  summary: 'Poll a decision',
  tags: ['decisions'],
  auth: 'gateway',
  params: decisionParams,
  responses: {
    200: {
      description: 'unknown (missing, expired, released, other gateway), pending or answered.',
      schema: z.object({
        status: z.enum(['unknown', 'pending', 'answered']),
        deliverable: z.boolean().optional(),
        answer: z.string().optional(),
        answers: z.record(z.string(), z.string()).optional(),
        remaining: z.array(z.string()).optional(),
      }),
    },
    401: unauthorized,
    404: malformedId,
    429: rateLimited,
    503: sharedStateUnavailable,
    ...beforeTheRoute,
  },
});

/** Route 13: the host releases a decision (its native path won). */
export const releaseDecision = defineRoute({
  method: 'DELETE',
  path: '/v1/decisions/{id}',
  operationId: 'releaseDecision',
  summary: 'Release a decision',
  tags: ['decisions'],
  auth: 'gateway',
  params: decisionParams,
  responses: {
    200: {
      description: 'Released, or it had already completed.',
      schema: z.object({ status: z.enum(['cancelled', 'already_completed']) }),
    },
    401: unauthorized,
    404: {
      description: 'No such decision, or an id of the wrong shape.',
      schema: errorOf(['unknown_decision', 'not_found']),
    },
    413: unreadBodyTooLarge,
    429: rateLimited,
    503: sharedStateUnavailable,
    ...beforeTheRoute,
  },
});
