import {
  deleteLocationRule,
  getLocationReads,
  getLocationRules,
  LOCATION_LABEL,
  LOCATION_LIMITS,
  locationRoutes,
  type LocationBatch,
} from '@conduit/contracts/dashboard/location';
import { bindRoute } from '@conduit/contracts/server';
import { HERMES_JOB_ID } from '@conduit/contracts/hermes/jobs';
import { httpRelayGateway } from '../../delivery/relay-gateway.js';
import type { FeatureKernel, HostFeature } from '../../kernel/feature.js';
import { profileForRoute } from '../../kernel/profile-files.js';
import { sealedIngest, type LandedBatch } from '../../kernel/phone-data/index.js';
import { PhoneDataStore } from '../../kernel/phone-data/store.js';
import { FixSignals } from './locate.js';
import { LOCATION_HOST_LIMITS } from './location-limits.js';
import { locationReadLog, locationShared } from './location-reads.js';
import { relayLocationPush, type LocationRelay } from './location-relay.js';
import {
  LOCATION_DEVICE_TABLES,
  LOCATION_SCHEMA,
  LOCATION_SHAPE,
  parseLocationBatch,
  placesOf,
  storeLocationBatch,
  summarizeLocation,
  type KeptPlaceEvent,
} from './location-store.js';
import { locationTool } from './location-tool.js';
import { locationVoiceTool } from './location-voice-tool.js';
import { PlaceRules } from './place-rules.js';
import { profileTimeZone } from '../../kernel/local-time.js';
import { DetailError } from '../../kernel/detail-errors.js';
import { CorruptStateError } from '../../state/json-state-file.js';

export { LOCATION_HOST_LIMITS } from './location-limits.js';
export { locationMapsOrigin, locationMapsReadLog, type MapsMe } from './location-for-maps.js';
export { locationMapsPhone } from './location-maps-phone.js';
export {
  latestFix,
  locationShared,
  locationSharing,
  readLocation,
  type LocationReadContext,
  type LocationReadResult,
  type LocationSharingSummary,
  type SharedFix,
  whereabouts,
  WHEREABOUTS_MAX_AGE_S,
} from './location-reads.js';
export {
  relayLocationPush,
  sealLocationRequest,
  type LocationPushOutcome,
  type LocationPushRequest,
  type LocationRelay,
} from './location-relay.js';
export { LOCATION_SHAPE } from './location-store.js';
export { NEVER_SCHEDULE, PlaceRules, type FireOutcome, type PlaceRuleAnswer } from './place-rules.js';
export { PLACE_RULES_FILE } from './place-rules-state.js';
export { LOCATION_TOOL, LOCATION_TOOL_DESCRIPTION, locationToolInput } from './location-tool.js';
export {
  LOCATION_VOICE_DESCRIPTION,
  locationVoiceAvailable,
  locationVoiceInput,
  locationVoiceRead,
  readLocationForVoice,
  VOICE_READERS,
  type LocationVoiceAnswer,
} from './location-voice.js';
export { locationVoiceTool } from './location-voice-tool.js';

/** An arrival at or departure from a saved place, told once its batch is stored (place rules wake on it). */
export interface PlaceEvent {
  profile: string;
  home: string;
  deviceId: string;
  /** The phone's event id. */
  id: string;
  type: 'arrive' | 'leave';
  /** Null at a private place: the host keeps neither its id nor its name. */
  placeId: string | null;
  placeName: string | null;
  private: boolean;
  /** Unix seconds: when it happened on the phone, and when this host received it. */
  at: number;
  receivedAt: number;
}

export type PlaceEventListener = (event: PlaceEvent) => void;

export interface LocationFeatureDeps {
  /**
   * How locate (and maps next) wake the phone. Default: relayLocationPush over a relay gateway of the
   * feature's own (one per app), which reads each profile's pairing at send time like the notifier's.
   * app.ts may pass one over its own gateway instead (its user agent, its test fetch).
   */
  relay?: LocationRelay;
}

export interface LocationFeature extends HostFeature {
  /**
   * Calls `listener` for each arrive or leave event a batch stored (after it is committed; duplicates
   * and events dropped by pause, sharing state or an unknown place are not told). Returns the stop.
   */
  onPlaceEvent(listener: PlaceEventListener): () => void;
  /** Resolves once every arrive or leave event heard so far has been through the place rules. */
  rulesSettled(): Promise<void>;
}

/**
 * Location (`location`): where the user is, as the phone shares it, sealed end to end on the phone-data
 * core and kept in the profile's conduit-location.sqlite3 (the seed, Location), with the read log
 * (`GET /location/reads`), conduit_location and on-demand locate through the relay's location push.
 */
export function locationFeature(deps: LocationFeatureDeps = {}): LocationFeature {
  const signals = new FixSignals();
  // One default port per app (kernel), so a process that builds several hosts (tests) keeps them apart.
  const relays = new WeakMap<FeatureKernel, LocationRelay>();
  function relayFor(kernel: FeatureKernel): LocationRelay {
    if (deps.relay) return deps.relay;
    let relay = relays.get(kernel);
    if (!relay) {
      relay = relayLocationPush({
        gateway: httpRelayGateway({ userAgent: 'Conduit-Host', timeoutMs: LOCATION_HOST_LIMITS.relayTimeoutMs }),
        clock: kernel.clock,
      });
      relays.set(kernel, relay);
    }
    return relay;
  }
  const listeners = new Set<PlaceEventListener>();
  // One engine per app (kernel), as the relay port; the set lets rulesSettled wait on every one.
  const rules = new WeakMap<FeatureKernel, PlaceRules>();
  const engines = new Set<PlaceRules>();
  function rulesFor(kernel: FeatureKernel): PlaceRules {
    let found = rules.get(kernel);
    if (!found) {
      found = new PlaceRules({
        jobs: kernel.hermesJobs ?? null,
        clock: kernel.clock,
        log: kernel.log,
        timeZone: profileTimeZone,
      });
      rules.set(kernel, found);
      engines.add(found);
    }
    return found;
  }
  /**
   * The events the batch being stored kept, for afterBatch. Safe as one slot: the core stores a batch
   * and calls afterBatch synchronously in the same request, so no other batch runs in between.
   */
  let keptEvents: KeptPlaceEvent[] = [];

  function tellPlaceEvents(landed: LandedBatch<LocationBatch>): void {
    const kept = keptEvents;
    keptEvents = [];
    if (kept.length === 0 || listeners.size === 0) return;
    const store = PhoneDataStore.open(landed.home, LOCATION_SHAPE, false);
    const places: ReturnType<typeof placesOf> = store ? placesOf(store, landed.deviceId) : new Map();
    store?.close();
    for (const event of kept) {
      const told: PlaceEvent = {
        profile: landed.profile,
        home: landed.home,
        deviceId: landed.deviceId,
        id: event.id,
        type: event.type,
        placeId: event.placeId,
        placeName: event.placeId === null ? null : (places.get(event.placeId)?.name ?? null),
        private: event.private,
        at: event.at,
        receivedAt: landed.nowS,
      };
      for (const listener of [...listeners]) listener(told);
    }
  }

  const core = sealedIngest<LocationBatch>({
    feature: 'location',
    title: 'Location',
    label: LOCATION_LABEL,
    routes: locationRoutes,
    limits: {
      devicesPerProfile: LOCATION_LIMITS.devicesPerProfile,
      sealedBatchMaxBytes: LOCATION_LIMITS.sealedBatchMaxBytes,
      uploadsPerMinute: LOCATION_LIMITS.uploadsPerMinute,
    },
    store: { schema: LOCATION_SCHEMA, deviceTables: LOCATION_DEVICE_TABLES },
    parseBatch: parseLocationBatch,
    storeBatch: (store, deviceId, batch, nowS) => {
      keptEvents = [];
      return storeLocationBatch(store, deviceId, batch, nowS, keptEvents);
    },
    summarize: summarizeLocation,
    afterBatch(landed) {
      if (landed.outcome.stored > 0) signals.notify(landed.home);
      tellPlaceEvents(landed);
    },
  });

  return {
    ...core,
    async register(scope, kernel) {
      await core.register(scope, kernel);
      bindRoute(scope, getLocationReads, ({ query }) => {
        const profile = profileForRoute(kernel.hermesHome, query.profile);
        const store = PhoneDataStore.open(profile.home, LOCATION_SHAPE, false);
        let reads: ReturnType<typeof locationReadLog> = [];
        try {
          if (store) reads = locationReadLog(store, kernel.clock.now() / 1000);
        } finally {
          store?.close();
        }
        return { status: 200, body: { ok: true as const, reads }, headers: { 'Cache-Control': 'no-store' } };
      });
      const engine = rulesFor(kernel);
      registerPlaceRules(scope, kernel, engine, listeners);
      scope.addHook('onClose', async () => void engines.delete(engine));
    },
    tools: [locationTool({ relayFor, signals, rulesFor })],
    sharedData: [{ what: 'location', tool: 'conduit_location', shared: locationShared }],
    voiceTools: [locationVoiceTool],
    onPlaceEvent(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async rulesSettled() {
      await Promise.all([...engines].map((engine) => engine.settled()));
    },
  };
}

/**
 * Place rules' routes (`GET /location/rules`, `DELETE /location/rules/<id>`), and their ear on this
 * app's arrive and leave events. One feature object can serve several apps in a process (tests), so
 * each app's rules hear only the events of profiles under its own Hermes home, and stop with the app.
 */
function registerPlaceRules(
  scope: Parameters<LocationFeature['register']>[0],
  kernel: FeatureKernel,
  rules: PlaceRules,
  listeners: Set<PlaceEventListener>,
): void {
  const ours = (event: PlaceEvent): boolean => {
    try {
      return profileForRoute(kernel.hermesHome, event.profile).home === event.home;
    } catch {
      return false;
    }
  };
  const listener: PlaceEventListener = (event) => {
    if (ours(event)) rules.heard({ name: event.profile, home: event.home }, event);
  };
  listeners.add(listener);
  scope.addHook('onClose', async () => {
    listeners.delete(listener);
    await rules.settled();
  });
  const readable = async <T>(work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      if (error instanceof CorruptStateError) throw new DetailError(503, error.message);
      throw error;
    }
  };
  bindRoute(scope, getLocationRules, async ({ query }) => {
    const profile = profileForRoute(kernel.hermesHome, query.profile);
    const list = await readable(() => rules.list(profile.home));
    return { status: 200, body: { ok: true as const, rules: list }, headers: { 'Cache-Control': 'no-store' } };
  });
  bindRoute(scope, deleteLocationRule, async ({ query, params }) => {
    const profile = profileForRoute(kernel.hermesHome, query.profile);
    if (!HERMES_JOB_ID.test(params.rule_id)) throw new DetailError(400, 'Unknown rule id');
    const outcome = await readable(() => rules.removeJobAndRule(profile, params.rule_id));
    if (typeof outcome !== 'boolean') throw new DetailError(outcome.status, outcome.message);
    return { status: 200, body: { ok: true as const, removed: outcome }, headers: { 'Cache-Control': 'no-store' } };
  });
}
