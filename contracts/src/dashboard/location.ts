import { z } from 'zod';
import { defineRoute } from '../route.js';
import { detailAnswer, detailBodyRefusals, detailUnavailable, noStoreAnswer } from './detail-error.js';
import { unauthorized } from './notification-settings.js';
import { PHONE_DATA_LIMITS, PHONE_DEVICE_ID_PATTERN, phoneDataRoutes } from './phone-data.js';
import { profileQuery } from './profile.js';

/**
 * Location (the seed's "Conduit can tell a Hermes profile where the user is"): the phone's sealed
 * batches over the phone-data wire (phone-data.ts) with the label `conduit-location-v1`. What is below
 * is the plaintext inside a batch's seal; it never crosses the wire in the clear.
 *
 * A batch carries, every time, the phone's sharing state (so the host holds each batch to what the
 * user chose), and optionally the saved places (the list replaces the stored one), fixes and place
 * events. The phone applies each layer's precision before sealing; the host applies it again:
 * - `precise`: coordinates as sent, distances to places in metres;
 * - `area`: coordinates rounded to 2 decimals (about 1 km), accuracy at least 1 km, distances rounded
 *   to 100 m, area labels (neighbourhood, locality, region, country);
 * - `places`: no coordinates, no area, no distances: only the saved place the fix is at, if any.
 * A fix or event at a place marked private keeps no place, coordinates, area or distances: it reads as
 * "at a private place". Saved places arrive as names and kinds, never coordinates; a private place's
 * name and kind are not kept either.
 *
 * History is kept for the batch's `retention_days` (0: only the latest fix per device), enforced on
 * every ingest and every read. While `paused`, or for a layer that is off, fixes and events are not
 * stored; with both layers off a device's fixes and events are deleted.
 */

export const LOCATION_LABEL = 'conduit-location-v1';

/** The seed's location limits, and the bounds this host adds around them. */
export const LOCATION_LIMITS = {
  devicesPerProfile: PHONE_DATA_LIMITS.devicesPerProfile,
  /** The seed's 20 saved places; the phone's list is refused past it, not cut. */
  places: 20,
  /** The seed's 256 KiB per batch, counted on the sealed bytes. */
  sealedBatchMaxBytes: PHONE_DATA_LIMITS.sealedBatchMaxBytes,
  /**
   * Fixes and place events in one batch. A phone that was offline for a week with significant-move
   * monitoring sends a few hundred; more is a bug or a flood, refused with 413 so nothing half lands.
   */
  itemsPerBatch: 2000,
  /** As health: every foreground fix may be its own upload, and refused uploads count too. */
  uploadsPerMinute: 120,
  /** The read log's retention (the seed: "kept 30 days"). */
  readLogDays: 30,
} as const;

/** How long history is kept, as the user picks it in Conduit; 0 keeps only the latest fix. */
export const LOCATION_RETENTION_DAYS = [0, 1, 7, 30, 365] as const;

export const locationPrecision = z.enum(['places', 'area', 'precise']);
export type LocationPrecision = z.output<typeof locationPrecision>;

/** While talking (When In Use) or in the background (Always). */
export const locationLayer = z.enum(['foreground', 'background']);
export type LocationLayer = z.output<typeof locationLayer>;

/** Unix seconds. */
const unixS = z.number().min(0).max(32_503_680_000);
/** A fix, event or place id as the phone makes it. */
const itemId = z.string().regex(PHONE_DEVICE_ID_PATTERN);
/** A place or area name as the user or the phone's geocoder wrote it: no control characters. */
const label = (max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .regex(/^[^\p{Cc}]+$/u);

/** What the phone shares, sent in every batch: the host keeps the latest and holds the store to it. */
export const locationSharing = z.object({
  /** While talking: a fix when the user sends a message or starts a call, and on 200 m moves in a call. */
  foreground: z.boolean(),
  /** In the background: arrivals and departures at saved places, visits and significant moves. */
  background: z.boolean(),
  /** The user paused sharing: nothing in the batch is stored, and reads answer "paused". */
  paused: z.boolean(),
  /** Days of history kept: 0 (latest only), 1, 7 (Conduit's default), 30 or 365. */
  retention_days: z.literal(LOCATION_RETENTION_DAYS),
  precision: z.object({ foreground: locationPrecision, background: locationPrecision }),
  /**
   * What this Conduit answers beyond fixes. `maps` (LOCATION_MAPS_FEATURE): its Location Push extension
   * answers conduit_maps lookups (GET/POST /location/maps/{id}), so lookups that involve the user ("me",
   * a saved place, transit) go to this phone while background sharing is on and not paused.
   */
  features: z
    .array(z.string().regex(/^[a-z][a-z0-9-]{0,31}$/))
    .max(16)
    .default([]),
});
export type LocationSharing = z.output<typeof locationSharing>;

/** A saved place: a name and a kind, never coordinates (they stay on the phone). */
export const locationPlace = z.object({
  id: itemId,
  /** `Home`, `Work`, `Mum's`… */
  name: label(80),
  /** `home`, `work`, `school`, `gym`, `other`… */
  kind: z.string().regex(/^[a-z][a-z0-9_-]{0,31}$/),
  /** Reported only as "at a private place": the host keeps neither its name nor its kind. */
  private: z.boolean().default(false),
});

/** The names of the area a fix is in, as the phone's geocoder gives them (area and precise only). */
export const locationArea = z.object({
  neighbourhood: label(80).optional(),
  locality: label(80).optional(),
  region: label(80).optional(),
  country: label(80).optional(),
});

export const locationFix = z
  .object({
    id: itemId,
    /** When the phone took the fix (a visit: when it began). */
    at: unixS,
    layer: locationLayer,
    /** `fix`: one reading; `visit`: a stay somewhere (iOS visits); `move`: a significant move. */
    kind: z.enum(['fix', 'visit', 'move']),
    /** Degrees; present at area (2 decimals) and precise, absent at places. */
    lat: z.number().min(-90).max(90).optional(),
    lon: z.number().min(-180).max(180).optional(),
    /** Horizontal accuracy in metres. */
    accuracy_m: z.number().min(0).max(1_000_000).optional(),
    area: locationArea.optional(),
    /** The saved place the fix is at, if any. */
    place_id: itemId.optional(),
    /** Straight-line distances to saved places, in metres. */
    distances: z
      .array(z.object({ place_id: itemId, m: z.number().min(0).max(40_100_000) }))
      .max(LOCATION_LIMITS.places)
      .optional(),
  })
  .refine((fix) => (fix.lat === undefined) === (fix.lon === undefined), { message: 'lat and lon go together' });

/** Arriving at or leaving a saved place (background layer). */
export const locationPlaceEvent = z.object({
  id: itemId,
  type: z.enum(['arrive', 'leave']),
  place_id: itemId,
  at: unixS,
});

/** The plaintext of a sealed location batch. */
export const locationBatch = z.object({
  v: z.literal(1),
  sharing: locationSharing,
  /** The saved places, at most 20; when present the list replaces the stored one. */
  places: z.array(locationPlace).max(LOCATION_LIMITS.places).optional(),
  /** Fixes and events together: at most 2,000 a batch (413). */
  fixes: z.array(locationFix).default([]),
  events: z.array(locationPlaceEvent).default([]),
});
export type LocationBatch = z.output<typeof locationBatch>;

export const locationRoutes = phoneDataRoutes({
  feature: 'location',
  title: 'Location',
  batchLimitText:
    'The sealed batch is over 256 KiB, or carries more than 2,000 fixes and events or 20 places; nothing is stored.',
  uploadLimitText: 'More than 120 location uploads a minute for this profile.',
});

/** One entry of the read log: who read location and when, never what it returned. */
export const locationReadEntry = z.object({
  /** Unix seconds. */
  at: z.number(),
  /** `now`, `places`, `history`, `distance_to`, `locate`. */
  action: z.string(),
  /** `tool`, or the voice mode that read (`Gemini Live call`, `Grok Live call`, `GPT-Live call`). */
  via: z.string(),
  /** The Hermes chat (session id) of a tool read; null for a voice read. */
  chat: z.string().nullable(),
  /** The device whose data was read, or null for a read over every device. */
  device_id: z.string().nullable(),
});

export const getLocationReads = defineRoute({
  method: 'GET',
  path: '/api/plugins/conduit_push/location/reads',
  operationId: 'getLocationReads',
  summary: 'When the agent read location in the last 30 days (never the locations)',
  description:
    'Each read of conduit_location and each voice read, oldest first. Entries older than 30 days are deleted ' +
    'when the log is read or written.',
  tags: ['location'],
  auth: 'bearer',
  query: profileQuery,
  responses: {
    200: noStoreAnswer('The read log.', z.object({ ok: z.literal(true), reads: z.array(locationReadEntry) })),
    401: unauthorized,
    500: detailAnswer('An unexpected failure, named by its type only.'),
    503: detailUnavailable('The profile cannot be resolved.'),
  },
});

export const postLocationKey = locationRoutes.key;
export const postLocationIngest = locationRoutes.ingest;
export const getLocationStatus = locationRoutes.status;
export const postLocationWipe = locationRoutes.wipe;

/** conduit_location's read actions; `locate` is the tool's own (a voice read never offers it). */
export const LOCATION_READ_ACTIONS = ['now', 'places', 'history', 'distance_to'] as const;

/** The most fixes one history read answers. */
export const LOCATION_HISTORY_MAX_FIXES = 500;

/**
 * The arguments of a location read. A voice read has no `device`: it covers only the asking phone.
 * distance_to takes `place` (a saved place's id or name) or `lat` and `lon`.
 */
export const locationReadArgs = z.object({
  action: z.enum(LOCATION_READ_ACTIONS),
  device: z.string().regex(PHONE_DEVICE_ID_PATTERN).optional(),
  /** history: how many hours back, 1–8,760 (a year); default 24. */
  hours: z
    .int()
    .min(1)
    .max(365 * 24)
    .optional(),
  /** history: at most this many fixes, newest first; default 100. */
  limit: z.int().min(1).max(LOCATION_HISTORY_MAX_FIXES).optional(),
  place: z.string().min(1).max(80).optional(),
  lat: z.number().min(-90).max(90).optional(),
  lon: z.number().min(-180).max(180).optional(),
});

/**
 * The sealed inner payload of a `location.request` relay event (the envelope is CRYPTO.md §1's, with
 * `type=location.request` in its associated data and an empty `req`, so the request id is never in
 * the clear). The phone's Location Push Service Extension opens it with the pairing's push key,
 * answers a `locate` with its next sealed batch (a fresh fix), and a `maps` request through the maps
 * routes.
 */
export const locationRequestInner = z.object({
  profile: z.string(),
  location: z.object({
    v: z.literal(1),
    kind: z.enum(['locate', 'maps']),
    request_id: z.string().regex(/^[A-Za-z0-9_-]{8,64}$/),
  }),
});
export type LocationRequestInner = z.output<typeof locationRequestInner>;

/**
 * Maps lookups the user's iPhone answers (the seed, conduit_maps: "The host has no map, so the user's
 * iPhone answers"). The feature string a phone puts in `sharing.features` to say its Location Push
 * extension answers them.
 */
export const LOCATION_MAPS_FEATURE = 'maps';

/**
 * The phone path of conduit_maps. The host stores a lookup sealed for one phone with that device's
 * location key, wakes it with a `location.request` of kind `maps` (only the lookup id, inside the push
 * seal), and the phone fetches the lookup, answers it with MapKit and posts its answer sealed:
 * - keys: the location key schedule (phone-data.ts) with two more directions,
 *   `conduit-location-v1 maps host-to-device` (the lookup) and `conduit-location-v1 maps device-to-host`
 *   (the answer);
 * - associated data, the same both ways: `conduit-location-v1 maps\n<kid>\n<device_id>\n<lookup_id>`,
 *   so a lookup or an answer opens only for that lookup, that device and that key.
 * A lookup lives 2 minutes (LOCATION_MAPS_LIMITS); the first answer that opens wins.
 */
export const LOCATION_MAPS_LIMITS = {
  /** How long a stored lookup can be fetched and answered; the host's wait for it is shorter (25 s). */
  lookupTtlS: 120,
  /** The sealed body of an answer (`ct`, decoded): ten places or three routes with steps fit easily. */
  sealedAnswerMaxBytes: 64 * 1024,
} as const;

/** A lookup id: what the push carries and the routes name. */
export const MAPS_LOOKUP_ID_PATTERN = /^[A-Za-z0-9_-]{8,64}$/;

const mapsText = (max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .regex(/^[^\p{Cc}]+$/u);
const metres = z.number().min(0).max(40_100_000);
const seconds = z
  .number()
  .min(0)
  .max(30 * 86_400);

/**
 * A place in a sealed lookup: the user (`me`, answered at `detail`), one of the user's saved places by
 * name (its coordinates are on the phone), a text for MapKit to resolve, or a coordinate (a lat,lon or a
 * place the host named earlier).
 */
export const mapsLookupPlace = z.union([
  z.object({ me: z.literal(true) }).strict(),
  z.object({ saved_place: mapsText(80) }).strict(),
  z.object({ text: mapsText(300) }).strict(),
  z
    .object({ lat: z.number().min(-90).max(90), lon: z.number().min(-180).max(180), name: mapsText(300).optional() })
    .strict(),
]);
export type MapsLookupPlace = z.output<typeof mapsLookupPlace>;

export const MAPS_TRAVEL_MODES = ['automobile', 'walking', 'transit', 'cycling'] as const;

/** What the phone is asked: conduit_maps' actions with the places resolved as far as the host can. */
export const mapsLookupRequest = z.discriminatedUnion('action', [
  z.object({
    action: z.literal('search'),
    query: mapsText(300),
    categories: z.array(z.string().regex(/^[A-Za-z]{1,32}$/)).max(10),
    near: mapsLookupPlace.nullable(),
    region: z.object({ north: z.number(), east: z.number(), south: z.number(), west: z.number() }).nullable(),
  }),
  z.object({ action: z.literal('lookup'), place: mapsLookupPlace }),
  z.object({ action: z.literal('reverse_geocode'), place: mapsLookupPlace }),
  z.object({
    action: z.literal('directions'),
    from: mapsLookupPlace,
    to: mapsLookupPlace,
    mode: z.enum(MAPS_TRAVEL_MODES),
    avoid_tolls: z.boolean(),
    /** ISO 8601 in UTC, or null. */
    arrive_by: z.string().max(40).nullable(),
    depart_at: z.string().max(40).nullable(),
  }),
  z.object({
    action: z.literal('travel_times'),
    from: mapsLookupPlace,
    destinations: z.array(mapsLookupPlace).min(1).max(10),
    mode: z.enum(MAPS_TRAVEL_MODES),
    depart_at: z.string().max(40).nullable(),
  }),
]);
export type MapsLookupRequest = z.output<typeof mapsLookupRequest>;

/** The plaintext inside a lookup's seal (`maps host-to-device`). */
export const mapsLookupPlaintext = z.object({
  v: z.literal(1),
  lookup_id: z.string().regex(MAPS_LOOKUP_ID_PATTERN),
  /**
   * The detail the user chose for background sharing: what an answer may say about "me". `area`: no
   * address or steps near the user, distances to 100 m; the host applies it again to the answer.
   */
  detail: z.enum(['precise', 'area']),
  request: mapsLookupRequest,
  /** Unix seconds after which an answer is refused. */
  expires_at: z.number(),
});
export type MapsLookupPlaintext = z.output<typeof mapsLookupPlaintext>;

/** A sealed lookup or answer: the envelope of both directions (the ids are bound by the associated data). */
export const sealedMapsEnvelope = z.object({
  v: z.literal(1),
  device_id: z.string().regex(PHONE_DEVICE_ID_PATTERN),
  kid: z.string().regex(/^[0-9a-f]{32}$/),
  lookup_id: z.string().regex(MAPS_LOOKUP_ID_PATTERN),
  /** 12 random bytes, base64url (16 characters). */
  nonce: z.string().regex(/^[A-Za-z0-9_-]{16}$/),
  /** Ciphertext and tag, base64url. */
  ct: z.string().regex(/^[A-Za-z0-9_-]+$/),
});
export type SealedMapsEnvelope = z.output<typeof sealedMapsEnvelope>;

/** A place as the phone answers it (MapKit's map item). */
export const mapsAnswerPlace = z.object({
  name: mapsText(300),
  address: mapsText(500).nullable().optional(),
  lat: z.number().min(-90).max(90).optional(),
  lon: z.number().min(-180).max(180).optional(),
  category: z.string().max(64).optional(),
  /** From the search's center or the trip's start, as the crow flies. */
  distance_m: metres.optional(),
  /** reverse_geocode: the area names (neighbourhood, locality, region, country). */
  area: z.array(mapsText(80)).max(4).optional(),
});

export const mapsAnswerRoute = z.object({
  name: mapsText(300).nullable().optional(),
  distance_m: metres,
  duration_s: seconds,
  has_tolls: z.boolean().optional(),
  steps: z
    .array(z.object({ instructions: mapsText(500), distance_m: metres }))
    .max(40)
    .optional(),
});

/** The phone's result: what MapKit found, or why it found nothing (`{ok: false, error}`). */
export const mapsAnswerResult = z.union([
  z
    .object({
      ok: z.literal(true),
      /** search, lookup and reverse_geocode. */
      places: z.array(mapsAnswerPlace).max(10).optional(),
      /** directions: at most three. */
      routes: z.array(mapsAnswerRoute).max(3).optional(),
      /** travel_times, one per destination in the lookup's order. */
      travel_times: z
        .array(z.union([z.object({ distance_m: metres, duration_s: seconds }), z.object({ error: mapsText(300) })]))
        .max(10)
        .optional(),
    })
    .strict(),
  z.object({ ok: z.literal(false), error: mapsText(300) }).strict(),
]);
export type MapsAnswerResult = z.output<typeof mapsAnswerResult>;

/** The plaintext inside an answer's seal (`maps device-to-host`). */
export const mapsAnswerPlaintext = z.object({
  v: z.literal(1),
  lookup_id: z.string().regex(MAPS_LOOKUP_ID_PATTERN),
  result: mapsAnswerResult,
});
export type MapsAnswerPlaintext = z.output<typeof mapsAnswerPlaintext>;

const mapsLookupParams = z.object({ id: z.string().max(128) });

export const getLocationMapsLookup = defineRoute({
  method: 'GET',
  path: '/api/plugins/conduit_push/location/maps/{id}',
  operationId: 'getLocationMapsLookup',
  summary: 'The maps lookup the Location Push woke this phone for, sealed for it',
  description:
    'The phone names itself with device_id; the lookup is sealed with that device’s location key (maps ' +
    'host-to-device) and answered only to it. Nothing about the lookup is in the clear.',
  tags: ['location'],
  auth: 'bearer',
  query: profileQuery.extend({ device_id: z.string().max(128) }),
  params: mapsLookupParams,
  responses: {
    200: noStoreAnswer('The sealed lookup.', z.object({ ok: z.literal(true), lookup: sealedMapsEnvelope })),
    400: detailAnswer('device_id is missing or invalid.'),
    404: detailAnswer('No such lookup: never made, answered long ago, or expired (2 minutes).'),
    412: detailAnswer('The lookup is sealed for another device, or for a location key this device no longer has.'),
    401: unauthorized,
    500: detailAnswer('An unexpected failure, named by its type only.'),
    503: detailUnavailable('The profile cannot be resolved.'),
  },
});

export const postLocationMapsAnswer = defineRoute({
  method: 'POST',
  path: '/api/plugins/conduit_push/location/maps/{id}',
  operationId: 'postLocationMapsAnswer',
  summary: 'The phone’s sealed answer to a maps lookup',
  description:
    'Opened with the device’s location key (maps device-to-host) and the lookup’s associated data. The first ' +
    'answer that opens and validates wins; anything refused stores nothing.',
  tags: ['location'],
  auth: 'bearer',
  query: profileQuery,
  params: mapsLookupParams,
  body: sealedMapsEnvelope,
  bodyContentType: 'application/json',
  responses: {
    200: noStoreAnswer('The answer was taken.', z.object({ ok: z.literal(true), lookup_id: z.string() })),
    ...detailBodyRefusals,
    400: detailAnswer('The body or the opened answer is refused, the ids disagree, or the seal does not open.'),
    404: detailAnswer('No such lookup: never made, or expired (2 minutes).'),
    409: detailAnswer('The lookup was already answered (the first answer wins; a replay changes nothing).'),
    412: detailAnswer('The lookup was sealed for another device, or this device id or kid has no location key.'),
    413: detailAnswer('The sealed answer is over 64 KiB.'),
    429: detailAnswer('More than 60 maps answers a minute for this profile.'),
    401: unauthorized,
    500: detailAnswer('An unexpected failure, named by its type only.'),
    503: detailUnavailable('The profile cannot be resolved.'),
  },
});

/**
 * Place rules (the seed, Location: "Place rules"): each is a Hermes cron job named `Place rule: <what>`
 * that never runs on its own schedule; an arrive or leave event matching the rule's place, move, days
 * and hours runs it through Hermes' jobs API. The rule's id is its Hermes job id.
 */
export const PLACE_RULE_LIMITS = {
  /** Rules a profile holds: one per saved place and move is already plenty (a phone saves 20 places). */
  rules: 20,
  /** The name Hermes shows is "Place rule: " plus this, well within Hermes' 200-character job name. */
  whatMaxChars: 120,
  /** The task, within Hermes' 5,000-character prompt beside the rule's own lines. */
  taskMaxChars: 2000,
  /** The seed: a rule set to repeat fires again only this long after it last fired. */
  everyMinS: 30 * 60,
  /** The seed: an event older than this when it arrives never fires a rule (it is news, not a trigger). */
  eventMaxAgeS: 15 * 60,
} as const;

export const PLACE_RULE_DAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
export const placeRuleDay = z.enum(PLACE_RULE_DAYS);
export const placeRuleMove = z.enum(['arrive', 'leave', 'either']);
/** `daily`: at most once a local day; `every`: every matching event at least 30 minutes apart. */
export const placeRuleRepeat = z.enum(['daily', 'every']);

export const placeRule = z.object({
  /** The Hermes cron job's id (12 hex digits). */
  id: z.string(),
  /** What the rule is, in the user's words; the job is named `Place rule: <what>`. */
  what: z.string(),
  /** One saved place, or null for any saved place. */
  place: z.object({ id: z.string(), name: z.string() }).nullable(),
  move: placeRuleMove,
  /** The local days it fires on; every day when empty. */
  days: z.array(placeRuleDay),
  /** `HH:MM-HH:MM` in the profile's timezone (may pass midnight); any time when null. */
  hours: z.string().nullable(),
  repeat: placeRuleRepeat,
  /** What the run does: anything a cron run can do. */
  task: z.string(),
  /** Unix seconds. */
  created_at: z.number(),
  updated_at: z.number(),
  last_fired_at: z.number().nullable(),
});
export type PlaceRule = z.output<typeof placeRule>;

export const getLocationRules = defineRoute({
  method: 'GET',
  path: '/api/plugins/conduit_push/location/rules',
  operationId: 'getLocationRules',
  summary: "The profile's place rules",
  description:
    'Each rule set with conduit_location set_rule: its place, move, days, hours, repeat, task and when it last ' +
    'fired. Read from the profile’s conduit-place-rules.json; Hermes is not asked.',
  tags: ['location'],
  auth: 'bearer',
  query: profileQuery,
  responses: {
    200: noStoreAnswer('The rules, oldest first.', z.object({ ok: z.literal(true), rules: z.array(placeRule) })),
    401: unauthorized,
    500: detailAnswer('An unexpected failure, named by its type only.'),
    503: detailUnavailable('The profile cannot be resolved, or its place rules cannot be read.'),
  },
});

export const deleteLocationRule = defineRoute({
  method: 'DELETE',
  path: '/api/plugins/conduit_push/location/rules/{rule_id}',
  operationId: 'deleteLocationRule',
  summary: 'Remove a place rule and its Hermes cron job',
  tags: ['location'],
  auth: 'bearer',
  query: profileQuery,
  params: z.object({ rule_id: z.string() }),
  responses: {
    200: noStoreAnswer(
      'Whether a rule was removed (a job already gone from Hermes still removes the rule).',
      z.object({ ok: z.literal(true), removed: z.boolean() }),
    ),
    400: detailAnswer('`Unknown rule id` (not 12 lowercase hex digits).'),
    401: unauthorized,
    500: detailAnswer('An unexpected failure, named by its type only.'),
    502: detailAnswer("Hermes refused to delete the rule's job; the rule is kept."),
    503: detailUnavailable(
      "The profile cannot be resolved, its place rules cannot be read, or Hermes' scheduled jobs are not reachable (the rule is kept).",
    ),
  },
});
