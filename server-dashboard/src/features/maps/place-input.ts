import { MAPS_LIMITS } from './maps-limits.js';

/** A place as the model names one (the seed: "me", a saved place's name, an address or a name, place_id:<id>, or lat,lon). */
export type PlaceInput =
  | { kind: 'me' }
  | { kind: 'place_id'; id: string }
  | { kind: 'coordinate'; lat: number; lon: number }
  | { kind: 'text'; text: string };

const COORDINATE = /^(-?\d{1,2}(?:\.\d+)?)\s*,\s*(-?\d{1,3}(?:\.\d+)?)$/;
const PLACE_ID = /^place_id:([A-Za-z0-9]{1,64})$/i;

/** The place a text names, or the reason it names none (validated before anything is looked up). */
export function parsePlaceInput(raw: string): PlaceInput | { error: string } {
  const text = raw.trim();
  if (!text) return { error: 'A place is empty.' };
  if (text.length > MAPS_LIMITS.queryMaxChars)
    return { error: `A place is at most ${MAPS_LIMITS.queryMaxChars} characters.` };
  if (/^me$/i.test(text)) return { kind: 'me' };
  const id = PLACE_ID.exec(text);
  if (id?.[1]) return { kind: 'place_id', id: id[1] };
  if (/^place_id:/i.test(text)) return { error: 'A place_id is place_id:<id>, with the id from an earlier answer.' };
  const coordinate = COORDINATE.exec(text);
  if (coordinate?.[1] && coordinate[2]) {
    const lat = Number(coordinate[1]);
    const lon = Number(coordinate[2]);
    if (Math.abs(lat) > 90 || Math.abs(lon) > 180)
      return { error: 'A lat,lon place needs a latitude within ±90 and a longitude within ±180.' };
    return { kind: 'coordinate', lat, lon };
  }
  return { kind: 'text', text };
}

/** Apple's form of a coordinate: `lat,lon`. */
export function latLon(lat: number, lon: number): string {
  return `${lat},${lon}`;
}

/** The great-circle distance between two points, in metres (for "how far" beside search results). */
export function distanceMeters(a: { lat: number; lon: number }, b: { lat: number; lon: number }): number {
  const radians = (degrees: number) => (degrees * Math.PI) / 180;
  const dLat = radians(b.lat - a.lat);
  const dLon = radians(b.lon - a.lon);
  const h = Math.sin(dLat / 2) ** 2 + Math.cos(radians(a.lat)) * Math.cos(radians(b.lat)) * Math.sin(dLon / 2) ** 2;
  return Math.round(2 * 6_371_000 * Math.asin(Math.min(1, Math.sqrt(h))));
}

/** The saved place a text names (case and spaces aside), as the phone spells it, or null. */
export function savedPlaceNamed(text: string, savedNames: readonly string[]): string | null {
  const wanted = text.trim().toLowerCase();
  return savedNames.find((name) => name.trim().toLowerCase() === wanted) ?? null;
}
