import path from 'node:path';
import type { FeatureKernel, HostFeature } from '../../kernel/feature.js';
import { createRelayFetch } from '../../pairing/relay-http.js';
import { AppleMapsApi, APPLE_MAPS_ORIGIN } from './apple-maps-api.js';
import { MapsDailyBudget } from './daily-budget.js';
import { MapsEngine } from './maps-engine.js';
import { MAPS_LIMITS } from './maps-limits.js';
import { registerMapsPhoneRoutes } from './maps-phone-routes.js';
import type { MapsNavigator, MapsOrigin, MapsPhone, MapsReadLog, MapsSettings } from './maps-ports.js';
import { mapsTool, type MapsOfKernel } from './maps-tool.js';
import { RelayMapsTokens } from './maps-token-client.js';
import { PhoneLookups } from './phone-lookups.js';
import { PhoneWakeBudget } from './phone-wakes.js';
import { PlaceCache } from './place-cache.js';

export { MAPS_TOOL, MAPS_TOOL_DESCRIPTION } from './maps-tool.js';
export { MAPS_USAGE_FILE } from './daily-budget.js';
export { MAPS_WAKES_FILE } from './phone-wakes.js';
export { MAPS_LIMITS } from './maps-limits.js';
export { appleMapsLink, NAVIGATE_PROMPT } from './maps-navigate.js';
export type {
  LocationDetail,
  MapsAction,
  MapsNavigator,
  MapsOrigin,
  MapsPhone,
  MapsPhoneTarget,
  MapsPhoneWake,
  MapsReadLog,
  MapsSettings,
  NavigateAsked,
  NavigateMode,
  NavigatePrompt,
  SharedFix,
} from './maps-ports.js';

export interface MapsFeatureDeps {
  /**
   * Where "me" is (the location feature's last shared fix) and the saved places' names; or how to make
   * that from the app's kernel (its clock dates the fix).
   */
  origin: MapsOrigin | ((kernel: FeatureKernel) => MapsOrigin);
  /** The location read log; lookups are not logged until it is wired. */
  readLog?: MapsReadLog;
  /**
   * The user's iPhone (location's key and push), or how to make it from the app's kernel: lookups that
   * involve the user go to it. Without it every lookup goes to the host engine.
   */
  phone?: MapsPhone | ((kernel: FeatureKernel) => MapsPhone);
  /**
   * Conduit's navigate prompt (present's store, exchange and nudge), or how to make it from the app's
   * kernel. Without it navigate answers an Apple Maps link.
   */
  navigator?: MapsNavigator | ((kernel: FeatureKernel) => MapsNavigator);
  /** "Keep maps lookups on this iPhone", per profile; the host engine is on for every profile without it. */
  settings?: MapsSettings;
  /** Apple Maps Server API's origin; a loopback stand-in in tests. */
  appleOrigin?: string;
  /**
   * The fetch the relay's token route is asked through (tests count the asks with it); by default the
   * pairing's relay fetch: certificates always verified, no redirects, a bounded answer.
   */
  relayFetch?: typeof fetch;
  /**
   * Where this host counts its Apple calls per day (conduit-maps-usage.json); the service's state
   * directory when left out (CONDUIT_STATE_DIR, or <Hermes home>/conduit-host as the config reads it).
   */
  stateDir?: string;
  userAgent?: string;
}

/**
 * Maps (`maps`): conduit_maps, answered by the user's iPhone when a lookup involves the user ("me", a
 * saved place, transit) and the phone answers maps lookups, else by this host's Apple Maps engine (the
 * seed, conduit_maps: the relay hands paired hosts a short-lived token and the host calls Apple itself).
 * Its routes are the phone's side of a lookup, under location's paths (GET/POST /location/maps/{id}).
 */
export function mapsFeature(deps: MapsFeatureDeps): HostFeature {
  // One engine per app (kernel), so a process that builds several hosts (tests) keeps them apart.
  const engines = new WeakMap<FeatureKernel, MapsOfKernel>();
  function engineFor(kernel: FeatureKernel): MapsOfKernel {
    let built = engines.get(kernel);
    if (!built) {
      const stateDir =
        deps.stateDir ??
        path.resolve(kernel.serviceEnv.CONDUIT_STATE_DIR?.trim() || path.join(kernel.hermesHome, 'conduit-host'));
      const tokens = new RelayMapsTokens({
        clock: kernel.clock,
        fetch:
          deps.relayFetch ??
          createRelayFetch({
            timeoutMs: MAPS_LIMITS.requestTimeoutMs,
            maxResponseBytes: MAPS_LIMITS.relayAnswerMaxBytes,
          }),
        userAgent: deps.userAgent ?? 'Conduit-Host',
      });
      const api = new AppleMapsApi({
        origin: deps.appleOrigin ?? APPLE_MAPS_ORIGIN,
        tokens,
        budget: new MapsDailyBudget(stateDir, MAPS_LIMITS.appleCallsPerDay, kernel.clock),
        timers: kernel.timers,
      });
      const origin = typeof deps.origin === 'function' ? deps.origin(kernel) : deps.origin;
      const places = new PlaceCache();
      const engine = new MapsEngine({ api, places, origin, clock: kernel.clock });
      const phone = typeof deps.phone === 'function' ? deps.phone(kernel) : deps.phone;
      const phonePath = phone
        ? {
            phone,
            lookups: new PhoneLookups(kernel.clock, kernel.timers),
            wakes: new PhoneWakeBudget(),
            places,
            clock: kernel.clock,
          }
        : null;
      const navigator = typeof deps.navigator === 'function' ? deps.navigator(kernel) : (deps.navigator ?? null);
      built = { engine, tokens, origin, phonePath, places, navigator };
      engines.set(kernel, built);
    }
    return built;
  }
  return {
    name: 'maps',
    capabilities: [],
    register(scope, kernel) {
      const { phonePath } = engineFor(kernel);
      if (phonePath) registerMapsPhoneRoutes(scope, kernel, phonePath);
    },
    tools: [mapsTool({ engineFor, readLog: deps.readLog, settings: deps.settings })],
  };
}
