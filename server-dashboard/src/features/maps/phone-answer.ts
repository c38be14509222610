import type { MapsAnswerResult, MapsLookupPlace, MapsLookupRequest } from '@conduit/contracts/dashboard/location';
import { MAPS_REFUSALS, MapsRefusal } from './maps-errors.js';
import type { MapsRequest } from './maps-request.js';
import type { PlaceCache } from './place-cache.js';
import { savedPlaceNamed, type PlaceInput } from './place-input.js';
import type { PhoneAnswer } from './phone-lookups.js';

/**
 * The phone path's two translations: a validated conduit_maps request into the lookup sealed for the
 * phone (places resolved as far as the host can: "me", a saved place by name, a place this host named
 * earlier as its coordinate), and the phone's result into the tool's answer at the detail the user
 * chose for background sharing (the seed: "'from me' answers carry durations, distances and places at
 * the detail they chose"). The phone applies the detail; the host applies it again here.
 */

export const PHONE_SOURCE = "Apple Maps on the user's iPhone";

/** What a lookup involves of the user: the phone answers it when one is true. */
export interface Involvement {
  me: boolean;
  savedPlace: boolean;
  transit: boolean;
}

function placesOf(request: MapsRequest): PlaceInput[] {
  switch (request.action) {
    case 'search':
      return request.near ? [request.near] : [];
    case 'lookup':
    case 'reverse_geocode':
      return [request.place];
    case 'directions':
      return [request.from, request.to];
    case 'travel_times':
      return [request.from, ...request.destinations];
  }
}

export function involvementOf(request: MapsRequest, savedNames: readonly string[]): Involvement {
  const places = placesOf(request);
  return {
    me: places.some((place) => place.kind === 'me'),
    savedPlace: places.some((place) => place.kind === 'text' && savedPlaceNamed(place.text, savedNames) !== null),
    transit: (request.action === 'directions' || request.action === 'travel_times') && request.mode === 'transit',
  };
}

export const involvesUser = (involvement: Involvement) =>
  involvement.me || involvement.savedPlace || involvement.transit;

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** The lookup the phone is asked, from a validated request. */
export function lookupRequestOf(
  request: MapsRequest,
  context: { home: string; savedNames: readonly string[]; places: PlaceCache },
): MapsLookupRequest {
  const place = (input: PlaceInput): MapsLookupPlace => {
    switch (input.kind) {
      case 'me':
        return { me: true };
      case 'coordinate':
        return { lat: input.lat, lon: input.lon };
      case 'place_id': {
        const remembered = context.places.find(context.home, input.id);
        if (!remembered) throw new MapsRefusal(MAPS_REFUSALS.unknownPlaceId(input.id));
        return { lat: remembered.lat, lon: remembered.lon, name: remembered.name };
      }
      case 'text': {
        const saved = savedPlaceNamed(input.text, context.savedNames);
        return saved !== null ? { saved_place: saved } : { text: input.text.trim() };
      }
    }
  };
  switch (request.action) {
    case 'search':
      return {
        action: 'search',
        query: request.query,
        categories: [...request.categories],
        near: request.near ? place(request.near) : null,
        region: request.region,
      };
    case 'lookup':
    case 'reverse_geocode':
      return { action: request.action, place: place(request.place) };
    case 'directions':
      return {
        action: 'directions',
        from: place(request.from),
        to: place(request.to),
        mode: request.mode,
        avoid_tolls: request.avoidTolls,
        arrive_by: iso(request.arriveByMs),
        depart_at: iso(request.departAtMs),
      };
    case 'travel_times':
      return {
        action: 'travel_times',
        from: place(request.from),
        destinations: request.destinations.map(place),
        mode: request.mode,
        depart_at: iso(request.departAtMs),
      };
  }
}

const AREA_NOTE =
  "the user's area (about 1 km), as they share it: distances and times from it are rounded, and no steps near them are given";

const isMe = (place: MapsLookupPlace | null): boolean => place !== null && 'me' in place;

/** A place of the lookup as the answer names it: never the user's coordinates. */
function named(place: MapsLookupPlace, detail: 'precise' | 'area'): Record<string, unknown> {
  if ('me' in place) return { me: true, detail, ...(detail === 'area' ? { note: AREA_NOTE } : {}) };
  if ('saved_place' in place) return { saved_place: place.saved_place };
  if ('text' in place) return { name: place.text };
  return { name: place.name ?? `${place.lat},${place.lon}`, lat: place.lat, lon: place.lon };
}

/** Rounds what would place the user finer than the area they share: 100 m and whole minutes. */
function coarse(area: boolean) {
  return {
    m: (value: number) => (area ? Math.round(value / 100) * 100 : Math.round(value)),
    s: (value: number) => (area ? Math.round(value / 60) * 60 : Math.round(value)),
  };
}

/**
 * The tool's answer from the phone's result. `remember` gives a place the phone found a place_id a later
 * call can use (the host's place cache), as the host engine's answers do.
 */
export function phoneAnswerOf(
  lookup: MapsLookupRequest,
  detail: 'precise' | 'area',
  result: MapsAnswerResult,
  context: {
    nowMs: number;
    remember: (place: { name: string; address: string | null; lat: number; lon: number }) => string;
  },
): PhoneAnswer {
  if (!result.ok) return { ok: false, error: `The user's iPhone could not answer: ${result.error}` };
  const base = { ok: true as const, source: PHONE_SOURCE };
  const withId = (place: NonNullable<typeof result.places>[number], area: boolean) => {
    const { distance_m: distance, ...rest } = place;
    const id =
      rest.lat !== undefined && rest.lon !== undefined
        ? context.remember({ name: rest.name, address: rest.address ?? null, lat: rest.lat, lon: rest.lon })
        : null;
    return {
      ...(id !== null ? { place_id: id } : {}),
      ...rest,
      ...(distance !== undefined ? { distance_m: coarse(area).m(distance) } : {}),
    };
  };
  const places = result.places ?? [];
  switch (lookup.action) {
    case 'search': {
      const area = detail === 'area' && isMe(lookup.near);
      const results = places.map((place) => withId(place, area));
      return {
        ...base,
        ...(lookup.near ? { near: named(lookup.near, detail) } : {}),
        results,
        ...(results.length === 0 ? { note: 'Apple Maps on the iPhone found nothing for that search.' } : {}),
      };
    }
    case 'lookup':
    case 'reverse_geocode': {
      const [first, ...others] = places;
      if (!first) return { ok: false, error: MAPS_REFUSALS.noPlaceFound };
      if (isMe(lookup.place)) {
        if (detail === 'area') {
          // An address near the user would be finer than the area they share: the area names only.
          return { ...base, place: named(lookup.place, detail), area: (first.area ?? []).join(', ') };
        }
        return { ...base, of: named(lookup.place, detail), place: withId(first, false) };
      }
      return {
        ...base,
        place: withId(first, false),
        ...(lookup.action === 'lookup' && others.length > 0
          ? { other_matches: others.map((p) => withId(p, false)) }
          : {}),
      };
    }
    case 'directions': {
      const area = detail === 'area' && (isMe(lookup.from) || isMe(lookup.to));
      const round = coarse(area);
      const arriveByMs = lookup.arrive_by === null ? null : Date.parse(lookup.arrive_by);
      const departMs = lookup.depart_at === null ? context.nowMs : Date.parse(lookup.depart_at);
      const routes = (result.routes ?? []).map((route) => {
        const duration = round.s(route.duration_s);
        return {
          name: route.name ?? null,
          distance_m: round.m(route.distance_m),
          duration_s: duration,
          has_tolls: route.has_tolls === true,
          ...(arriveByMs !== null
            ? { leave_by: new Date(arriveByMs - duration * 1000).toISOString() }
            : { arrive_at: new Date(departMs + duration * 1000).toISOString() }),
          // Steps near the user name the streets they are on: only at precise detail.
          ...(area
            ? {}
            : { steps: (route.steps ?? []).map((step) => ({ ...step, distance_m: Math.round(step.distance_m) })) }),
        };
      });
      return {
        ...base,
        from: named(lookup.from, detail),
        to: named(lookup.to, detail),
        mode: lookup.mode,
        ...(lookup.avoid_tolls ? { avoid_tolls: true } : {}),
        ...(lookup.arrive_by !== null ? { arrive_by: lookup.arrive_by } : {}),
        routes,
        ...(routes.length === 0 ? { note: 'Apple Maps on the iPhone found no route between those places.' } : {}),
      };
    }
    case 'travel_times': {
      const area = detail === 'area' && isMe(lookup.from);
      const round = coarse(area);
      const times = lookup.destinations.map((destination, index) => {
        const time = result.travel_times?.[index];
        const to = named(destination, detail);
        if (!time) return { to, error: 'The iPhone gave no travel time for this place.' };
        if ('error' in time) return { to, error: time.error };
        return { to, distance_m: round.m(time.distance_m), duration_s: round.s(time.duration_s) };
      });
      return { ...base, from: named(lookup.from, detail), mode: lookup.mode, travel_times: times };
    }
  }
}
