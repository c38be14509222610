import { z } from 'zod';
import { defineRoute } from '../route.js';
import { detailAnswer, detailBodyRefusals, detailUnavailable, noStoreAnswer } from './detail-error.js';
import { unauthorized } from './notification-settings.js';
import { profileQuery } from './profile.js';

/** A voice name as the session route takes it, once lowercased (ROUTES.md, GPT-Live). */
export const GPT_LIVE_VOICE_PATTERN = /^[a-z][a-z0-9_-]{0,31}$/;

/** The API path, reported under its own key so the top-level fields stay the subscription's (the seed). */
export const gptLiveApiStatus = z.object({
  auth: z.literal('api'),
  /** `voice.gpt_live.conduit_api_billing` is exactly `true` in the profile's config.yaml. */
  enabled: z.boolean(),
  /** Enabled, a daily limit above 0, a usable key for `host`, and a valid base_url. */
  available: z.boolean(),
  /** Null, or why an API-billed call cannot start. */
  reason: z.string().nullable(),
  /** `voice.gpt_live.model`, else `gpt-live-1`. */
  model: z.string(),
  /** `voice.gpt_live.voice`, else `marin`. */
  voice: z.string(),
  /** `voice.gpt_live.conduit_api_daily_calls`, else 20: API-billed calls a profile may start per day. */
  daily_limit: z.number().int(),
  /** The host of `voice.gpt_live.base_url` (null when it is not a valid URL), else `api.openai.com`. */
  host: z.string().nullable(),
});

export const gptLiveStatusResponse = z.object({
  ok: z.literal(true),
  /** The top-level fields describe the subscription path. */
  auth: z.literal('subscription'),
  /** `voice.gpt_live.subscription_model`, else `gpt-live-1-codex`. */
  model: z.string(),
  /** `voice.gpt_live.subscription_voice`, else `cove`. */
  voice: z.string(),
  /** Who performs the exchange: always this host (`plugin`); `hermes` where Hermes ships its own. */
  source: z.enum(['hermes', 'plugin']),
  /** A Codex sign-in exists (the account's voice entitlement is checked when a call starts). */
  available: z.boolean(),
  /** Null, or a readiness message the app shows. */
  reason: z.string().nullable(),
  api: gptLiveApiStatus,
});

/** Whether this profile can start GPT-Live on the ChatGPT subscription, and on the API key. */
export const getGptLiveStatus = defineRoute({
  method: 'GET',
  path: '/api/plugins/conduit_push/gpt-live/status',
  operationId: 'getGptLiveStatus',
  summary: 'GPT-Live availability for a profile (subscription and API billing)',
  tags: ['live-voice'],
  auth: 'bearer',
  query: profileQuery,
  responses: {
    200: noStoreAnswer('Available, or why not.', gptLiveStatusResponse),
    401: unauthorized,
    500: detailAnswer('An unexpected failure, named by its type only.'),
    503: detailUnavailable('The profile cannot be resolved.'),
    504: detailAnswer('GPT-Live status timed out (32 s).'),
  },
});

export const gptLiveSessionRequest = z.object({
  /** The app's WebRTC SDP offer; must start with `v=0`. */
  sdp: z.string(),
  /** Conversation items; the last 40 are kept. */
  history: z.array(z.record(z.string(), z.unknown())).optional(),
  /** Used instead of the configured voice; lowercased, `[a-z][a-z0-9_-]{0,31}`. */
  voice: z.string().optional(),
  /** Added to the session instructions; at most 32,768 characters after trimming. */
  briefing: z.string().optional(),
  /**
   * Absent: the model stays silent until the user speaks. `""` or text: it greets first, saying the text
   * (normalised, at most 200 characters; 800 as sent).
   */
  greeting: z.string().optional(),
  /** True for a call Hermes placed: the model speaks first with the briefing's opening; greeting is ignored. */
  call_opening: z.boolean().optional(),
  /** `api` bills the host's OpenAI API key (opt-in per profile); absent or `subscription` bills the subscription. */
  billing: z.enum(['subscription', 'api']).optional(),
});

export const gptLiveSessionResponse = z.object({
  ok: z.literal(true),
  /** Which path ran; the app drops the call before any audio when it is not the one it asked for. */
  auth: z.enum(['subscription', 'api']),
  /** The call id (subscription: the Location header's last segment) or OpenAI's Live session id. */
  session: z.object({ id: z.string() }),
  /** The SDP answer for the app's peer connection. */
  transport: z.object({ type: z.literal('webrtc'), sdp: z.string() }),
  source: z.enum(['hermes', 'plugin']),
  /** The voice sent (on the API path: what was sent, not what OpenAI confirmed). */
  voice: z.string(),
  briefing_applied: z.boolean(),
  /** The model was told to speak first (a greeting, or call_opening). */
  greeting_applied: z.boolean(),
});

/**
 * Starts a GPT-Live WebRTC session: the host exchanges the app's SDP offer with OpenAI using the
 * host's Codex sign-in (subscription) or, opted in, its OpenAI API key; neither is ever answered.
 */
export const postGptLiveSession = defineRoute({
  method: 'POST',
  path: '/api/plugins/conduit_push/gpt-live/session',
  operationId: 'postGptLiveSession',
  summary: 'Start a GPT-Live session (SDP exchange)',
  tags: ['live-voice'],
  auth: 'bearer',
  query: profileQuery,
  body: gptLiveSessionRequest,
  bodyContentType: 'application/json',
  responses: {
    200: noStoreAnswer('The SDP answer and the session id.', gptLiveSessionResponse),
    401: unauthorized,
    ...detailBodyRefusals,
    403: detailAnswer('API billing is not allowed for this profile, or its daily API calls are set to 0.'),
    429: detailAnswer(
      'More than 10 sessions a minute for this profile, the daily API-call cap is reached, or OpenAI answered 429.',
    ),
    500: detailAnswer('An unexpected failure, named by its type only.'),
    502: detailAnswer('OpenAI refused the session, could not be reached, or answered unusably.'),
    503: detailUnavailable('No usable Codex sign-in or API key, or the profile cannot be resolved.'),
    504: detailAnswer('GPT-Live session timed out (32 s).'),
  },
});
