import { z } from 'zod';
import { defineRoute } from '../route.js';
import { detailAnswer, detailUnavailable, noStoreAnswer } from './detail-error.js';
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
  /** What this Conduit answers beyond fixes, e.g. `maps` (it answers maps lookups). */
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
