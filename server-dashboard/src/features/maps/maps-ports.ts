import type { ProfileScope } from '../../notifier/notifier.js';

/** The detail the user chose for background sharing (the seed, location): what "me" may reveal. */
export type LocationDetail = 'precise' | 'area' | 'places';

/** The last location fix the phone shared with a profile, at the detail the user chose. */
export interface SharedFix {
  lat: number;
  lon: number;
  detail: LocationDetail;
}

/**
 * Where "me" is and which names are the user's saved places: the location feature answers (it owns
 * the shared fixes). `savedPlaceNames` is optional until location wires it; without it a saved place's
 * name is looked up at Apple like any other name.
 */
export interface MapsOrigin {
  /** The profile's last shared fix, or null when there is none (sharing off, paused or never on). */
  me(home: string): Promise<SharedFix | null> | SharedFix | null;
  /** The names of the user's saved places (their coordinates stay on the phone). */
  savedPlaceNames?(home: string): Promise<readonly string[]> | readonly string[];
}

/** The actions of conduit_maps. */
export type MapsAction = 'search' | 'lookup' | 'reverse_geocode' | 'directions' | 'travel_times';

/**
 * The location read log (the seed: "Lookups are logged in the location read log (action and chat,
 * never the query)"). Location provides it; until then lookups are not logged anywhere.
 */
export interface MapsReadLog {
  record(
    profile: ProfileScope,
    entry: { action: MapsAction; chat: string; cronJobId: string | undefined; atMs: number },
  ): Promise<void> | void;
}

/**
 * The phone's "Keep maps lookups on this iPhone" switch, per profile: on, the host engine is off for
 * that profile. The phone will set it through location's settings; until then a constructor option.
 */
export interface MapsSettings {
  hostEngineOff(home: string): Promise<boolean> | boolean;
}
