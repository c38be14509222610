import type { Clock } from '../../clock.js';
import type { ProfileScope } from '../../notifier/notifier.js';
import { PhoneDataStore } from '../../kernel/phone-data/store.js';
import { LOCATION_HOST_LIMITS } from './location-limits.js';
import { latestFix, logLocationUse } from './location-reads.js';
import { LOCATION_SHAPE, placesOf, stateOf, storedSharing } from './location-store.js';

/**
 * What maps reads of location, in the shape of maps' ports (features/maps/maps-ports.ts: MapsOrigin,
 * MapsReadLog), written structurally so neither feature imports the other; app.ts hands these to
 * mapsFeature. "me" follows the detail the user chose for background sharing (the seed: "'from me'
 * answers carry … places at the detail they chose for background sharing"), so a precise foreground fix
 * is coarsened to area when background sharing is area, and "places only" has no "me" at all.
 */

export interface MapsMe {
  lat: number;
  lon: number;
  detail: 'precise' | 'area' | 'places';
}

export function locationMapsOrigin(clock: Clock): {
  me(home: string): MapsMe | null;
  savedPlaceNames(home: string): readonly string[];
} {
  return {
    me(home) {
      const background = backgroundDetail(home);
      if (background === null || background === 'places') return null;
      const fix = latestFix(home, { maxAgeS: LOCATION_HOST_LIMITS.mapsMeMaxAgeS, nowS: clock.now() / 1000 });
      if (!fix || fix.lat === undefined || fix.lon === undefined) return null;
      if (fix.detail === 'area' || background === 'area') {
        return { lat: Math.round(fix.lat * 100) / 100, lon: Math.round(fix.lon * 100) / 100, detail: 'area' };
      }
      return { lat: fix.lat, lon: fix.lon, detail: 'precise' };
    },
    savedPlaceNames(home) {
      const store = PhoneDataStore.open(home, LOCATION_SHAPE, false);
      if (!store) return [];
      try {
        const names = storedSharing(store)
          .filter((sharing) => stateOf(sharing) === 'on')
          .flatMap((sharing) => [...placesOf(store, sharing.deviceId).values()])
          .flatMap((place) => (place.private || place.name === null ? [] : [place.name]));
        return [...new Set(names)];
      } finally {
        store.close();
      }
    },
  };
}

/** The coarsest background precision among the devices sharing in the background now, or null. */
function backgroundDetail(home: string): 'precise' | 'area' | 'places' | null {
  const store = PhoneDataStore.open(home, LOCATION_SHAPE, false);
  if (!store) return null;
  try {
    const details = storedSharing(store)
      .filter((sharing) => stateOf(sharing) === 'on' && sharing.background)
      .map((sharing) => sharing.precision.background);
    if (details.length === 0) return null;
    if (details.includes('places')) return 'places';
    return details.includes('area') ? 'area' : 'precise';
  } finally {
    store.close();
  }
}

/** Maps lookups in the location read log: action (`maps.directions`) and chat, never the query. */
export function locationMapsReadLog(): {
  record(
    profile: ProfileScope,
    entry: { action: string; chat: string; cronJobId: string | undefined; atMs: number },
  ): void;
} {
  return {
    record(profile, entry) {
      logLocationUse(profile.home, {
        at: entry.atMs / 1000,
        action: `maps.${entry.action}`,
        via: entry.cronJobId ? `cron ${entry.cronJobId}` : 'tool',
        chat: entry.chat,
      });
    },
  };
}
