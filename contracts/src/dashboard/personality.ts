import { z } from 'zod';
import { defineRoute } from '../route.js';
import { detailAnswer, detailUnavailable, noStoreAnswer } from './detail-error.js';
import { unauthorized } from './notification-settings.js';
import { profileQuery } from './profile.js';

export const personalityResponse = z.object({
  ok: z.literal(true),
  /** False with empty text when the profile has no SOUL.md or it is empty. */
  available: z.boolean(),
  /** The profile's SOUL.md, at most 8,000 characters. */
  text: z.string(),
});

export const getPersonality = defineRoute({
  method: 'GET',
  path: '/api/plugins/conduit_push/personality',
  operationId: 'getPersonality',
  summary: "The profile's personality (SOUL.md), for a voice model",
  tags: ['live-voice'],
  auth: 'bearer',
  query: profileQuery,
  responses: {
    200: noStoreAnswer('The personality text.', personalityResponse),
    401: unauthorized,
    429: detailAnswer('More than 30 personality requests a minute for this profile.'),
    500: detailAnswer('An unexpected failure, named by its type only.'),
    503: detailUnavailable('The profile cannot be resolved.'),
    504: detailAnswer('Reading SOUL.md took more than 10 seconds.'),
  },
});
