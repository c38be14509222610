import {
  LOCATION_LIMITS,
  locationBatch,
  type LocationBatch,
  type LocationPrecision,
  type LocationSharing,
} from '@conduit/contracts/dashboard/location';
import { DetailError } from '../../kernel/detail-errors.js';
import type { BatchOutcome, DeviceSummary } from '../../kernel/phone-data/index.js';
import type { PhoneDataStore, StoreShape } from '../../kernel/phone-data/store.js';
import { LOCATION_HOST_LIMITS } from './location-limits.js';

/**
 * Location's tables in the profile's conduit-location.sqlite3 and how a batch lands in them: the
 * host applies the layer's precision again, keeps private places private, holds the device to its
 * sharing state and enforces its retention (contracts/dashboard/location.ts says what each means).
 * Device rows carry `device_id`, so a re-key or a wipe drops a device's data as one.
 */

export const LOCATION_SCHEMA = `
CREATE TABLE IF NOT EXISTS location_sharing (
  device_id TEXT PRIMARY KEY, foreground INTEGER NOT NULL, background INTEGER NOT NULL, paused INTEGER NOT NULL,
  retention_days INTEGER NOT NULL, precision_foreground TEXT NOT NULL, precision_background TEXT NOT NULL,
  features TEXT NOT NULL, updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS location_places (
  device_id TEXT NOT NULL, id TEXT NOT NULL, name TEXT, kind TEXT, private INTEGER NOT NULL, position INTEGER NOT NULL,
  PRIMARY KEY (device_id, id)
);
CREATE TABLE IF NOT EXISTS location_fixes (
  device_id TEXT NOT NULL, id TEXT NOT NULL, at REAL NOT NULL, received_at REAL NOT NULL, layer TEXT NOT NULL,
  kind TEXT NOT NULL, detail TEXT NOT NULL, lat REAL, lon REAL, accuracy_m REAL, area TEXT, place_id TEXT,
  private INTEGER NOT NULL, distances TEXT,
  PRIMARY KEY (device_id, id)
);
CREATE INDEX IF NOT EXISTS location_fixes_by_time ON location_fixes (device_id, at);
CREATE TABLE IF NOT EXISTS location_events (
  device_id TEXT NOT NULL, id TEXT NOT NULL, type TEXT NOT NULL, place_id TEXT, private INTEGER NOT NULL,
  at REAL NOT NULL, received_at REAL NOT NULL,
  PRIMARY KEY (device_id, id)
);
CREATE TABLE IF NOT EXISTS location_reads (
  id INTEGER PRIMARY KEY, at REAL NOT NULL, device_id TEXT NOT NULL, action TEXT NOT NULL, via TEXT NOT NULL, chat TEXT
);
CREATE TABLE IF NOT EXISTS location_locates (
  request_id TEXT PRIMARY KEY, at REAL NOT NULL, state TEXT NOT NULL
);
`;

/**
 * The tables a re-key or a wipe of one device drops. The read log's entries name the device they read
 * (`''` for a read over every device), so they go with it; the locate budget belongs to the profile.
 */
export const LOCATION_DEVICE_TABLES = [
  'location_sharing',
  'location_places',
  'location_fixes',
  'location_events',
  'location_reads',
] as const;

export const LOCATION_SHAPE: StoreShape = {
  feature: 'location',
  schema: LOCATION_SCHEMA,
  deviceTables: LOCATION_DEVICE_TABLES,
};

const DAY_S = 86_400;
const { areaAccuracyM: AREA_ACCURACY_M, areaDistanceStepM: AREA_DISTANCE_STEP_M } = LOCATION_HOST_LIMITS;

/** One fix or event as the opened batch has it. */
type BatchFix = LocationBatch['fixes'][number];

/** The opened batch as a clean value: 400 naming the refused field, 413 past the item bound. */
export function parseLocationBatch(plain: unknown): LocationBatch {
  const body = plain as { fixes?: unknown; events?: unknown; places?: unknown } | null;
  const count = (value: unknown) => (Array.isArray(value) ? value.length : 0);
  if (count(body?.fixes) + count(body?.events) > LOCATION_LIMITS.itemsPerBatch) {
    throw new DetailError(413, `A batch carries at most ${LOCATION_LIMITS.itemsPerBatch} fixes and events`);
  }
  if (count(body?.places) > LOCATION_LIMITS.places) {
    throw new DetailError(413, `A phone shares at most ${LOCATION_LIMITS.places} saved places`);
  }
  const parsed = locationBatch.safeParse(plain);
  if (!parsed.success) {
    const where = parsed.error.issues[0]?.path.join('.');
    throw new DetailError(400, where ? `The batch's ${where} is missing or invalid` : 'The batch is invalid');
  }
  return parsed.data;
}

/** A device's sharing state as stored. */
export interface StoredSharing {
  deviceId: string;
  foreground: boolean;
  background: boolean;
  paused: boolean;
  retentionDays: number;
  precision: { foreground: LocationPrecision; background: LocationPrecision };
  features: string[];
}

/** `on` (something shared and not paused), `paused`, or `off` (both layers off, or nothing sent). */
export type SharingState = 'on' | 'paused' | 'off';

export function stateOf(sharing: StoredSharing | undefined): SharingState {
  if (!sharing || (!sharing.foreground && !sharing.background)) return 'off';
  return sharing.paused ? 'paused' : 'on';
}

interface SharingRow {
  device_id: string;
  foreground: number;
  background: number;
  paused: number;
  retention_days: number;
  precision_foreground: LocationPrecision;
  precision_background: LocationPrecision;
  features: string;
}

function fromSharingRow(row: SharingRow): StoredSharing {
  return {
    deviceId: row.device_id,
    foreground: row.foreground === 1,
    background: row.background === 1,
    paused: row.paused === 1,
    retentionDays: row.retention_days,
    precision: { foreground: row.precision_foreground, background: row.precision_background },
    features: JSON.parse(row.features) as string[],
  };
}

/** Every device's sharing state, in the order the devices registered. */
export function storedSharing(store: PhoneDataStore): StoredSharing[] {
  const rows = store.db
    .prepare(
      `SELECT s.* FROM location_sharing s JOIN devices d ON d.device_id = s.device_id
       ORDER BY d.registered_at, d.device_id`,
    )
    .all() as SharingRow[];
  return rows.map(fromSharingRow);
}

function putSharing(store: PhoneDataStore, deviceId: string, sharing: LocationSharing, nowS: number): void {
  store.db
    .prepare(
      `INSERT OR REPLACE INTO location_sharing (device_id, foreground, background, paused, retention_days,
         precision_foreground, precision_background, features, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    .run(
      deviceId,
      sharing.foreground ? 1 : 0,
      sharing.background ? 1 : 0,
      sharing.paused ? 1 : 0,
      sharing.retention_days,
      sharing.precision.foreground,
      sharing.precision.background,
      JSON.stringify([...new Set(sharing.features)]),
      nowS,
    );
}

/** The device's saved places by id, as stored (a private place has no name or kind). */
export function placesOf(
  store: PhoneDataStore,
  deviceId: string,
): Map<string, { name: string | null; kind: string | null; private: boolean }> {
  const rows = store.db
    .prepare('SELECT id, name, kind, private FROM location_places WHERE device_id = ? ORDER BY position')
    .all(deviceId) as { id: string; name: string | null; kind: string | null; private: number }[];
  return new Map(rows.map((row) => [row.id, { name: row.name, kind: row.kind, private: row.private === 1 }]));
}

/**
 * The saved places replace the stored list. A private place keeps only its id (so a fix there reads
 * "at a private place"); fixes already stored at a place now private lose what placed them there.
 */
function replacePlaces(store: PhoneDataStore, deviceId: string, places: NonNullable<LocationBatch['places']>): void {
  const db = store.db;
  db.prepare('DELETE FROM location_places WHERE device_id = ?').run(deviceId);
  const insert = db.prepare(
    'INSERT OR REPLACE INTO location_places (device_id, id, name, kind, private, position) VALUES (?, ?, ?, ?, ?, ?)',
  );
  places.forEach((place, position) => {
    insert.run(
      deviceId,
      place.id,
      place.private ? null : place.name,
      place.private ? null : place.kind,
      place.private ? 1 : 0,
      position,
    );
  });
  for (const place of places.filter((candidate) => candidate.private)) {
    db.prepare(
      `UPDATE location_fixes SET place_id = NULL, private = 1, lat = NULL, lon = NULL, accuracy_m = NULL, area = NULL,
         distances = NULL WHERE device_id = ? AND place_id = ?`,
    ).run(deviceId, place.id);
    db.prepare('UPDATE location_events SET place_id = NULL, private = 1 WHERE device_id = ? AND place_id = ?').run(
      deviceId,
      place.id,
    );
  }
}

const round = (value: number, decimals: number) => Math.round(value * 10 ** decimals) / 10 ** decimals;

/** A fix as the host keeps it: the layer's precision applied again, private places kept private. */
export interface KeptFix {
  lat: number | null;
  lon: number | null;
  accuracyM: number | null;
  area: Record<string, string> | null;
  placeId: string | null;
  private: boolean;
  distances: { place_id: string; m: number }[] | null;
}

export function applyPrecision(fix: BatchFix, detail: LocationPrecision, places: ReturnType<typeof placesOf>): KeptFix {
  const place = fix.place_id === undefined ? undefined : places.get(fix.place_id);
  if (place?.private) {
    // "At a private place" and nothing else: an area or a distance would say where it is.
    return { lat: null, lon: null, accuracyM: null, area: null, placeId: null, private: true, distances: null };
  }
  const placeId = place ? (fix.place_id ?? null) : null;
  if (detail === 'places') {
    return { lat: null, lon: null, accuracyM: null, area: null, placeId, private: false, distances: null };
  }
  const area = fix.area && Object.keys(fix.area).length > 0 ? { ...fix.area } : null;
  // Distances only to places the host knows and that are not private.
  const known = (fix.distances ?? []).filter((entry) => places.get(entry.place_id)?.private === false);
  if (detail === 'area') {
    return {
      lat: fix.lat === undefined ? null : round(fix.lat, 2),
      lon: fix.lon === undefined ? null : round(fix.lon, 2),
      accuracyM: fix.lat === undefined ? null : Math.max(fix.accuracy_m ?? AREA_ACCURACY_M, AREA_ACCURACY_M),
      area,
      placeId,
      private: false,
      distances: known.map((entry) => ({
        place_id: entry.place_id,
        m: Math.round(entry.m / AREA_DISTANCE_STEP_M) * AREA_DISTANCE_STEP_M,
      })),
    };
  }
  return {
    lat: fix.lat === undefined ? null : round(fix.lat, 6),
    lon: fix.lon === undefined ? null : round(fix.lon, 6),
    accuracyM: fix.accuracy_m ?? null,
    area,
    placeId,
    private: false,
    distances: known.map((entry) => ({ place_id: entry.place_id, m: Math.round(entry.m) })),
  };
}

/**
 * Deletes what the device's retention no longer keeps: with 0 days all but the newest fix and event,
 * otherwise everything older than the kept days. Run on every ingest and before every read, so a
 * shorter retention picked in Conduit, or time passing, never leaves older history readable.
 */
export function enforceRetention(store: PhoneDataStore, deviceId: string, nowS: number): void {
  const sharing = store.db.prepare('SELECT retention_days FROM location_sharing WHERE device_id = ?').get(deviceId) as
    { retention_days: number } | undefined;
  if (!sharing) return;
  const db = store.db;
  if (sharing.retention_days === 0) {
    for (const table of ['location_fixes', 'location_events']) {
      db.prepare(
        `DELETE FROM ${table} WHERE device_id = @device AND id IS NOT (SELECT id FROM ${table} WHERE device_id = @device
           ORDER BY at DESC, received_at DESC, id DESC LIMIT 1)`,
      ).run({ device: deviceId });
    }
    return;
  }
  const before = nowS - sharing.retention_days * DAY_S;
  db.prepare('DELETE FROM location_fixes WHERE device_id = ? AND at < ?').run(deviceId, before);
  db.prepare('DELETE FROM location_events WHERE device_id = ? AND at < ?').run(deviceId, before);
}

/** A place event a batch stored, as place rules hear of it. */
export interface KeptPlaceEvent {
  id: string;
  type: 'arrive' | 'leave';
  /** Null at a private place. */
  placeId: string | null;
  private: boolean;
  at: number;
}

/** Keeps a batch; the place events it stored are pushed onto `keptEvents` when given. */
export function storeLocationBatch(
  store: PhoneDataStore,
  deviceId: string,
  batch: LocationBatch,
  nowS: number,
  keptEvents: KeptPlaceEvent[] = [],
): BatchOutcome {
  const db = store.db;
  const { sharing } = batch;
  putSharing(store, deviceId, sharing, nowS);
  if (batch.places) replacePlaces(store, deviceId, batch.places);
  const items = batch.fixes.length + batch.events.length;
  if (!sharing.foreground && !sharing.background) {
    // Sharing off: nothing of the device's whereabouts stays, and nothing in the batch is kept.
    db.prepare('DELETE FROM location_fixes WHERE device_id = ?').run(deviceId);
    db.prepare('DELETE FROM location_events WHERE device_id = ?').run(deviceId);
    return { stored: 0, ignored: items };
  }
  if (sharing.paused) return { stored: 0, ignored: items };
  const places = placesOf(store, deviceId);
  let stored = 0;
  const insertFix = db.prepare(
    `INSERT OR IGNORE INTO location_fixes (device_id, id, at, received_at, layer, kind, detail, lat, lon, accuracy_m,
       area, place_id, private, distances) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  for (const fix of batch.fixes) {
    if (!sharing[fix.layer]) continue; // a layer the user turned off keeps nothing
    const detail = sharing.precision[fix.layer];
    const kept = applyPrecision(fix, detail, places);
    const changes = insertFix.run(
      deviceId,
      fix.id,
      fix.at,
      nowS,
      fix.layer,
      fix.kind,
      detail,
      kept.lat,
      kept.lon,
      kept.accuracyM,
      kept.area && JSON.stringify(kept.area),
      kept.placeId,
      kept.private ? 1 : 0,
      kept.distances && JSON.stringify(kept.distances),
    ).changes;
    stored += changes;
  }
  const insertEvent = db.prepare(
    'INSERT OR IGNORE INTO location_events (device_id, id, type, place_id, private, at, received_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );
  for (const event of batch.events) {
    // Place events come from the background layer; one at a place the phone did not list is dropped.
    const place = places.get(event.place_id);
    if (!sharing.background || !place) continue;
    const placeId = place.private ? null : event.place_id;
    const changes = insertEvent.run(
      deviceId,
      event.id,
      event.type,
      placeId,
      place.private ? 1 : 0,
      event.at,
      nowS,
    ).changes;
    stored += changes;
    if (changes > 0) keptEvents.push({ id: event.id, type: event.type, placeId, private: place.private, at: event.at });
  }
  enforceRetention(store, deviceId, nowS);
  return { stored, ignored: items - stored };
}

const count = (store: PhoneDataStore, table: string, deviceId: string) =>
  (store.db.prepare(`SELECT COUNT(*) AS n FROM ${table} WHERE device_id = ?`).get(deviceId) as { n: number }).n;

/** Counts and the days the history covers; never a place name or a position. */
export function summarizeLocation(store: PhoneDataStore, deviceId: string): DeviceSummary {
  const span = store.db
    .prepare(
      `SELECT date(MIN(at), 'unixepoch') AS first, date(MAX(at), 'unixepoch') AS last FROM (
         SELECT at FROM location_fixes WHERE device_id = @id UNION ALL
         SELECT at FROM location_events WHERE device_id = @id)`,
    )
    .get({ id: deviceId }) as { first: string | null; last: string | null };
  return {
    counts: {
      fixes: count(store, 'location_fixes', deviceId),
      place_events: count(store, 'location_events', deviceId),
      places: count(store, 'location_places', deviceId),
    },
    firstDay: span.first,
    lastDay: span.last,
  };
}
