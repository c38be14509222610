import { createHash } from 'node:crypto';
import { setBounded } from '../../bounded-map.js';
import { MAPS_LIMITS } from './maps-limits.js';

/** A place an answer gave the model, kept so a later call can name it as place_id:<id>. */
export interface RememberedPlace {
  name: string;
  address: string | null;
  lat: number;
  lon: number;
  /** Apple's PoiCategory, when the place is a point of interest. */
  category?: string;
  country_code?: string;
}

/** A place's id: stable for the same name and coordinate, so asking twice gives the same id. */
function placeIdOf(place: RememberedPlace): string {
  return createHash('sha256')
    .update(`${place.name}\n${place.lat.toFixed(6)}\n${place.lon.toFixed(6)}`)
    .digest('base64url')
    .replace(/[-_]/g, '')
    .slice(0, 12);
}

/**
 * The places this host's answers named, per profile, in memory only (a restart forgets them; the
 * model then searches again). Bounded per profile and in profiles, oldest first.
 */
export class PlaceCache {
  private readonly profiles = new Map<string, Map<string, RememberedPlace>>();

  remember(home: string, place: RememberedPlace): string {
    const id = placeIdOf(place);
    const places = this.profiles.get(home) ?? new Map<string, RememberedPlace>();
    setBounded(places, id, place, MAPS_LIMITS.placesPerProfile);
    setBounded(this.profiles, home, places, MAPS_LIMITS.profilesRemembered);
    return id;
  }

  find(home: string, id: string): RememberedPlace | null {
    return this.profiles.get(home)?.get(id) ?? null;
  }
}
