import { z } from 'zod';
import { defineRoute, errorBody } from '../route.js';
import {
  beforeTheRoute,
  SHARED_STATE_UNAVAILABLE,
  sharedStateUnavailable,
  sharedStateUnavailableDescription,
  unreadBodyTooLarge,
} from './shared.js';

/**
 * Lock Screen progress (Live Activities). iOS renders these payloads itself, so they cannot be sealed
 * end to end; what crosses the relay is coarse on purpose: a session id, a phase, a tool category from
 * a fixed list (never a tool's name, arguments or output), a tool count and a context percentage.
 * Registrations live in memory for at most 8 hours, the longest iOS runs an activity.
 */

const sessionId = z
  .string()
  .min(1)
  .max(180)
  .regex(/^[A-Za-z0-9:_./-]+$/);

/** What Hermes is doing. */
export const liveActivityPhase = z.enum([
  'thinking',
  'tool',
  'approval',
  'input',
  'responding',
  'done',
  'failed',
  'stopped',
]);

/** Tool categories: the only tool information that reaches the relay (left out entirely under redact). */
export const liveActivityToolCategory = z.enum([
  'terminal',
  'files',
  'web',
  'browser',
  'connector',
  'memory',
  'media',
  'agent',
  'other',
]);

export const liveActivityRegistration = z.object({
  /** The activity's APNs push token (hex), from `Activity.pushTokenUpdates`. */
  push_token: z.string().regex(/^[0-9a-f]{64,200}$/),
  /** The chat's session ids (a chat continues under a new id after compression); 1–8. */
  session_ids: z.array(sessionId).min(1).max(8),
  /** Only this paired host's reports update it (lowercase UUID); absent: any host of the installation. */
  gateway_id: z
    .string()
    .regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
    .optional(),
});

/** Route LA-1: the phone registers (or re-registers) an activity's push token. */
export const registerLiveActivity = defineRoute({
  method: 'PUT',
  path: '/v1/live-activities',
  operationId: 'registerLiveActivity',
  summary: "Register a Live Activity's push token under a chat's session ids",
  description:
    'Rate limit `live-activity:<installation>` 30/min. Re-registering a token replaces its session ids and keeps its expiry (8 hours after the first registration). A token another installation registered is refused (409), never moved. An installation holds at most 8 registrations (a ninth replaces its oldest); the relay at most 20,000 (then 503).',
  tags: ['live-activities'],
  auth: 'device',
  body: liveActivityRegistration,
  bodyReading: 'handler',
  invalidBodyCode: 'invalid_live_activity',
  responses: {
    200: {
      description: 'Registered.',
      schema: z.object({ registered: z.literal(true), expires_at: z.string() }),
    },
    400: { description: 'Malformed body or JSON.', schema: errorBody(['invalid_live_activity', 'invalid_json']) },
    401: { description: 'Unknown or inactive installation.', schema: errorBody(['unauthorized']) },
    409: {
      description:
        'Another installation registered this push token; it stays with that installation until its registration ends.',
      schema: errorBody(['live_activity_token_in_use']),
    },
    413: { description: 'Body over 32,768 characters.', schema: errorBody(['payload_too_large']) },
    429: { description: 'Rate limited.', schema: errorBody(['rate_limited']) },
    503: {
      description: `The relay holds its maximum of registrations (live_activity_capacity). ${sharedStateUnavailableDescription}`,
      schema: errorBody(['live_activity_capacity', SHARED_STATE_UNAVAILABLE]),
    },
    ...beforeTheRoute,
  },
});

/** Route LA-2: the phone forgets an activity (it ended on the phone). */
export const removeLiveActivity = defineRoute({
  method: 'DELETE',
  path: '/v1/live-activities/{push_token}',
  operationId: 'removeLiveActivity',
  summary: 'Forget a Live Activity registration',
  description:
    'Always 204 for an authenticated phone, also when the token is unknown. Rate limit `live-activity:<installation>`.',
  tags: ['live-activities'],
  auth: 'device',
  params: z.object({ push_token: z.string().regex(/^[0-9a-f]{64,200}$/) }),
  responses: {
    204: { description: 'Forgotten.' },
    401: { description: 'Unknown or inactive installation.', schema: errorBody(['unauthorized']) },
    404: { description: 'Token of the wrong shape.', schema: errorBody(['not_found']) },
    413: unreadBodyTooLarge,
    429: { description: 'Rate limited.', schema: errorBody(['rate_limited']) },
    503: sharedStateUnavailable,
    ...beforeTheRoute,
  },
});

export const liveActivityProgress = z.object({
  session_id: sessionId,
  phase: liveActivityPhase,
  /** Set while a tool runs; never sent under redact. */
  tool_category: liveActivityToolCategory.optional(),
  /** Tools the turn has used so far. */
  tool_count: z.int().min(0).max(9_999),
  /** How full the model's context is, 0–100; absent when unknown. */
  context_pct: z.int().min(0).max(100).optional(),
  /** When the turn started, UNIX seconds. */
  started_at: z.int().min(0).max(4_102_444_800),
  /** The turn ended: the activity gets an `end` event and the registrations are dropped. */
  end: z.boolean().optional(),
});

/** Route LA-3: the host reports a turn's progress; the relay pushes it to every activity watching the session. */
export const reportLiveActivityProgress = defineRoute({
  method: 'POST',
  path: '/v1/live-activities/progress',
  operationId: 'reportLiveActivityProgress',
  summary: "Report a turn's progress to the Live Activities watching its session",
  description:
    'Rate limit `live-activity-progress:<gateway>` 120/min (the plugin coalesces to one report per 5 s per watched turn). Sends APNs `liveactivity` pushes to `<APNS_TOPIC>.push-type.liveactivity` with `event` update (or end), `content-state` {phase, tool_category?, tool_count, context_pct?, started_at}, `timestamp`, `stale-date` (10 min on) and, on end, `dismissal-date` (15 min on). A token APNs refuses as gone is forgotten. `watching` tells the plugin whether to keep reporting this turn.',
  tags: ['live-activities'],
  auth: 'gateway',
  body: liveActivityProgress,
  bodyReading: 'handler',
  invalidBodyCode: 'invalid_progress',
  responses: {
    200: {
      description: 'Reported.',
      schema: z.object({
        /** At least one activity is registered for this session. */
        watching: z.boolean(),
        /** Pushes APNs accepted. */
        sent: z.int(),
      }),
    },
    400: { description: 'Malformed body or JSON.', schema: errorBody(['invalid_progress', 'invalid_json']) },
    401: { description: 'Unknown or revoked gateway credential.', schema: errorBody(['unauthorized']) },
    413: { description: 'Body over 32,768 characters.', schema: errorBody(['payload_too_large']) },
    429: { description: 'Rate limited.', schema: errorBody(['rate_limited']) },
    503: sharedStateUnavailable,
    ...beforeTheRoute,
  },
});
