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
export type MapsAction = 'search' | 'lookup' | 'reverse_geocode' | 'directions' | 'travel_times' | 'navigate';

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

/** The phone that answers a profile's maps lookups now, as location sees it. */
export interface MapsPhoneTarget {
  deviceId: string;
  /** The device's current location key id: the lookup is sealed for this key only. */
  kid: string;
  /** The detail the user chose for background sharing: what an answer may say about "me". */
  detail: LocationDetail;
}

/** Whether the location push left for the phone; `reason` is worded for the model. */
export type MapsPhoneWake = { kind: 'sent' } | { kind: 'refused'; reason: string };

/** A sealed lookup or answer's parts, the ids in the clear (bound by the associated data). */
export interface MapsPhoneSealed {
  deviceId: string;
  kid: string;
  lookupId: string;
  nonce: Uint8Array;
  ct: Uint8Array;
}

/**
 * The user's iPhone as the phone path of conduit_maps needs it (the seed: "The host has no map, so the
 * user's iPhone answers"). Location implements it: it holds the device's location key, so the key never
 * leaves it, and it owns the location push. Wired in features/index.ts.
 */
export interface MapsPhone {
  /**
   * The phone that answers maps lookups: background sharing on and not paused, and `maps` among what
   * it says it does (sharing.features); null when there is none.
   */
  answering(home: string): MapsPhoneTarget | null;
  /** The device's current location kid, or null when it has no key here (never agreed, wiped). */
  kidOf(home: string, deviceId: string): string | null;
  /** Seals a lookup for that device and key (`maps host-to-device`); null when the key is gone. */
  seal(
    home: string,
    target: { deviceId: string; kid: string; lookupId: string },
    plaintext: Uint8Array,
  ): MapsPhoneSealed | null;
  /** Opens an answer (`maps device-to-host`); why not when it does not. */
  open(home: string, sealed: MapsPhoneSealed): Uint8Array | 'unknown_key' | 'does_not_open';
  /** Wakes the phone with the location push (`kind: 'maps'`, the lookup id only, sealed). */
  wake(profile: ProfileScope, lookupId: string): Promise<MapsPhoneWake>;
  /**
   * The straight-line distance from the latest shared fix to a saved place (the fix's own distances, at
   * its detail), for the guess when the phone does not answer; null when the fix carries none.
   */
  straightLine(home: string, placeName: string): { place: string; m: number; ageS: number } | null;
}

/** How the user travels, as conduit_maps and Apple Maps name it. */
export type NavigateMode = 'automobile' | 'walking' | 'transit' | 'cycling';

/** A navigate prompt as the maps feature words it; the text is already within the prompt bounds. */
export interface NavigatePrompt {
  title: string;
  /** Markdown naming the destination and the mode. */
  preview: string;
  actionLabel: string;
  spokenYes: string[];
  /** The chat that asks; the phone opens it. */
  sessionId: string;
  ttlMinutes: number;
  /** The destination as the phone should open it (an address, lat,lon, or the text), and the mode. */
  maps: { to: string; mode: NavigateMode };
}

/** Whether the prompt was kept, and whether the phone was told of it now. `message` is worded for the model. */
export type NavigateAsked =
  { ok: true; promptId: string; expiresAtS: number; phoneNotified: boolean } | { ok: false; message: string };

/**
 * Conduit's navigate (the seed: "a confirm prompt (conduit_present's store and exchange) carrying maps:
 * {to, mode}"). The present feature owns the store, the exchange and the nudge; it is wired in
 * features/index.ts, so this feature never imports it.
 */
export interface MapsNavigator {
  /** Whether the profile's last present exchange advertised both `present-v1` and `maps-navigate`. */
  canNavigate(home: string): Promise<boolean>;
  /** Keeps a waiting confirm prompt carrying `maps` and nudges the phone (a failed nudge still keeps it). */
  ask(profile: ProfileScope, prompt: NavigatePrompt): Promise<NavigateAsked>;
}
