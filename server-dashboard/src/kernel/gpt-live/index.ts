import type { ProfileScope } from '../../notifier/notifier.js';
import { DetailError } from '../detail-errors.js';
import type { FeatureKernel } from '../feature.js';
import { UpstreamTimeout, UpstreamUnreachable } from '../upstream-http.js';
import { codexSignIn, type CodexSignInLookup } from './codex-credentials.js';
import type { GptLiveSettings } from './gpt-live-settings.js';
import { GPT_LIVE_PERSONA, sessionInstructions, type Opening } from './instructions.js';
import { exchangeOffer, type OfferAnswer } from './offer-exchange.js';
import type { SessionRequest } from './session-request.js';

/**
 * GPT-Live's upstream side, shared by the features that start a GPT-Live session (gpt-live for the
 * phone's own WebRTC call, watch-audio for the Watch's audio line): the ChatGPT subscription's SDP
 * exchange with the Codex voice service, and the pieces the API-billed path builds on.
 */

/** The upstream bounds both GPT-Live paths keep (ROUTES.md, GPT-Live). */
export const GPT_LIVE_UPSTREAM = {
  /** OpenAI must answer the offer within this. */
  upstreamTimeoutMs: 30_000,
  /** An SDP answer is a few KiB; a larger one is not an answer, and is not read whole. */
  answerSdpMaxBytes: 64 * 1024,
} as const;

/** ChatGPT's origin, where the Codex voice service takes subscription calls. */
export const CHATGPT_ORIGIN = 'https://chatgpt.com';
/** The Codex realtime calls endpoint with the query the reference sends (ROUTES.md, GPT-Live). */
const CODEX_CALLS_PATH = '/backend-api/codex/realtime/calls?intent=quicksilver&architecture=avas';

/** The call id, the last segment of the Location header (ROUTES.md). */
const CALL_ID_PATTERN = /^(?:rtc_[A-Za-z0-9_-]+|[0-9a-fA-F-]{36})$/;

/** Subscription failures say so, so nobody wonders whether their API key was billed instead. */
const NO_API_FALLBACK = ' No API fallback was used.';

/** Why the Codex sign-in cannot be used, as the status and the session route say it. */
export const SIGN_IN_REASONS: Record<Exclude<CodexSignInLookup['state'], 'ready'>, string> = {
  missing: 'GPT-Live needs a working Codex sign-in on the Hermes host. Run `hermes auth` and choose OpenAI Codex.',
  expired:
    'The Codex sign-in on the Hermes host has expired. Use Hermes with Codex once so it renews the sign-in, or run `hermes auth` and choose OpenAI Codex.',
  no_account:
    'The Codex sign-in on the Hermes host names no ChatGPT account. Run `hermes auth` and choose OpenAI Codex.',
};

/** An SDP answer this host passes on: an SDP, within the bound. */
export function usableSdp(sdp: string | null | undefined): sdp is string {
  return (
    typeof sdp === 'string' && sdp.startsWith('v=0') && Buffer.byteLength(sdp) <= GPT_LIVE_UPSTREAM.answerSdpMaxBytes
  );
}

/** The Location header's last path segment, when it is a call id of the documented shape. */
function callIdFrom(location: string | null): string | undefined {
  if (!location) return undefined;
  const segment = location.split(/[?#]/)[0]?.split('/').filter(Boolean).pop();
  return segment !== undefined && CALL_ID_PATTERN.test(segment) ? segment : undefined;
}

/** What a session answers once the exchange succeeded. */
export interface StartedSession {
  auth: 'subscription' | 'api';
  id: string;
  sdp: string;
  voice: string;
}

/** The opening the model is told to make: a placed call wins over a greeting. */
function openingOf(request: SessionRequest): Opening {
  if (request.callOpening) return { kind: 'call', briefed: request.briefing !== undefined };
  if (request.greeting !== undefined) return { kind: 'greet', greeting: request.greeting };
  return { kind: 'wait' };
}

/** The instructions both paths send: the persona, the profile's extra, the briefing and the opening. */
export function instructionsFor(request: SessionRequest, settings: GptLiveSettings): string {
  return sessionInstructions({
    persona: GPT_LIVE_PERSONA,
    extra: settings.instructions,
    briefing: request.briefing,
    opening: openingOf(request),
  });
}

/** The session configuration both paths send (delegation stays with the app, which runs Hermes' jobs). */
export function sessionConfig(model: string, voice: string, instructions: string) {
  return { model, instructions, audio: { output: { voice } }, delegation: { type: 'client' as const } };
}

/**
 * The subscription path: the offer goes to the Codex voice service with the host's Codex sign-in and
 * ChatGPT account id. Any failure is an error that says no API fallback was used.
 */
export async function subscriptionSession(
  kernel: FeatureKernel,
  profile: ProfileScope,
  request: SessionRequest,
  settings: GptLiveSettings,
): Promise<StartedSession> {
  const lookup = await codexSignIn(kernel.hermesHome, profile, kernel.clock.now());
  if (lookup.state !== 'ready') throw new DetailError(503, SIGN_IN_REASONS[lookup.state] + NO_API_FALLBACK);
  const voice = request.voice ?? settings.subscription.voice;
  const session = sessionConfig(settings.subscription.model, voice, instructionsFor(request, settings));
  const failed = (status: number, message: string, upstream: number | null): DetailError => {
    kernel.log.warn('gpt-live session failed', { profile: profile.name, auth: 'subscription', status: upstream });
    return new DetailError(status, message + NO_API_FALLBACK);
  };
  let answer: OfferAnswer;
  try {
    answer = await exchangeOffer(
      {
        url: `${kernel.upstreams.chatgpt ?? CHATGPT_ORIGIN}${CODEX_CALLS_PATH}`,
        headers: {
          Authorization: `Bearer ${lookup.signIn.bearer}`,
          'ChatGPT-Account-Id': lookup.signIn.accountId,
          'OpenAI-Alpha': 'quicksilver=v2',
        },
        json: {
          sdp: request.sdp,
          session: request.history.length ? { ...session, initial_items: request.history } : session,
        },
        timeoutMs: GPT_LIVE_UPSTREAM.upstreamTimeoutMs,
        answerMaxBytes: GPT_LIVE_UPSTREAM.answerSdpMaxBytes,
      },
      kernel.timers,
    );
  } catch (error) {
    if (error instanceof UpstreamTimeout) throw failed(504, 'The Codex voice service did not answer in time.', null);
    if (error instanceof UpstreamUnreachable) throw failed(502, 'Could not reach the Codex voice service.', null);
    throw error;
  }
  if (!answer.accepted) {
    const status = answer.status;
    if (status === 429)
      throw failed(429, 'ChatGPT is limiting GPT-Live sessions for this account (HTTP 429); try again shortly.', 429);
    if (status >= 500) throw failed(502, `The Codex voice service failed (HTTP ${status}); try again shortly.`, status);
    throw failed(
      502,
      `GPT-Live session was rejected (HTTP ${status}); check the Codex sign-in and the account's voice access.`,
      status,
    );
  }
  const id = callIdFrom(answer.location);
  if (!id || !usableSdp(answer.text)) {
    throw failed(502, 'The Codex voice service returned an unusable answer.', answer.status);
  }
  return { auth: 'subscription', id, sdp: answer.text, voice };
}
