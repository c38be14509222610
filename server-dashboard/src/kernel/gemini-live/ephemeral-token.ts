import { z } from 'zod';
import { DetailError } from '../detail-errors.js';
import type { Timers } from '../timers.js';
import {
  parseJsonText,
  upstreamExchange,
  UpstreamTimeout,
  UpstreamTooLarge,
  UpstreamUnreachable,
} from '../upstream-http.js';
import type { GeminiApiVersion } from './gemini-settings.js';

export const GOOGLE_ORIGIN = 'https://generativelanguage.googleapis.com';

/** Google's Live endpoint that accepts an ephemeral token (the "constrained" one), per API version. */
export function liveWebsocketUrl(version: GeminiApiVersion): string {
  return `wss://generativelanguage.googleapis.com/ws/google.ai.generativelanguage.${version}.GenerativeService.BidiGenerateContentConstrained`;
}

/** `%Y-%m-%dT%H:%M:%SZ`: Google's timestamp without fractions, as the reference sends it. */
function googleTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** The AuthToken resource Google answers (only what we read of it). */
const authTokenAnswer = z.object({
  name: z.string().min(1).optional().catch(undefined),
  expireTime: z.string().min(1).optional().catch(undefined),
  newSessionExpireTime: z.string().min(1).optional().catch(undefined),
});

/** Google's error envelope: `{"error": {"code", "message", "status"}}`. */
const googleError = z.object({ error: z.object({ message: z.string() }) });

export interface MintRequest {
  apiKey: string;
  model: string;
  apiVersion: GeminiApiVersion;
  nowMs: number;
  origin: string;
  timeoutMs: number;
}

export interface MintedToken {
  token: string;
  expiresAt: string;
  newSessionExpiresAt: string;
}

/** How long a token lives, and how soon its Live session must open (the seed's numbers). */
const TOKEN_LIFETIME_MS = 30 * 60_000;
const SESSION_OPEN_WINDOW_MS = 60_000;

/** Removes the key wherever an upstream message might echo it. */
function withoutKey(text: string, key: string): string {
  return key ? text.split(key).join('[redacted]') : text;
}

/**
 * Creates one ephemeral auth token (`POST /{version}/auth_tokens`): one use, locked to the model (the
 * field mask names `model`, so the session's setup cannot change it), 30 minutes, and a Live session
 * must open within a minute. Failures are DetailErrors carrying the reference's exact messages.
 */
export async function mintEphemeralToken(request: MintRequest, timers: Timers): Promise<MintedToken> {
  const expireTime = googleTime(request.nowMs + TOKEN_LIFETIME_MS);
  const newSessionExpireTime = googleTime(request.nowMs + SESSION_OPEN_WINDOW_MS);
  let answer;
  try {
    answer = await upstreamExchange(
      `${request.origin}/${request.apiVersion}/auth_tokens`,
      {
        method: 'POST',
        headers: { 'x-goog-api-key': request.apiKey },
        json: {
          uses: 1,
          expireTime,
          newSessionExpireTime,
          bidiGenerateContentSetup: { model: `models/${request.model}` },
          fieldMask: 'model',
        },
        timeoutMs: request.timeoutMs,
      },
      timers,
    );
  } catch (error) {
    if (error instanceof UpstreamTimeout || error instanceof UpstreamUnreachable) {
      throw new DetailError(502, 'Could not reach Google');
    }
    if (error instanceof UpstreamTooLarge) throw new DetailError(502, 'Google returned an unreadable token response');
    throw error;
  }
  const body = parseJsonText(answer.text);
  if (answer.status < 200 || answer.status >= 300) {
    const parsed = googleError.safeParse(body);
    const message = parsed.success ? parsed.data.error.message : `HTTP ${answer.status}`;
    throw new DetailError(
      502,
      `Google rejected the token request (${answer.status}): ${withoutKey(message, request.apiKey).slice(0, 500)}`,
    );
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new DetailError(502, 'Google returned an unreadable token response');
  }
  const token = authTokenAnswer.parse(body);
  if (!token.name) throw new DetailError(502, "Google's token response had no token");
  return {
    token: token.name,
    expiresAt: token.expireTime ?? expireTime,
    newSessionExpiresAt: token.newSessionExpireTime ?? newSessionExpireTime,
  };
}
