import type { Clock } from '../../clock.js';
import type { ProfileScope } from '../../notifier/notifier.js';
import {
  directionsResponse,
  etaResponse,
  placeResults,
  searchResponse,
  type AppleMapsApi,
  type ApplePlace,
} from './apple-maps-api.js';
import { MAPS_REFUSALS, MapsRefusal } from './maps-errors.js';
import { MAPS_LIMITS } from './maps-limits.js';
import type { LocationDetail, MapsOrigin } from './maps-ports.js';
import { APPLE_TRANSPORT, type MapsRequest, type Region, type TravelMode } from './maps-request.js';
import type { MapsRelayTarget } from './maps-token-client.js';
import type { PlaceCache, RememberedPlace } from './place-cache.js';
import { distanceMeters, latLon, savedPlaceNamed, type PlaceInput } from './place-input.js';

/** A place as an answer names it: with the place_id a later call can use. */
interface PlaceAnswer extends RememberedPlace {
  place_id: string;
  /** From the search's center, as the crow flies. */
  distance_m?: number;
}

/** "me" as an answer names it: never its coordinates, only the detail they were used at. */
interface MeAnswer {
  me: true;
  detail: Exclude<LocationDetail, 'places'>;
  note?: string;
}

/** A point a lookup starts from or goes to, with how the answer names it. */
interface Point {
  lat: number;
  lon: number;
  answer: PlaceAnswer | MeAnswer;
}

const AREA_NOTE = "the user's area (about 1 km), as they share it: distances and times from it are approximate";

/** Apple's form of a time: ISO 8601 in UTC, whole seconds. */
function appleTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function isoTime(ms: number): string {
  return new Date(ms).toISOString();
}

/** The host engine refuses transit: the seed says transit routes need the phone. */
function hostMode(mode: TravelMode): string {
  if (mode === 'transit') throw new MapsRefusal(MAPS_REFUSALS.transitNeedsPhone);
  return APPLE_TRANSPORT[mode];
}

/**
 * The host side of conduit_maps (the seed: lookups that don't involve the phone go to Apple Maps
 * from this host, with the relay's token, so the relay never sees a lookup). Each action resolves its
 * places (validated already), asks Apple as few times as it can, and answers in the tool's own shape.
 */
export class MapsEngine {
  constructor(private readonly deps: { api: AppleMapsApi; places: PlaceCache; origin: MapsOrigin; clock: Clock }) {}

  async run(profile: ProfileScope, target: MapsRelayTarget, request: MapsRequest): Promise<Record<string, unknown>> {
    const lookup = new Lookup(this.deps, profile.home, target);
    switch (request.action) {
      case 'search':
        return lookup.search(request.query, request.categories, request.near, request.region);
      case 'lookup':
        return lookup.lookup(request.place);
      case 'reverse_geocode':
        return lookup.reverseGeocode(request.place);
      case 'directions':
        return lookup.directions(request);
      case 'travel_times':
        return lookup.travelTimes(request);
    }
  }
}

/** One tool call's lookups for one profile. */
class Lookup {
  constructor(
    private readonly deps: { api: AppleMapsApi; places: PlaceCache; origin: MapsOrigin; clock: Clock },
    private readonly home: string,
    private readonly target: MapsRelayTarget,
  ) {}

  async search(
    query: string,
    categories: readonly string[],
    near: PlaceInput | null,
    region: Region | null,
  ): Promise<Record<string, unknown>> {
    const center = near ? await this.point(near) : null;
    const answer = await this.deps.api.get(
      this.target,
      '/v1/search',
      {
        q: query,
        searchLocation: center ? latLon(center.lat, center.lon) : undefined,
        searchRegion: region ? `${region.north},${region.east},${region.south},${region.west}` : undefined,
        includePoiCategories: categories.length > 0 ? categories.join(',') : undefined,
      },
      searchResponse,
    );
    const results = answer.results.slice(0, MAPS_LIMITS.resultsPerAnswer).map((place) => {
      const described = this.describe(place);
      if (center) described.distance_m = distanceMeters(center, described);
      return described;
    });
    return {
      ok: true,
      source: 'Apple Maps',
      ...(center ? { near: center.answer } : {}),
      results,
      ...(results.length === 0 ? { note: 'Apple Maps found nothing for that search.' } : {}),
    };
  }

  async lookup(place: PlaceInput): Promise<Record<string, unknown>> {
    if (place.kind === 'me' || place.kind === 'coordinate') return this.reverseGeocode(place);
    if (place.kind === 'place_id') return { ok: true, source: 'Apple Maps', place: this.remembered(place.id) };
    await this.refuseSavedPlace(place.text);
    const found = await this.geocode(place.text);
    const [first, ...others] = found.slice(0, MAPS_LIMITS.resultsPerAnswer);
    if (!first) throw new MapsRefusal(MAPS_REFUSALS.noPlaceFound);
    return { ok: true, source: 'Apple Maps', place: first, ...(others.length > 0 ? { other_matches: others } : {}) };
  }

  async reverseGeocode(place: PlaceInput): Promise<Record<string, unknown>> {
    const point = await this.point(place);
    const answer = await this.deps.api.get(
      this.target,
      '/v1/reverseGeocode',
      { loc: latLon(point.lat, point.lon) },
      placeResults,
    );
    const first = answer.results[0];
    if (!first) throw new MapsRefusal('Apple Maps has no address at that place.');
    if ('me' in point.answer && point.answer.detail === 'area') {
      // An address at a rounded point would look precise and be wrong: the area is what is shared.
      const address = first.structuredAddress;
      const area = [address?.subLocality, address?.locality, address?.administrativeArea, first.country].filter(
        (part): part is string => typeof part === 'string' && part.length > 0,
      );
      return { ok: true, source: 'Apple Maps', place: point.answer, area: area.join(', ') };
    }
    return {
      ok: true,
      source: 'Apple Maps',
      ...('me' in point.answer ? { of: point.answer } : {}),
      place: this.describe(first),
    };
  }

  async directions(request: Extract<MapsRequest, { action: 'directions' }>): Promise<Record<string, unknown>> {
    const transportType = hostMode(request.mode);
    const from = await this.endpoint(request.from);
    const to = await this.endpoint(request.to);
    const answer = await this.deps.api.get(
      this.target,
      '/v1/directions',
      {
        origin: from.param,
        destination: to.param,
        transportType,
        avoid: request.avoidTolls ? 'Tolls' : undefined,
        arrivalDate: request.arriveByMs !== null ? appleTime(request.arriveByMs) : undefined,
        departureDate: request.departAtMs !== null ? appleTime(request.departAtMs) : undefined,
        requestsAlternateRoutes: 'true',
      },
      directionsResponse,
    );
    const departMs = request.departAtMs ?? this.deps.clock.now();
    const routes = answer.routes.slice(0, MAPS_LIMITS.routesPerAnswer).map((route) => ({
      name: route.name ?? null,
      distance_m: Math.round(route.distanceMeters),
      duration_s: Math.round(route.durationSeconds),
      has_tolls: route.hasTolls === true,
      ...(request.arriveByMs !== null
        ? { leave_by: isoTime(request.arriveByMs - route.durationSeconds * 1000) }
        : { arrive_at: isoTime(departMs + route.durationSeconds * 1000) }),
      // Apple's first step of a route is the start, with no instructions: only steps that say something.
      steps: route.stepIndexes.slice(0, MAPS_LIMITS.stepsPerRoute).flatMap((index) => {
        const step = answer.steps[index];
        return step?.instructions
          ? [{ instructions: step.instructions, distance_m: Math.round(step.distanceMeters ?? 0) }]
          : [];
      }),
    }));
    return {
      ok: true,
      source: 'Apple Maps',
      from: from.answer ?? (answer.origin ? this.describe(answer.origin) : null),
      to: to.answer ?? (answer.destination ? this.describe(answer.destination) : null),
      mode: request.mode,
      ...(request.avoidTolls ? { avoid_tolls: true } : {}),
      ...(request.arriveByMs !== null ? { arrive_by: isoTime(request.arriveByMs) } : {}),
      routes,
      ...(routes.length === 0 ? { note: 'Apple Maps found no route between those places.' } : {}),
    };
  }

  async travelTimes(request: Extract<MapsRequest, { action: 'travel_times' }>): Promise<Record<string, unknown>> {
    const transportType = hostMode(request.mode);
    const from = await this.point(request.from);
    // Apple's /v1/etas takes coordinates only: names and addresses are geocoded first.
    const destinations: Point[] = [];
    for (const destination of request.destinations) destinations.push(await this.point(destination));
    const answer = await this.deps.api.get(
      this.target,
      '/v1/etas',
      {
        origin: latLon(from.lat, from.lon),
        destinations: destinations.map((point) => latLon(point.lat, point.lon)).join('|'),
        transportType,
        departureDate: request.departAtMs !== null ? appleTime(request.departAtMs) : undefined,
      },
      etaResponse,
    );
    const times = destinations.map((destination, index) => {
      // Apple answers each destination with its coordinate; the order is the fallback.
      const eta =
        answer.etas.find(
          (candidate) =>
            Math.abs(candidate.destination.latitude - destination.lat) < 1e-4 &&
            Math.abs(candidate.destination.longitude - destination.lon) < 1e-4,
        ) ?? answer.etas[index];
      return eta
        ? {
            to: destination.answer,
            distance_m: Math.round(eta.distanceMeters),
            duration_s: Math.round(eta.expectedTravelTimeSeconds),
            ...(eta.staticTravelTimeSeconds !== undefined
              ? { typical_duration_s: Math.round(eta.staticTravelTimeSeconds) }
              : {}),
          }
        : { to: destination.answer, error: 'Apple Maps gave no travel time for this place.' };
    });
    return { ok: true, source: 'Apple Maps', from: from.answer, mode: request.mode, travel_times: times };
  }

  /** A place as coordinates: "me" from the shared fix, an id from this profile's answers, or geocoded. */
  private async point(place: PlaceInput): Promise<Point> {
    switch (place.kind) {
      case 'me':
        return this.me();
      case 'place_id': {
        const remembered = this.remembered(place.id);
        return { lat: remembered.lat, lon: remembered.lon, answer: remembered };
      }
      case 'coordinate': {
        const lat = place.lat;
        const lon = place.lon;
        return { lat, lon, answer: this.remember({ name: latLon(lat, lon), address: null, lat, lon }) };
      }
      case 'text': {
        await this.refuseSavedPlace(place.text);
        const [first] = await this.geocode(place.text);
        if (!first) throw new MapsRefusal(MAPS_REFUSALS.noPlaceFound);
        return { lat: first.lat, lon: first.lon, answer: first };
      }
    }
  }

  /** What directions sends Apple for a place: an address or a name goes as it is (Apple resolves it). */
  private async endpoint(place: PlaceInput): Promise<{ param: string; answer: PlaceAnswer | MeAnswer | null }> {
    if (place.kind === 'text') {
      await this.refuseSavedPlace(place.text);
      return { param: place.text, answer: null };
    }
    const point = await this.point(place);
    return { param: latLon(point.lat, point.lon), answer: point.answer };
  }

  /** The last shared fix at the detail the user chose; "places only" and no fix are refused. */
  private async me(): Promise<Point> {
    const fix = await this.deps.origin.me(this.home);
    if (!fix) throw new MapsRefusal(MAPS_REFUSALS.meUnavailable);
    if (fix.detail === 'places') throw new MapsRefusal(MAPS_REFUSALS.mePlacesOnly);
    if (fix.detail === 'area') {
      // The host applies the area rounding again (the seed: two decimals), whatever the port gave.
      const round = (value: number) => Math.round(value * 100) / 100;
      return { lat: round(fix.lat), lon: round(fix.lon), answer: { me: true, detail: 'area', note: AREA_NOTE } };
    }
    return { lat: fix.lat, lon: fix.lon, answer: { me: true, detail: 'precise' } };
  }

  private async refuseSavedPlace(text: string): Promise<void> {
    const saved = savedPlaceNamed(text, (await this.deps.origin.savedPlaceNames?.(this.home)) ?? []);
    if (saved !== null) throw new MapsRefusal(MAPS_REFUSALS.savedPlace(saved));
  }

  private async geocode(text: string): Promise<PlaceAnswer[]> {
    const answer = await this.deps.api.get(this.target, '/v1/geocode', { q: text }, placeResults);
    return answer.results.map((place) => this.describe(place));
  }

  private remembered(id: string): PlaceAnswer {
    const place = this.deps.places.find(this.home, id);
    if (!place) throw new MapsRefusal(MAPS_REFUSALS.unknownPlaceId(id));
    return { place_id: id, ...place };
  }

  private remember(place: RememberedPlace): PlaceAnswer {
    return { place_id: this.deps.places.remember(this.home, place), ...place };
  }

  private describe(place: ApplePlace): PlaceAnswer {
    const lines = place.formattedAddressLines ?? [];
    return this.remember({
      name: place.name ?? lines[0] ?? 'Unnamed place',
      address: lines.length > 0 ? lines.join(', ') : null,
      lat: place.coordinate.latitude,
      lon: place.coordinate.longitude,
      ...(place.poiCategory ? { category: place.poiCategory } : {}),
      ...(place.countryCode ? { country_code: place.countryCode } : {}),
    });
  }
}
