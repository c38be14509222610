import { getGeminiLiveStatus, postGeminiLiveToken } from '@conduit/contracts/dashboard/gemini-live';
import { bindRoute } from '@conduit/contracts/server';
import { answerWithDetail, DetailError, NO_STORE } from '../../kernel/detail-errors.js';
import type { HostFeature } from '../../kernel/feature.js';
import { profileForRoute, readProfileFiles } from '../../kernel/profile-files.js';
import { limiterKey, perMinute } from '../../kernel/rate-window.js';
import { GOOGLE_ORIGIN, liveWebsocketUrl, mintEphemeralToken } from './ephemeral-token.js';
import { geminiLiveSettings } from './gemini-settings.js';

/** The bounds of this feature (ROUTES.md, Gemini Live). */
const BOUNDS = {
  /** Conduit asks for a fresh token for every connection; 20 a minute covers reconnects, not a loop. */
  tokensPerMinute: 20,
  /** Google's token call; past it the app is told Google could not be reached. */
  upstreamTimeoutMs: 15_000,
  /** The token route takes no body; anything larger than this is refused unread. */
  bodyLimitBytes: 16 * 1024,
} as const;

/**
 * Gemini Live (`gemini-live`): the phone talks to Google directly with a short-lived token this host
 * mints with the profile's key, which never leaves the host.
 */
export const geminiLiveFeature: HostFeature = {
  name: 'gemini-live',
  capabilities: [{ name: 'gemini-live', method: 'GET', path: getGeminiLiveStatus.path }],
  register(scope, kernel) {
    const mints = perMinute(BOUNDS.tokensPerMinute, kernel.clock);
    answerWithDetail(scope, {
      bodyLimitBytes: BOUNDS.bodyLimitBytes,
      failure: (request, type) =>
        `Gemini Live ${request.url.includes('/token') ? 'token' : 'status'} failed on the host (${type})`,
    });

    bindRoute(scope, getGeminiLiveStatus, async ({ query }) => {
      const profile = profileForRoute(kernel.hermesHome, query.profile);
      const settings = geminiLiveSettings(await readProfileFiles(profile, kernel.serviceEnv));
      const body = settings.apiKey
        ? { ok: true as const, available: true, model: settings.model }
        : { ok: true as const, available: false, reason: 'no_api_key' as const, model: settings.model };
      return { status: 200, body, headers: { 'Cache-Control': 'no-store' } };
    });

    bindRoute(scope, postGeminiLiveToken, async ({ query }) => {
      const profile = profileForRoute(kernel.hermesHome, query.profile);
      const settings = geminiLiveSettings(await readProfileFiles(profile, kernel.serviceEnv));
      if (!settings.apiKey) throw new DetailError(503, 'GEMINI_API_KEY is not set on this Hermes host');
      // Counted only once a key exists, so a profile without one never fills its window.
      if (!mints.tryTake(limiterKey(query.profile))) {
        throw new DetailError(429, 'Too many Gemini Live token requests; try again shortly');
      }
      try {
        const minted = await mintEphemeralToken(
          {
            apiKey: settings.apiKey,
            model: settings.model,
            apiVersion: settings.apiVersion,
            nowMs: kernel.clock.now(),
            origin: kernel.upstreams.google ?? GOOGLE_ORIGIN,
            timeoutMs: BOUNDS.upstreamTimeoutMs,
          },
          kernel.timers,
        );
        kernel.log.info('gemini live token minted', { profile: profile.name, model: settings.model });
        return {
          status: 200,
          body: {
            ok: true,
            token: minted.token,
            expires_at: minted.expiresAt,
            new_session_expires_at: minted.newSessionExpiresAt,
            model: settings.model,
            websocket_url: liveWebsocketUrl(settings.apiVersion),
          },
          headers: { ...NO_STORE },
        };
      } catch (error) {
        // The status only: Google's message may name the project, and the key is never logged.
        if (error instanceof DetailError)
          kernel.log.warn('gemini live token refused', { profile: profile.name, status: error.status });
        throw error;
      }
    });
  },
};
