import { z } from 'zod';
import { defineRoute } from '../route.js';
import { detailAnswer, detailBodyRefusals, detailUnavailable, noStoreNoCache } from './detail-error.js';
import { unauthorized } from './notification-settings.js';
import { profileQuery } from './profile.js';
import { watchAudioGrant } from './watch-audio.js';

/**
 * What a Watch grant may run (ROUTES.md, Watch tools; `find_chat` and `read_chat` from the seed's
 * plugin 0.18). Jobs' `job_news` and `answer_approval` ride with them.
 */
export const GRANTABLE_WATCH_TOOLS = [
  'web_search',
  'recall_memory',
  'start_job',
  'list_jobs',
  'cancel_job',
  'interrupt_job',
  'live_token',
  'find_chat',
  'read_chat',
] as const;
export type GrantableWatchTool = (typeof GRANTABLE_WATCH_TOOLS)[number];

/** Added to a grant that carries jobs; the Watch never asks for them by name. */
export const WATCH_JOB_COMPANION_TOOLS = ['job_news', 'answer_approval'] as const;

/** A grant id (also a call's `rid`): 16 random bytes as unpadded base64url. */
export const watchGrantIdPattern = /^[A-Za-z0-9_-]{22}$/;

/** The phone's voice-job model choices, kept for the jobs a call starts. */
export const watchJobOptions = z.object({
  model: z.string().max(200).optional(),
  provider: z.string().max(200).optional(),
  reasoning_effort: z.string().max(40).optional(),
});

/**
 * Body of `POST /watch-tools/grant`. Read by the host's own rules (messages as ROUTES.md words them),
 * so this schema documents the shape rather than deciding it.
 */
export const watchToolsGrantRequest = z.object({
  /** Non-empty; each one of GRANTABLE_WATCH_TOOLS. */
  tools: z.array(z.enum(GRANTABLE_WATCH_TOOLS)).min(1),
  /** Jobs one call may start, 0–20 (default 5; a renewal that leaves it out keeps the call's). */
  max_jobs: z.int().min(0).max(20).optional(),
  audio: z.boolean().optional(),
  /** The call's previous grant, whose jobs move to this one while it is open on the same profile. */
  carry_jobs_from: z.string().regex(watchGrantIdPattern).optional(),
  /** Other profiles a call's jobs may run on, at most 32 names. */
  job_profiles: z.array(z.string()).max(32).optional(),
  job_options: watchJobOptions.optional(),
});

export const watchToolsGrantResponse = z.object({
  ok: z.literal(true),
  grant_id: z.string(),
  /** The relay the Watch calls, as this profile is paired with it. */
  relay_url: z.string(),
  /** The grant root (32 random bytes, unpadded base64url): every call and answer is sealed with keys from it. */
  key: z.string(),
  /** The Watch's bearer for the relay (32 random bytes, unpadded base64url); the relay sees only its SHA-256. */
  watch_key: z.string(),
  /** ISO 8601, as the relay answered it. */
  expires_at: z.string(),
  /** The tools granted: those asked for that this host serves, plus the jobs' companions. */
  tools: z.array(z.string()),
  /** Calls the Watch may make: 60, or 120 with jobs. */
  max_calls: z.int(),
  /** Jobs this call may start (0 when the grant carries no jobs). */
  max_jobs: z.int(),
  job_profiles: z.array(z.string()).optional(),
  /** The previous grant whose jobs moved to this one. */
  jobs_carried_from: z.string().optional(),
  /** Present when the grant was opened with `audio: true`: where the Watch dials for its call's audio. */
  audio: watchAudioGrant.optional(),
});

/**
 * Opens a Watch tool grant for one Watch call: registered on the profile's relay, long-polled by this
 * host, which opens each sealed call, runs it and seals the answer back. 10 per minute per profile; a
 * profile keeps at most 2 live grants (a third closes the oldest).
 */
export const postWatchToolsGrant = defineRoute({
  method: 'POST',
  path: '/api/plugins/conduit_push/watch-tools/grant',
  operationId: 'postWatchToolsGrant',
  summary: 'Open a Watch tool grant on the relay',
  tags: ['watch'],
  auth: 'bearer',
  query: profileQuery,
  body: watchToolsGrantRequest,
  bodyContentType: 'application/json',
  responses: {
    200: {
      description: 'The grant, its keys and what it allows.',
      schema: watchToolsGrantResponse,
      headers: noStoreNoCache,
    },
    401: unauthorized,
    ...detailBodyRefusals,
    409: detailAnswer("The profile isn't paired with Conduit notifications, or its relay isn't HTTPS."),
    429: detailAnswer('More than 10 grants a minute for this profile.'),
    500: detailAnswer('An unexpected failure, named by its type only.'),
    501: detailAnswer("The relay predates Watch tools, or this host can't serve what was asked (jobs, chats, audio)."),
    502: detailAnswer("The relay couldn't be reached or refused the grant."),
    503: detailUnavailable(
      'The relay is at capacity for Watch tools, live_token alone was asked for a profile without a Gemini key, or the profile cannot be resolved.',
    ),
  },
});

export const watchToolsRevokeRequest = z.object({ grant_id: z.string() });

export const watchToolsRevokeResponse = z.object({
  ok: z.literal(true),
  /** False for a grant that is unknown, already closed, or belongs to another profile. */
  revoked: z.boolean(),
});

/** Closes one of the profile's grants; the relay is told in the background. */
export const postWatchToolsRevoke = defineRoute({
  method: 'POST',
  path: '/api/plugins/conduit_push/watch-tools/revoke',
  operationId: 'postWatchToolsRevoke',
  summary: 'Close a Watch tool grant',
  tags: ['watch'],
  auth: 'bearer',
  query: profileQuery,
  body: watchToolsRevokeRequest,
  bodyContentType: 'application/json',
  responses: {
    200: { description: 'Whether a grant was closed.', schema: watchToolsRevokeResponse, headers: noStoreNoCache },
    401: unauthorized,
    ...detailBodyRefusals,
    500: detailAnswer('An unexpected failure, named by its type only.'),
    503: detailUnavailable('The profile cannot be resolved.'),
  },
});
