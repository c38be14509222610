import { z } from 'zod';
import { defineRoute } from '../route.js';
import { detailAnswer, detailUnavailable, noStoreNoCache, noStoreAnswer } from './detail-error.js';
import { unauthorized } from './notification-settings.js';
import { profileQuery } from './profile.js';

export const geminiLiveStatusResponse = z.object({
  ok: z.literal(true),
  available: z.boolean(),
  /** `no_api_key`: neither GEMINI_API_KEY nor GOOGLE_API_KEY is set for the profile. */
  reason: z.literal('no_api_key').optional(),
  /** The Live model tokens are locked to (CONDUIT_GEMINI_LIVE_MODEL without `models/`, default gemini-3.8-live). */
  model: z.string(),
});

/** Whether this profile can mint Gemini Live tokens, and for which model. No rate limit. */
export const getGeminiLiveStatus = defineRoute({
  method: 'GET',
  path: '/api/plugins/conduit_push/gemini-live/status',
  operationId: 'getGeminiLiveStatus',
  summary: 'Gemini Live availability for a profile',
  tags: ['live-voice'],
  auth: 'bearer',
  query: profileQuery,
  responses: {
    200: noStoreAnswer('Available, or why not.', geminiLiveStatusResponse),
    401: unauthorized,
    503: detailUnavailable('The profile cannot be resolved.'),
  },
});

export const geminiLiveTokenResponse = z.object({
  ok: z.literal(true),
  /** Google's ephemeral token (`auth_tokens/…`): one use, locked to `model`. */
  token: z.string(),
  /** When the token stops working (Google's `expireTime`, else the requested now + 30 min). */
  expires_at: z.string(),
  /** When a Live session must have opened by (Google's `newSessionExpireTime`, else now + 1 min). */
  new_session_expires_at: z.string(),
  model: z.string(),
  /** The constrained Live endpoint for the token's API version. */
  websocket_url: z.string(),
});

/**
 * Mints a Google ephemeral auth token for Gemini Live with the profile's key, which never leaves the
 * host. No body. 20 per minute per profile, counted only once a key exists.
 */
export const postGeminiLiveToken = defineRoute({
  method: 'POST',
  path: '/api/plugins/conduit_push/gemini-live/token',
  operationId: 'postGeminiLiveToken',
  summary: 'Mint a Gemini Live ephemeral token',
  tags: ['live-voice'],
  auth: 'bearer',
  query: profileQuery,
  responses: {
    200: { description: 'A fresh single-use token.', schema: geminiLiveTokenResponse, headers: noStoreNoCache },
    401: unauthorized,
    413: detailAnswer('Request body is too large.'),
    429: detailAnswer('More than 20 tokens a minute for this profile.'),
    500: detailAnswer('An unexpected failure, named by its type only.'),
    502: detailAnswer('Google refused, could not be reached, or answered without a readable token.'),
    503: detailUnavailable('No Gemini key is set for the profile, or the profile cannot be resolved.'),
  },
});
