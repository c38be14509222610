import { z } from 'zod';
import { defineRoute } from '../route.js';
import { detailAnswer, detailBodyRefusals, detailUnavailable, noStoreAnswer } from './detail-error.js';
import { unauthorized } from './notification-settings.js';
import { profileQuery } from './profile.js';

export const memoryContextResponse = z.object({
  ok: z.literal(true),
  available: z.boolean(),
  /** `disabled`: memory is off, or nothing is stored yet; `unsupported`: this Hermes has no memory modules. */
  reason: z.enum(['disabled', 'unsupported']).optional(),
  /** `builtin`, the external provider named by `memory.provider`, or null. */
  provider: z.string().nullable(),
  /** Whether POST /memory/recall reaches an external provider. */
  recall: z.boolean(),
  /** The built-in MEMORY.md / USER.md snapshot Hermes puts in its system prompt, at most 8,000 characters. */
  context: z.string(),
});

export const getMemoryContext = defineRoute({
  method: 'GET',
  path: '/api/plugins/conduit_push/memory/context',
  operationId: 'getMemoryContext',
  summary: "The profile's built-in memory, for a voice model",
  tags: ['live-voice'],
  auth: 'bearer',
  query: profileQuery,
  responses: {
    200: noStoreAnswer('The snapshot and what recall can do.', memoryContextResponse),
    401: unauthorized,
    429: detailAnswer('More than 30 memory requests a minute for this profile.'),
    500: detailAnswer('An unexpected failure, named by its type only.'),
    502: detailAnswer('The memory provider failed.'),
    503: detailUnavailable('The profile cannot be resolved, or its memory provider is not responding.'),
    504: detailAnswer('Reading memory took more than 10 seconds.'),
  },
});

export const memoryRecallRequest = z.object({
  /** At most 500 characters once whitespace is collapsed. */
  query: z.string(),
});

export const memoryRecallResponse = z.object({
  ok: z.literal(true),
  available: z.boolean(),
  /** The provider's recall for the query, at most 4,000 characters; empty without a provider. */
  results: z.string(),
});

export const postMemoryRecall = defineRoute({
  method: 'POST',
  path: '/api/plugins/conduit_push/memory/recall',
  operationId: 'postMemoryRecall',
  summary: "Recall from the profile's external memory provider",
  tags: ['live-voice'],
  auth: 'bearer',
  query: profileQuery,
  body: memoryRecallRequest,
  bodyContentType: 'application/json',
  responses: {
    200: noStoreAnswer('The recall, or available false without a provider.', memoryRecallResponse),
    401: unauthorized,
    ...detailBodyRefusals,
    429: detailAnswer('More than 30 memory lookups a minute for this profile.'),
    500: detailAnswer('An unexpected failure, named by its type only.'),
    502: detailAnswer('The memory provider failed.'),
    503: detailUnavailable('The profile cannot be resolved, or its memory provider is not responding.'),
    504: detailAnswer('The recall took more than 10 seconds.'),
  },
});
