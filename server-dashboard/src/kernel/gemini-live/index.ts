import type { Clock } from '../../clock.js';
import type { Logger } from '../../log.js';
import type { ProfileScope } from '../../notifier/notifier.js';
import { DetailError } from '../detail-errors.js';
import type { FeatureKernel, UpstreamOrigins } from '../feature.js';
import { readProfileFiles } from '../profile-files.js';
import { perMinute, type SlidingWindowLimit } from '../rate-window.js';
import type { Timers } from '../timers.js';
import { GOOGLE_ORIGIN, liveWebsocketUrl, mintEphemeralToken } from './ephemeral-token.js';
import { geminiLiveSettings, type GeminiLiveSettings } from './gemini-settings.js';

export { DEFAULT_GEMINI_LIVE_MODEL, geminiLiveSettings, type GeminiLiveSettings } from './gemini-settings.js';

/** The bounds of minting (ROUTES.md, Gemini Live). */
export const GEMINI_LIVE_BOUNDS = {
  /** Conduit asks for a fresh token for every connection; 20 a minute covers reconnects, not a loop. */
  tokensPerMinute: 20,
  /** Google's token call; past it the app is told Google could not be reached. */
  upstreamTimeoutMs: 15_000,
} as const;

/** `POST /gemini-live/token`'s body, which the Watch's `live_token` answers field for field. */
export type GeminiLiveTokenAnswer = {
  ok: true;
  token: string;
  expires_at: string;
  new_session_expires_at: string;
  model: string;
  websocket_url: string;
};

interface MinterOptions {
  clock: Clock;
  timers: Timers;
  log: Logger;
  serviceEnv: Readonly<Record<string, string | undefined>>;
  upstreams: UpstreamOrigins;
}

/**
 * Gemini Live ephemeral tokens minted with a profile's key, which never leaves this host: one minter
 * per app, so the phone's `POST /gemini-live/token` and the Watch's `live_token` use the same model
 * rules and count against the same 20-a-minute window per profile.
 */
export class GeminiLiveTokens {
  private readonly mints: SlidingWindowLimit;

  constructor(private readonly options: MinterOptions) {
    this.mints = perMinute(GEMINI_LIVE_BOUNDS.tokensPerMinute, options.clock);
  }

  /** The profile's key, model and API version, read from its environment. */
  async settings(profile: ProfileScope): Promise<GeminiLiveSettings> {
    return geminiLiveSettings(await readProfileFiles(profile, this.options.serviceEnv));
  }

  /**
   * Mints one token, or throws the route's DetailError (503 without a key, 429 past the window, 502
   * for Google's failures). The window counts only once a key exists, so a profile without one never
   * fills it.
   */
  async mint(profile: ProfileScope, limiterKey: string): Promise<GeminiLiveTokenAnswer> {
    const settings = await this.settings(profile);
    if (!settings.apiKey) throw new DetailError(503, 'GEMINI_API_KEY is not set on this Hermes host');
    if (!this.mints.tryTake(limiterKey)) {
      throw new DetailError(429, 'Too many Gemini Live token requests; try again shortly');
    }
    try {
      const minted = await mintEphemeralToken(
        {
          apiKey: settings.apiKey,
          model: settings.model,
          apiVersion: settings.apiVersion,
          nowMs: this.options.clock.now(),
          origin: this.options.upstreams.google ?? GOOGLE_ORIGIN,
          timeoutMs: GEMINI_LIVE_BOUNDS.upstreamTimeoutMs,
        },
        this.options.timers,
      );
      this.options.log.info('gemini live token minted', { profile: profile.name, model: settings.model });
      return {
        ok: true,
        token: minted.token,
        expires_at: minted.expiresAt,
        new_session_expires_at: minted.newSessionExpiresAt,
        model: settings.model,
        websocket_url: liveWebsocketUrl(settings.apiVersion),
      };
    } catch (error) {
      // The status only: Google's message may name the project, and the key is never logged.
      if (error instanceof DetailError) {
        this.options.log.warn('gemini live token refused', { profile: profile.name, status: error.status });
      }
      throw error;
    }
  }
}

const perKernel = new WeakMap<FeatureKernel, GeminiLiveTokens>();

/** The app's one minter (a process that builds several apps, as tests do, keeps them apart). */
export function geminiLiveTokensFor(kernel: FeatureKernel): GeminiLiveTokens {
  let tokens = perKernel.get(kernel);
  if (!tokens) {
    tokens = new GeminiLiveTokens({
      clock: kernel.clock,
      timers: kernel.timers,
      log: kernel.log,
      serviceEnv: kernel.serviceEnv,
      upstreams: kernel.upstreams,
    });
    perKernel.set(kernel, tokens);
  }
  return tokens;
}
