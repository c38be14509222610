import { z } from 'zod';
import { getGptLiveStatus, postGptLiveSession } from '@conduit/contracts/dashboard/gpt-live';
import { bindRoute } from '@conduit/contracts/server';
import { withDeadline } from '../../kernel/deadline.js';
import { answerWithDetail, DetailError, readJsonBody } from '../../kernel/detail-errors.js';
import type { FeatureKernel, HostFeature } from '../../kernel/feature.js';
import { profileForRoute, readProfileFiles } from '../../kernel/profile-files.js';
import { limiterKey, perMinute } from '../../kernel/rate-window.js';
import { UpstreamTimeout, UpstreamUnreachable } from '../../kernel/upstream-http.js';
import { codexSignIn } from '../../kernel/gpt-live/codex-credentials.js';
import { apiTarget, gptLiveSettings, type GptLiveSettings } from '../../kernel/gpt-live/gpt-live-settings.js';
import {
  GPT_LIVE_UPSTREAM,
  instructionsFor,
  SIGN_IN_REASONS,
  sessionConfig,
  subscriptionSession,
  usableSdp,
  type StartedSession,
} from '../../kernel/gpt-live/index.js';
import { exchangeOffer, type OfferAnswer } from '../../kernel/gpt-live/offer-exchange.js';
import { validSessionRequest, type SessionRequest } from '../../kernel/gpt-live/session-request.js';
import type { ProfileScope } from '../../notifier/notifier.js';
import { DailyCallLedger } from './daily-calls.js';

/** The bounds of this feature (ROUTES.md, GPT-Live; the seed for API billing). */
const BOUNDS = {
  /** The app starts one session per call; ten a minute per profile covers redials, not a loop. */
  sessionsPerMinute: 10,
  /** Reading the profile's files and auth.json; past it the app is told the status timed out. */
  statusTimeoutMs: 32_000,
  /** The whole session route; it outlasts the upstream's own deadline so that one is reported first. */
  sessionTimeoutMs: 32_000,
  /** An offer plus 40 history items and a 32 KiB briefing fit well inside this. */
  bodyLimitBytes: 256 * 1024,
  /** OpenAI's deadline for the offer and the SDP answer's bound (kernel/gpt-live). */
  ...GPT_LIVE_UPSTREAM,
  /** The API path's JSON answer wraps the SDP; room for the envelope around a 64 KiB SDP. */
  apiAnswerMaxBytes: 80 * 1024,
} as const;

/** OpenAI's Live session id is opaque; only a plain token of this shape is passed on. */
const LIVE_SESSION_ID_PATTERN = /^[A-Za-z0-9_.:-]{1,200}$/;

/** API-path failures say so, so nobody wonders whether their subscription was used instead. */
const SUBSCRIPTION_UNUSED = ' The ChatGPT subscription was not used.';

/** OpenAI's GPT-Live create-session answer (`POST /v1/live/sessions`): only what is read of it. */
const liveSessionAnswer = z.object({
  session: z.object({ id: z.string().regex(LIVE_SESSION_ID_PATTERN) }),
  transport: z.object({ type: z.literal('webrtc'), sdp: z.string() }),
});

/** Thrown (never answered) when the route's own deadline passes. */
class SessionTimedOut extends Error {}

/**
 * The API path (opt-in per profile and per request): the offer goes to OpenAI's public GPT-Live API
 * (`POST <base_url>/live/sessions`, JSON `{session, transport: {type: "webrtc", sdp}}`, answered with
 * `{session: {id}, transport: {type: "webrtc", sdp}}`, as OpenAI documents it) with the host's OpenAI key.
 * A daily slot is taken before OpenAI is asked; a refusal or no answer gives it back, a yes keeps it.
 */
async function apiSession(
  kernel: FeatureKernel,
  ledger: DailyCallLedger,
  profile: ProfileScope,
  request: SessionRequest,
  settings: GptLiveSettings,
  limiter: string,
): Promise<StartedSession> {
  const target = apiTarget(settings.api);
  if (!target.ok) throw new DetailError(target.status, `${target.reason}.${SUBSCRIPTION_UNUSED}`);
  const giveBack = ledger.tryTake(limiter, settings.api.dailyLimit);
  if (!giveBack) {
    throw new DetailError(
      429,
      `This profile has started its ${settings.api.dailyLimit} API-billed GPT-Live calls for today (voice.gpt_live.conduit_api_daily_calls).${SUBSCRIPTION_UNUSED}`,
    );
  }
  const voice = request.voice ?? settings.api.voice;
  const session = sessionConfig(settings.api.model, voice, instructionsFor(request, settings));
  // Tests point OpenAI's own host at a stand-in; any other base_url is used as configured.
  const origin = target.isOpenAi && kernel.upstreams.openai ? kernel.upstreams.openai : target.url.origin;
  const url = new URL(`${target.url.pathname.replace(/\/+$/, '')}/live/sessions`, origin);
  const failed = (status: number, message: string, upstream: number | null): DetailError => {
    kernel.log.warn('gpt-live session failed', {
      profile: profile.name,
      auth: 'api',
      status: upstream,
      key: target.key.source,
    });
    return new DetailError(status, message + SUBSCRIPTION_UNUSED);
  };
  let answer: OfferAnswer;
  try {
    answer = await exchangeOffer(
      {
        url: url.href,
        headers: { Authorization: `Bearer ${target.key.value}`, Accept: 'application/json' },
        json: {
          session: request.history.length ? { ...session, input: request.history } : session,
          transport: { type: 'webrtc', sdp: request.sdp },
        },
        timeoutMs: BOUNDS.upstreamTimeoutMs,
        answerMaxBytes: BOUNDS.apiAnswerMaxBytes,
      },
      kernel.timers,
    );
  } catch (error) {
    // OpenAI never answered: no session can have started, so the day's slot is given back.
    giveBack();
    if (error instanceof UpstreamTimeout) throw failed(504, 'OpenAI did not answer in time.', null);
    if (error instanceof UpstreamUnreachable) throw failed(502, 'Could not reach OpenAI.', null);
    throw error;
  }
  if (!answer.accepted) {
    giveBack();
    const status = answer.status;
    // OpenAI's body is never passed on: it may quote the request or the key's project.
    if (status === 401) throw failed(502, 'OpenAI rejected the API key (HTTP 401).', status);
    if (status === 429) throw failed(429, 'OpenAI is limiting this API key (HTTP 429); try again shortly.', status);
    if (status >= 500)
      throw failed(502, `OpenAI's GPT-Live service failed (HTTP ${status}); try again shortly.`, status);
    throw failed(502, `OpenAI refused the GPT-Live session (HTTP ${status}).`, status);
  }
  // From here OpenAI has said yes and a billed session may exist: the slot stays counted.
  let parsed: unknown;
  try {
    parsed = answer.text === null ? undefined : JSON.parse(answer.text);
  } catch {
    parsed = undefined;
  }
  const created = liveSessionAnswer.safeParse(parsed);
  if (!created.success || !usableSdp(created.data.transport.sdp)) {
    throw failed(502, 'OpenAI returned an unusable GPT-Live answer.', answer.status);
  }
  return { auth: 'api', id: created.data.session.id, sdp: created.data.transport.sdp, voice };
}

/**
 * GPT-Live (`gpt-live`): the phone runs the WebRTC call with OpenAI itself, and this host does the SDP
 * exchange with the host's Codex sign-in (the ChatGPT subscription) or, when the profile allows it and
 * the app asks by name, the host's OpenAI API key. Neither credential leaves the host, and a failure on
 * one path never falls back to the other.
 */
export const gptLiveFeature: HostFeature = {
  name: 'gpt-live',
  capabilities: [{ name: 'gpt-live', method: 'GET', path: getGptLiveStatus.path }],
  register(scope, kernel) {
    const sessions = perMinute(BOUNDS.sessionsPerMinute, kernel.clock);
    const ledger = new DailyCallLedger(kernel.clock);
    answerWithDetail(scope, {
      bodyLimitBytes: BOUNDS.bodyLimitBytes,
      failure: (request, type) =>
        `GPT-Live ${request.url.includes('/session') ? 'session' : 'status'} failed on the host (${type})`,
    });

    bindRoute(scope, getGptLiveStatus, async ({ query }) => {
      const profile = profileForRoute(kernel.hermesHome, query.profile);
      const { settings, lookup } = await withDeadline(
        (async () => {
          const files = await readProfileFiles(profile, kernel.serviceEnv);
          const lookup = await codexSignIn(kernel.hermesHome, profile, kernel.clock.now());
          return { settings: gptLiveSettings(files), lookup };
        })(),
        BOUNDS.statusTimeoutMs,
        kernel.timers,
        () => new DetailError(504, 'GPT-Live status timed out'),
      );
      const api = apiTarget(settings.api);
      const endpoint = settings.api.endpoint;
      return {
        status: 200,
        body: {
          ok: true as const,
          auth: 'subscription' as const,
          model: settings.subscription.model,
          voice: settings.subscription.voice,
          source: 'plugin' as const,
          available: lookup.state === 'ready',
          reason: lookup.state === 'ready' ? null : SIGN_IN_REASONS[lookup.state],
          api: {
            auth: 'api' as const,
            enabled: settings.api.enabled,
            available: api.ok,
            reason: api.ok ? null : api.reason,
            model: settings.api.model,
            voice: settings.api.voice,
            daily_limit: settings.api.dailyLimit,
            host: endpoint.host,
          },
        },
        headers: { 'Cache-Control': 'no-store' },
      };
    });

    bindRoute(scope, postGptLiveSession, async ({ query, body: raw }) => {
      const profile = profileForRoute(kernel.hermesHome, query.profile);
      const request = validSessionRequest(readJsonBody(raw));
      const limiter = limiterKey(query.profile);
      if (!sessions.tryTake(limiter)) {
        throw new DetailError(429, 'Too many GPT-Live session requests; try again shortly');
      }
      let started: StartedSession;
      try {
        started = await withDeadline(
          (async () => {
            const settings = gptLiveSettings(await readProfileFiles(profile, kernel.serviceEnv));
            return request.billing === 'api'
              ? apiSession(kernel, ledger, profile, request, settings, limiter)
              : subscriptionSession(kernel, profile, request, settings);
          })(),
          BOUNDS.sessionTimeoutMs,
          kernel.timers,
          () => new SessionTimedOut(),
        );
      } catch (error) {
        if (!(error instanceof SessionTimedOut)) throw error;
        kernel.log.warn('gpt-live session timed out', { profile: profile.name, auth: request.billing });
        // The exchange, if it still runs, settles the API slot itself when OpenAI answers or its deadline passes.
        throw new DetailError(
          504,
          request.billing === 'api'
            ? `GPT-Live session timed out.${SUBSCRIPTION_UNUSED}`
            : 'GPT-Live session timed out',
        );
      }
      kernel.log.info('gpt-live session started', {
        profile: profile.name,
        auth: started.auth,
        voice: started.voice,
        history: request.history.length,
      });
      return {
        status: 200,
        body: {
          ok: true as const,
          auth: started.auth,
          session: { id: started.id },
          transport: { type: 'webrtc' as const, sdp: started.sdp },
          source: 'plugin' as const,
          voice: started.voice,
          briefing_applied: request.briefing !== undefined,
          greeting_applied: request.callOpening || request.greeting !== undefined,
        },
        headers: { 'Cache-Control': 'no-store', Pragma: 'no-cache' },
      };
    });
  },
};
