import { z } from 'zod';
import { defineRoute, errorBody } from '../route.js';
import { profileQuery } from './profile.js';

/** Headers of answers that must not be cached (credentials state, keys, answers). */
export const noStore = { 'Cache-Control': 'no-store', Pragma: 'no-cache' };

/**
 * 503: the named profile cannot be resolved (never a fallback to the default profile), a state file
 * is unreadable (left unchanged), or the Hermes dashboard could not confirm the caller (fail closed).
 */
export const serviceUnavailable = {
  description: 'Profile unresolved, state file corrupt, or the dashboard could not verify the caller.',
  schema: z.object({
    error: z.enum(['profile_unavailable', 'state_file_corrupt', 'dashboard_unavailable']),
    detail: z.string().optional(),
  }),
};
export const unauthorized = {
  description: 'The caller is not accepted by the Hermes dashboard (or lacks the standalone bearer token).',
  schema: errorBody(['unauthorized']),
};

/**
 * What the host answers on a state-changing plugin route before the route runs: a body type a page of
 * another site can send without a CORS preflight (text/plain, form encodings) is refused, in both error
 * shapes (the pairing routes' clients read `detail`); a JSON body that does not parse, or is over 1 MiB.
 */
export const bodyRefusals = {
  413: { description: 'A body over 1 MiB.', schema: errorBody(['payload_too_large']) },
  415: {
    description: 'A text/plain or form body: never read, whatever the caller sends with it.',
    schema: z.object({ error: z.literal('unsupported_media_type'), detail: z.string() }),
  },
};

/** A body that is not JSON, as the host's error handler answers it. */
export const INVALID_JSON = 'invalid_json';

export const cronNotificationsResponse = z.object({
  ok: z.literal(true),
  /** Cron job ids whose runs send no reply or failure notification. */
  muted: z.array(z.string()),
});

export const getCronNotifications = defineRoute({
  method: 'GET',
  path: '/api/plugins/conduit_push/cron/notifications',
  operationId: 'getCronNotifications',
  summary: 'Cron jobs whose notifications are off',
  tags: ['plugin'],
  auth: 'bearer',
  query: profileQuery,
  responses: {
    200: { description: 'The muted job ids.', schema: cronNotificationsResponse },
    401: unauthorized,
    503: serviceUnavailable,
  },
});

export const putCronNotificationsBody = z.object({
  job_id: z
    .string()
    .trim()
    .min(1)
    .max(200)
    .regex(/^[A-Za-z0-9:_.-]+$/, 'invalid_job_id'),
  notify: z.boolean({ error: 'invalid_notify' }),
});

export const putCronNotifications = defineRoute({
  method: 'PUT',
  path: '/api/plugins/conduit_push/cron/notifications',
  operationId: 'putCronNotifications',
  summary: "Turns one cron job's notifications on or off",
  tags: ['plugin'],
  auth: 'bearer',
  query: profileQuery,
  body: putCronNotificationsBody,
  invalidBodyCode: 'invalid_request',
  responses: {
    200: { description: 'The muted job ids after the change.', schema: cronNotificationsResponse },
    400: {
      description: 'Malformed body, or a body that is not JSON.',
      schema: errorBody(['invalid_request', 'invalid_job_id', 'invalid_notify', INVALID_JSON]),
    },
    401: unauthorized,
    ...bodyRefusals,
    503: serviceUnavailable,
  },
});

export const replySourceName = z.enum(['conduit', 'desktop', 'messaging', 'terminal'], { error: 'invalid_source' });

export const replySourcesResponse = z.object({
  ok: z.literal(true),
  /** Whether a "response ready" push goes out for a turn started from each source. */
  sources: z.object({ conduit: z.boolean(), desktop: z.boolean(), messaging: z.boolean(), terminal: z.boolean() }),
});

export const putReplySourcesBody = z.object({
  source: replySourceName,
  notify: z.boolean({ error: 'invalid_notify' }),
});

export const getReplySources = defineRoute({
  method: 'GET',
  path: '/api/plugins/conduit_push/notifications/reply-sources',
  operationId: 'getReplySources',
  summary: 'Which sources send a "response ready" push',
  tags: ['plugin'],
  auth: 'bearer',
  query: profileQuery,
  responses: {
    200: { description: 'The per-source choices.', schema: replySourcesResponse },
    401: unauthorized,
    503: serviceUnavailable,
  },
});

export const putReplySources = defineRoute({
  method: 'PUT',
  path: '/api/plugins/conduit_push/notifications/reply-sources',
  operationId: 'putReplySources',
  summary: 'Turns the "response ready" push of one source on or off',
  tags: ['plugin'],
  auth: 'bearer',
  query: profileQuery,
  body: putReplySourcesBody,
  invalidBodyCode: 'invalid_request',
  responses: {
    200: { description: 'The per-source choices after the change.', schema: replySourcesResponse },
    400: {
      description: 'Malformed body, or a body that is not JSON.',
      schema: errorBody(['invalid_request', 'invalid_source', 'invalid_notify', INVALID_JSON]),
    },
    401: unauthorized,
    ...bodyRefusals,
    503: serviceUnavailable,
  },
});
