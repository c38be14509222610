import {
  getLocationReads,
  LOCATION_LABEL,
  LOCATION_LIMITS,
  locationRoutes,
  type LocationBatch,
} from '@conduit/contracts/dashboard/location';
import { bindRoute } from '@conduit/contracts/server';
import { httpRelayGateway } from '../../delivery/relay-gateway.js';
import type { FeatureKernel, HostFeature } from '../../kernel/feature.js';
import { profileForRoute } from '../../kernel/profile-files.js';
import { sealedIngest, type LandedBatch } from '../phone-data/index.js';
import { PhoneDataStore } from '../phone-data/store.js';
import { FixSignals } from './locate.js';
import { LOCATION_HOST_LIMITS } from './location-limits.js';
import { locationReadLog } from './location-reads.js';
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

export { LOCATION_HOST_LIMITS } from './location-limits.js';
export { locationMapsOrigin, locationMapsReadLog, type MapsMe } from './location-for-maps.js';
export {
  latestFix,
  locationShared,
  locationSharing,
  readLocation,
  type LocationReadContext,
  type LocationReadResult,
  type LocationSharingSummary,
  type SharedFix,
} from './location-reads.js';
export {
  relayLocationPush,
  sealLocationRequest,
  type LocationPushOutcome,
  type LocationPushRequest,
  type LocationRelay,
} from './location-relay.js';
export { LOCATION_SHAPE } from './location-store.js';
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
    },
    tools: [locationTool({ relayFor, signals })],
    onPlaceEvent(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
