import { z } from 'zod';
import { PRESENT_LIMITS } from '@conduit/contracts/dashboard/present';
import { MAPS_LIMITS } from './maps-limits.js';
import { parsePlaceInput, type PlaceInput } from './place-input.js';
import type { MapsAction } from './maps-ports.js';

/** A navigate prompt's title: a notification title's length (present's titleMaxChars). */
export const NAVIGATE_TITLE_MAX_CHARS = PRESENT_LIMITS.titleMaxChars;

/** Apple's PoiCategory values (Apple Maps Server API, PoiCategory), for search's categories. */
export const POI_CATEGORIES = [
  'Airport',
  'AirportGate',
  'AirportTerminal',
  'AmusementPark',
  'AnimalService',
  'Aquarium',
  'ATM',
  'AutomotiveRepair',
  'Bakery',
  'Bank',
  'Baseball',
  'Basketball',
  'Beach',
  'Beauty',
  'Bowling',
  'Brewery',
  'Cafe',
  'Campground',
  'CarRental',
  'Castle',
  'ConventionCenter',
  'Distillery',
  'EVCharger',
  'Fairground',
  'FireStation',
  'Fishing',
  'FitnessCenter',
  'FoodMarket',
  'Fortress',
  'GasStation',
  'GoKart',
  'Golf',
  'Hiking',
  'Hospital',
  'Hotel',
  'Kayaking',
  'Landmark',
  'Laundry',
  'Library',
  'Mailbox',
  'Marina',
  'MiniGolf',
  'MovieTheater',
  'Museum',
  'MusicVenue',
  'NationalMonument',
  'NationalPark',
  'Nightlife',
  'Park',
  'Parking',
  'Pharmacy',
  'Planetarium',
  'Playground',
  'Police',
  'PostOffice',
  'PublicTransport',
  'ReligiousSite',
  'Restaurant',
  'Restroom',
  'RockClimbing',
  'RVPark',
  'School',
  'SkatePark',
  'Skating',
  'Skiing',
  'Soccer',
  'Spa',
  'Stadium',
  'Store',
  'Surfing',
  'Swimming',
  'Tennis',
  'Theater',
  'University',
  'Volleyball',
  'Winery',
  'Zoo',
] as const;

export const TRAVEL_MODES = ['automobile', 'walking', 'transit', 'cycling'] as const;
export type TravelMode = (typeof TRAVEL_MODES)[number];

/** Apple's transportType spelling of each mode. */
export const APPLE_TRANSPORT: Record<TravelMode, string> = {
  automobile: 'Automobile',
  walking: 'Walking',
  transit: 'Transit',
  cycling: 'Cycling',
};

const placeText = z.string().max(MAPS_LIMITS.queryMaxChars);

/** conduit_maps' arguments, described for the model; `validMapsRequest` checks what each action needs. */
export const mapsToolInput = {
  action: z
    .enum(['search', 'lookup', 'reverse_geocode', 'directions', 'travel_times', 'navigate'])
    .describe(
      "search: places or categories near a place or in a region; lookup: one place or address; reverse_geocode: the address at a place; directions: routes between two places; travel_times: how long to up to 10 places; navigate: open Apple Maps on the user's iPhone with directions to a place (or get an Apple Maps link to send).",
    ),
  query: placeText.optional().describe('search: what to look for ("coffee", "pharmacy open late").'),
  categories: z
    .array(z.enum(POI_CATEGORIES))
    .max(10)
    .optional()
    .describe('search: Apple Maps categories to keep (Cafe, Restaurant, Pharmacy, GasStation, EVCharger…).'),
  near: placeText.optional().describe('search: the place to search near ("me", an address, place_id:<id>, lat,lon).'),
  region: z
    .object({
      north: z.number().min(-90).max(90),
      east: z.number().min(-180).max(180),
      south: z.number().min(-90).max(90),
      west: z.number().min(-180).max(180),
    })
    .optional()
    .describe('search: a region to search in, as latitudes and longitudes of its edges.'),
  place: placeText
    .optional()
    .describe('lookup and reverse_geocode: the place ("me", an address or a name, place_id:<id>, lat,lon).'),
  from: placeText.optional().describe('directions and travel_times: where the trip starts; "me" when left out.'),
  to: placeText
    .optional()
    .describe(
      'directions and navigate: where the trip ends (an address or a name, a saved place, place_id:<id>, lat,lon).',
    ),
  destinations: z
    .array(placeText)
    .min(1)
    .max(MAPS_LIMITS.travelTimeDestinations)
    .optional()
    .describe(`travel_times: up to ${MAPS_LIMITS.travelTimeDestinations} places.`),
  mode: z
    .enum(TRAVEL_MODES)
    .optional()
    .describe('directions, travel_times and navigate: how the user travels; automobile when left out.'),
  avoid_tolls: z.boolean().optional().describe('directions: prefer routes without tolls.'),
  arrive_by: z
    .string()
    .max(64)
    .optional()
    .describe('directions: when to arrive (ISO 8601 with a time zone); the answer says when to leave (leave_by).'),
  depart_at: z
    .string()
    .max(64)
    .optional()
    .describe('directions and travel_times: when to leave (ISO 8601 with a time zone); now when left out.'),
  title: z
    .string()
    .max(NAVIGATE_TITLE_MAX_CHARS)
    .optional()
    .describe(
      `navigate: the prompt's title on the phone, ≤${NAVIGATE_TITLE_MAX_CHARS} characters; "Directions to <place>" when left out.`,
    ),
  _conduit_context: z.string().optional().describe('Filled in by the Conduit host for each call; leave it out.'),
};

const mapsArgs = z.object(mapsToolInput);
type MapsArgs = z.infer<typeof mapsArgs>;

export interface Region {
  north: number;
  east: number;
  south: number;
  west: number;
}

/** A request each action can act on without checking anything again. */
export type MapsRequest =
  | { action: 'search'; query: string; categories: readonly string[]; near: PlaceInput | null; region: Region | null }
  | { action: 'lookup'; place: PlaceInput }
  | { action: 'reverse_geocode'; place: PlaceInput }
  | {
      action: 'directions';
      from: PlaceInput;
      to: PlaceInput;
      mode: TravelMode;
      avoidTolls: boolean;
      arriveByMs: number | null;
      departAtMs: number | null;
    }
  | {
      action: 'travel_times';
      from: PlaceInput;
      destinations: PlaceInput[];
      mode: TravelMode;
      departAtMs: number | null;
    };

type Checked<T> = T | { error: string };
const failed = <T>(value: Checked<T>): value is { error: string } =>
  typeof value === 'object' && value !== null && 'error' in value;

function place(raw: string | undefined, name: string, fallback?: string): Checked<PlaceInput> {
  const text = raw ?? fallback;
  if (text === undefined) return { error: `${name} is required for this action.` };
  const parsed = parsePlaceInput(text);
  return 'error' in parsed ? { error: `${name}: ${parsed.error}` } : parsed;
}

/** An ISO 8601 time with a zone (Z or ±hh:mm), in ms; anything looser is refused rather than guessed. */
function time(raw: string | undefined, name: string): Checked<number | null> {
  if (raw === undefined) return null;
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})$/.test(raw.trim()))
    return { error: `${name} must be an ISO 8601 time with a time zone, e.g. 2026-12-04T17:30:00+01:00.` };
  const ms = Date.parse(raw.trim());
  return Number.isFinite(ms) ? ms : { error: `${name} is not a real time.` };
}

/**
 * The request the arguments make, or the sentence that says what is wrong with them (validate first,
 * then act: nothing is looked up for a request this refuses).
 */
export function validMapsRequest(raw: Record<string, unknown>): Checked<MapsRequest> {
  const parsed = mapsArgs.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue && issue.path.length > 0 ? issue.path.join('.') : 'the arguments';
    return { error: `${where}: ${issue?.message ?? 'not valid'}.` };
  }
  const args: MapsArgs = parsed.data;
  switch (args.action) {
    case 'search': {
      const query = args.query?.trim() || args.categories?.join(' ') || '';
      if (!query) return { error: 'search needs a query or categories.' };
      if (args.near !== undefined && args.region !== undefined)
        return { error: 'search takes near or region, not both.' };
      const near = args.near === undefined ? null : place(args.near, 'near');
      if (near !== null && failed(near)) return near;
      if (args.region && args.region.north <= args.region.south)
        return { error: 'region: north must be north of south.' };
      return { action: 'search', query, categories: args.categories ?? [], near, region: args.region ?? null };
    }
    case 'lookup':
    case 'reverse_geocode': {
      const target = place(args.place, 'place');
      return failed(target) ? target : { action: args.action, place: target };
    }
    case 'directions': {
      const from = place(args.from, 'from', 'me');
      if (failed(from)) return from;
      const to = place(args.to, 'to');
      if (failed(to)) return to;
      const arriveBy = time(args.arrive_by, 'arrive_by');
      if (failed(arriveBy)) return arriveBy;
      const departAt = time(args.depart_at, 'depart_at');
      if (failed(departAt)) return departAt;
      if (arriveBy !== null && departAt !== null)
        return { error: 'directions takes arrive_by or depart_at, not both.' };
      return {
        action: 'directions',
        from,
        to,
        mode: args.mode ?? 'automobile',
        avoidTolls: args.avoid_tolls === true,
        arriveByMs: arriveBy,
        departAtMs: departAt,
      };
    }
    case 'travel_times': {
      const from = place(args.from, 'from', 'me');
      if (failed(from)) return from;
      if (!args.destinations) return { error: 'travel_times needs destinations (1 to 10 places).' };
      const destinations: PlaceInput[] = [];
      for (const [index, text] of args.destinations.entries()) {
        const destination = place(text, `destinations.${index}`);
        if (failed(destination)) return destination;
        destinations.push(destination);
      }
      const departAt = time(args.depart_at, 'depart_at');
      if (failed(departAt)) return departAt;
      return { action: 'travel_times', from, destinations, mode: args.mode ?? 'automobile', departAtMs: departAt };
    }
    case 'navigate':
      // The tool checks navigate with validNavigateRequest; a lookup request is never one.
      return { error: 'navigate opens Maps rather than looking anything up.' };
  }
}

/** navigate's request: where to, how, and the prompt's title when the model gave one. */
export interface NavigateRequest {
  action: 'navigate';
  to: Exclude<PlaceInput, { kind: 'me' }>;
  mode: TravelMode;
  title: string | null;
}

/**
 * navigate's request, or the sentence that says what is wrong (validated before any prompt is kept).
 * "me" is refused: directions from where the user is to where the user is open nothing.
 */
export function validNavigateRequest(raw: Record<string, unknown>): Checked<NavigateRequest> {
  const parsed = mapsArgs.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue && issue.path.length > 0 ? issue.path.join('.') : 'the arguments';
    return { error: `${where}: ${issue?.message ?? 'not valid'}.` };
  }
  const to = place(parsed.data.to, 'to');
  if (failed(to)) return to;
  if (to.kind === 'me') return { error: 'to: navigate needs a destination other than "me".' };
  // Control characters out: the title is a notification's.
  const title = parsed.data.title?.replace(/\p{Cc}+/gu, ' ').trim() || null;
  return { action: 'navigate', to, mode: parsed.data.mode ?? 'automobile', title };
}

/** The action named by raw arguments, for the read log of a call whose other arguments are refused. */
export function actionOf(raw: Record<string, unknown>): MapsAction | null {
  const parsed = mapsToolInput.action.safeParse(raw.action);
  return parsed.success ? parsed.data : null;
}
