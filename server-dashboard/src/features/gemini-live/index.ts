import { getGeminiLiveStatus, postGeminiLiveToken } from '@conduit/contracts/dashboard/gemini-live';
import { bindRoute } from '@conduit/contracts/server';
import { answerWithDetail, NO_STORE } from '../../kernel/detail-errors.js';
import type { HostFeature } from '../../kernel/feature.js';
import { geminiLiveTokensFor } from '../../kernel/gemini-live/index.js';
import { profileForRoute } from '../../kernel/profile-files.js';
import { limiterKey } from '../../kernel/rate-window.js';

/** The bounds of this feature's routes; minting's own (the per-profile window, Google's deadline) live in the kernel. */
const BOUNDS = {
  /** The token route takes no body; anything larger than this is refused unread. */
  bodyLimitBytes: 16 * 1024,
} as const;

/**
 * Gemini Live (`gemini-live`): the phone talks to Google directly with a short-lived token this host
 * mints with the profile's key, which never leaves the host. The minting is the kernel's, shared with
 * the Watch's `live_token`.
 */
export const geminiLiveFeature: HostFeature = {
  name: 'gemini-live',
  capabilities: [{ name: 'gemini-live', method: 'GET', path: getGeminiLiveStatus.path }],
  register(scope, kernel) {
    const tokens = geminiLiveTokensFor(kernel);
    answerWithDetail(scope, {
      bodyLimitBytes: BOUNDS.bodyLimitBytes,
      failure: (request, type) =>
        `Gemini Live ${request.url.includes('/token') ? 'token' : 'status'} failed on the host (${type})`,
    });

    bindRoute(scope, getGeminiLiveStatus, async ({ query }) => {
      const profile = profileForRoute(kernel.hermesHome, query.profile);
      const settings = await tokens.settings(profile);
      const body = settings.apiKey
        ? { ok: true as const, available: true, model: settings.model }
        : { ok: true as const, available: false, reason: 'no_api_key' as const, model: settings.model };
      return { status: 200, body, headers: { 'Cache-Control': 'no-store' } };
    });

    bindRoute(scope, postGeminiLiveToken, async ({ query }) => {
      const profile = profileForRoute(kernel.hermesHome, query.profile);
      const body = await tokens.mint(profile, limiterKey(query.profile));
      return { status: 200, body, headers: { ...NO_STORE } };
    });
  },
};
