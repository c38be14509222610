import { z } from 'zod';
import { defineRoute } from '../route.js';
import { detailAnswer, detailBodyRefusals, detailUnavailable, noStoreAnswer } from './detail-error.js';
import { unauthorized } from './notification-settings.js';
import { profileQuery } from './profile.js';

/**
 * Calls from Hermes (ROUTES.md "Calls from Hermes", the seed's "call me when it's done"): the
 * profile's call settings, call watches held while a Live Voice call goes on, presence, and declined
 * or missed calls reported by the phone. Errors are `{"detail"}` answers with the reference's texts.
 */

/** Inclusive bounds of the numeric settings, as `GET /calls` reports them. */
export const CALL_SETTING_BOUNDS = {
  min_gap_s: { min: 30, max: 3600 },
  per_hour: { min: 1, max: 30 },
  per_day: { min: 1, max: 60 },
} as const;

/** The longest rules text. */
export const CALL_RULES_MAX = 500;

export const callSettings = z.object({
  /** Calls from Hermes at all (off until the user turns them on). */
  enabled: z.boolean(),
  /** "Call when I ask": calls the user asked for. */
  when_asked: z.boolean(),
  /** "Hermes decides": calls Hermes places on its own judgement. */
  decides: z.boolean(),
  /** Alert calls: an approval or question unanswered for a minute, a failed turn. */
  alerts: z.boolean(),
  /** Seconds between two calls. */
  min_gap_s: z.int(),
  per_hour: z.int(),
  per_day: z.int(),
  /** The user's own words on what is worth a call. */
  rules: z.string(),
  /**
   * Saved place ids (the phone's, as location shares them) where a call goes out as a notification
   * instead of ringing (the seed, "No calls at places"). At most CALL_AVOID_PLACES_MAX.
   */
  avoid_places: z.array(z.string()),
  /** Also hold calls when there's no recent location, or location sharing is paused or off. */
  avoid_unknown_place: z.boolean(),
});

/** The most avoided places: a phone shares at most 20 saved places. */
export const CALL_AVOID_PLACES_MAX = 20;

const bound = z.object({ min: z.int(), max: z.int() });

export const callsResponse = z.object({
  ok: z.literal(true),
  paired: z.boolean(),
  settings: callSettings,
  bounds: z.object({ min_gap_s: bound, per_hour: bound, per_day: bound }),
  rules_max: z.int(),
  /** Watches that have not expired. */
  watches: z.int(),
});

const callsErrors = {
  401: unauthorized,
  429: detailAnswer(
    'More than 30 call requests a minute for this profile (`Too many call requests; try again shortly`).',
  ),
  500: detailAnswer('An unexpected failure, named by its type only.'),
  503: detailUnavailable('The profile cannot be resolved, or its conduit-calls.json cannot be read (left unchanged).'),
};

const notPaired = detailAnswer("This Hermes profile isn't paired with Conduit.");

export const getCalls = defineRoute({
  method: 'GET',
  path: '/api/plugins/conduit_push/calls',
  operationId: 'getCalls',
  summary: "The profile's Calls from Hermes settings",
  tags: ['calls'],
  auth: 'bearer',
  query: profileQuery,
  responses: { 200: noStoreAnswer('Settings, their bounds and the open watches.', callsResponse), ...callsErrors },
});

export const putCallsRequest = z.object({
  /** Any subset of the settings; an unknown key or a value out of range refuses the whole change. */
  settings: callSettings.partial(),
});

export const putCalls = defineRoute({
  method: 'PUT',
  path: '/api/plugins/conduit_push/calls',
  operationId: 'putCalls',
  summary: 'Change Calls from Hermes settings',
  tags: ['calls'],
  auth: 'bearer',
  query: profileQuery,
  body: putCallsRequest,
  bodyContentType: 'application/json',
  responses: {
    200: noStoreAnswer('The settings now in force.', z.object({ ok: z.literal(true), settings: callSettings })),
    ...detailBodyRefusals,
    ...callsErrors,
  },
});

export const WATCH_ID_PATTERN = /^[0-9a-f]{24}$/;
export const callOutcome = z.enum(['done', 'failed']);

export const postCallWatchRequest = z.object({
  /** The job's runtime and stored session ids, 1 to 4. */
  session_ids: z.array(z.string()).min(1).max(4),
  /** At most 120 characters. */
  title: z.string().optional(),
  /** Seconds the watch is held while the call goes on (0–600). */
  hold_s: z.int().min(0).max(600).optional(),
  /** Answer `ended` when one of the sessions ended within this many seconds (0–1800). */
  ended_within_s: z.int().min(0).max(1800).optional(),
});

export const callWatchAnswer = z.union([
  z.object({ ok: z.literal(true), status: z.literal('watching'), id: z.string() }),
  z.object({ ok: z.literal(true), status: z.literal('ended'), outcome: callOutcome }),
]);

export const postCallWatch = defineRoute({
  method: 'POST',
  path: '/api/plugins/conduit_push/calls/watches',
  operationId: 'postCallWatch',
  summary: "Watch a job's sessions and call when its turn ends",
  tags: ['calls'],
  auth: 'bearer',
  query: profileQuery,
  body: postCallWatchRequest,
  bodyContentType: 'application/json',
  responses: {
    200: noStoreAnswer(
      'Watching (a session already watched keeps its one watch), or the job has already ended.',
      callWatchAnswer,
    ),
    ...detailBodyRefusals,
    409: detailAnswer(
      'Not paired with Conduit, or `Calls are off for this Hermes profile` (or "call when I ask" is off).',
    ),
    ...callsErrors,
    429: detailAnswer(
      'More than 30 call requests a minute, or 20 watches already (`Too many jobs are already waiting to call you`).',
    ),
  },
});

export const putCallWatchRequest = z.object({ hold_s: z.int().min(0).max(600) });

export const putCallWatch = defineRoute({
  method: 'PUT',
  path: '/api/plugins/conduit_push/calls/watches/{watch_id}',
  operationId: 'putCallWatch',
  summary: "Renew or release a watch's hold",
  tags: ['calls'],
  auth: 'bearer',
  query: profileQuery,
  params: z.object({ watch_id: z.string() }),
  body: putCallWatchRequest,
  bodyContentType: 'application/json',
  responses: {
    200: noStoreAnswer(
      'Still watching, gone (expired, fired or removed), or ended during the hold (released with hold_s 0: consumed).',
      z.union([
        z.object({ ok: z.literal(true), status: z.enum(['watching', 'gone']) }),
        z.object({ ok: z.literal(true), status: z.literal('ended'), outcome: callOutcome }),
      ]),
    ),
    ...detailBodyRefusals,
    ...callsErrors,
  },
});

export const deleteCallWatch = defineRoute({
  method: 'DELETE',
  path: '/api/plugins/conduit_push/calls/watches/{watch_id}',
  operationId: 'deleteCallWatch',
  summary: 'Remove a watch',
  tags: ['calls'],
  auth: 'bearer',
  query: profileQuery,
  params: z.object({ watch_id: z.string() }),
  responses: {
    200: noStoreAnswer('Whether a watch was removed.', z.object({ ok: z.literal(true), removed: z.boolean() })),
    400: detailAnswer('`Unknown watch id` (not 24 hex digits).'),
    ...callsErrors,
  },
});

export const putCallPresenceRequest = z.object({ hold_s: z.int().min(0).max(600) });

export const putCallPresence = defineRoute({
  method: 'PUT',
  path: '/api/plugins/conduit_push/calls/presence',
  operationId: 'putCallPresence',
  summary: 'Hold presence while the user is in a Live Voice call (nothing rings meanwhile)',
  tags: ['calls'],
  auth: 'bearer',
  query: profileQuery,
  body: putCallPresenceRequest,
  bodyContentType: 'application/json',
  responses: {
    200: noStoreAnswer(
      'Present for hold_s seconds, or away (hold_s 0).',
      z.object({ ok: z.literal(true), status: z.enum(['present', 'away']) }),
    ),
    ...detailBodyRefusals,
    409: notPaired,
    ...callsErrors,
  },
});

export const postCallOutcomeRequest = z.object({
  /** 8–64 of `[A-Za-z0-9_-]`; a retried report of the same call keeps the first. */
  call_id: z.string(),
  session_ids: z.array(z.string()).max(4),
  outcome: z.enum(['declined', 'missed']),
  kind: z.string().optional(),
  title: z.string().optional(),
  reason: z.string().optional(),
  /** How long ago, on the phone's clock (0–86399 s). */
  age_s: z.int().min(0).max(86_399).optional(),
});

export const postCallOutcome = defineRoute({
  method: 'POST',
  path: '/api/plugins/conduit_push/calls/outcomes',
  operationId: 'postCallOutcome',
  summary: 'Report a declined or missed call; the next turn of its sessions hears it once',
  tags: ['calls'],
  auth: 'bearer',
  query: profileQuery,
  body: postCallOutcomeRequest,
  bodyContentType: 'application/json',
  responses: {
    200: noStoreAnswer(
      'Recorded (idempotent per call_id).',
      z.object({ ok: z.literal(true), status: z.literal('recorded') }),
    ),
    ...detailBodyRefusals,
    409: notPaired,
    ...callsErrors,
  },
});
