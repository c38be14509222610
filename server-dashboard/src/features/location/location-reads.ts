import { LOCATION_LIMITS, locationReadArgs, type LocationPrecision } from '@conduit/contracts/dashboard/location';
import type { z } from 'zod';
import { PhoneDataStore } from '../../kernel/phone-data/store.js';
import { LOCATION_HOST_LIMITS } from './location-limits.js';
import {
  enforceRetention,
  LOCATION_SHAPE,
  placesOf,
  stateOf,
  storedSharing,
  type SharingState,
  type StoredSharing,
} from './location-store.js';
import type { Whereabouts } from '../../kernel/whereabouts.js';

/**
 * The read side of location: conduit_location's read actions (now, places, history, distance_to) as
 * one plain function the MCP tool and the voice reads both call, the read log, and what other
 * features may ask (the latest fix at its shared detail, the sharing state). Every read is logged:
 * when, which action, who (the tool or a voice mode), from which chat; never what it returned.
 */

export type LocationReadArgs = z.output<typeof locationReadArgs>;

export interface LocationReadContext {
  nowS: number;
  /** `tool`, or the voice mode that read (`Gemini Live call`). */
  via: string;
  /** The Hermes chat of a tool read; null for a voice read. */
  chat: string | null;
  /** A voice read: only this device's data, whatever the arguments say. */
  onlyDevice?: string;
  /** A voice read: never coordinates (area, saved place and distances only). */
  withoutCoordinates?: boolean;
}

export type LocationReadResult = { ok: true; [key: string]: unknown } | { ok: false; error: string };

const DAY_S = 86_400;
const EARTH_RADIUS_M = 6_371_008.8;

/** A fix at the detail the user shared, as reads and other features see it. */
export interface SharedFix {
  device_id: string;
  /** Unix seconds the phone took it. */
  at: number;
  age_s: number;
  layer: 'foreground' | 'background';
  kind: 'fix' | 'visit' | 'move';
  /** The precision it was shared at. */
  detail: LocationPrecision;
  /** One line: "at Home", "at a private place", "in Shoreditch, London", or "somewhere not shared". */
  where: string;
  place: { id: string; name: string; kind: string } | null;
  at_private_place: boolean;
  area: Record<string, string> | null;
  /** Straight-line distances to the saved places, in metres. */
  distances: { place_id: string; place: string; m: number }[];
  /** Degrees, rounded to 2 decimals at area detail; absent at places detail and in voice reads. */
  lat?: number;
  lon?: number;
  accuracy_m?: number;
}

interface FixRow {
  device_id: string;
  id: string;
  at: number;
  received_at: number;
  layer: 'foreground' | 'background';
  kind: 'fix' | 'visit' | 'move';
  detail: LocationPrecision;
  lat: number | null;
  lon: number | null;
  accuracy_m: number | null;
  area: string | null;
  place_id: string | null;
  private: number;
  distances: string | null;
}

function areaLine(area: Record<string, string> | null): string | null {
  if (!area) return null;
  const parts = [area.neighbourhood, area.locality, area.region, area.country].filter(
    (part): part is string => part !== undefined,
  );
  return parts.length > 0 ? parts.slice(0, 2).join(', ') : null;
}

function sharedFix(store: PhoneDataStore, row: FixRow, nowS: number, withoutCoordinates: boolean): SharedFix {
  const places = placesOf(store, row.device_id);
  const place = row.place_id === null ? undefined : places.get(row.place_id);
  const named = place && !place.private && place.name !== null ? { id: row.place_id ?? '', name: place.name } : null;
  const area = row.area === null ? null : (JSON.parse(row.area) as Record<string, string>);
  const distances = (row.distances === null ? [] : (JSON.parse(row.distances) as { place_id: string; m: number }[]))
    .map((entry) => ({ ...entry, place: places.get(entry.place_id) }))
    .filter((entry) => entry.place && !entry.place.private && entry.place.name !== null)
    .map((entry) => ({ place_id: entry.place_id, place: entry.place?.name ?? '', m: entry.m }));
  const privately = row.private === 1 || place?.private === true;
  const where = privately
    ? 'at a private place'
    : named
      ? `at ${named.name}`
      : areaLine(area) !== null
        ? `in ${areaLine(area)}`
        : 'somewhere not shared (not at a saved place)';
  const fix: SharedFix = {
    device_id: row.device_id,
    at: row.at,
    age_s: Math.max(0, Math.round(nowS - row.at)),
    layer: row.layer,
    kind: row.kind,
    detail: row.detail,
    where,
    place: named && place ? { ...named, kind: place.kind ?? 'other' } : null,
    at_private_place: privately,
    area: privately ? null : area,
    distances: privately ? [] : distances,
  };
  if (!withoutCoordinates && !privately && row.lat !== null && row.lon !== null) {
    fix.lat = row.lat;
    fix.lon = row.lon;
    if (row.accuracy_m !== null) fix.accuracy_m = row.accuracy_m;
  }
  return fix;
}

/** Great-circle distance in metres. */
export function haversineM(a: { lat: number; lon: number }, b: { lat: number; lon: number }): number {
  const rad = (degrees: number) => (degrees * Math.PI) / 180;
  const dLat = rad(b.lat - a.lat);
  const dLon = rad(b.lon - a.lon);
  const h = Math.sin(dLat / 2) ** 2 + Math.cos(rad(a.lat)) * Math.cos(rad(b.lat)) * Math.sin(dLon / 2) ** 2;
  return 2 * EARTH_RADIUS_M * Math.asin(Math.min(1, Math.sqrt(h)));
}

/** The sharing state over `devices`: on when one shares, else paused when one paused, else off. */
function combinedState(sharing: readonly StoredSharing[]): SharingState {
  const states = sharing.map(stateOf);
  if (states.includes('on')) return 'on';
  return states.includes('paused') ? 'paused' : 'off';
}

const STATE_MESSAGES: Record<Exclude<SharingState, 'on'>, string> = {
  paused: 'The user has paused location sharing in Conduit, so no location can be read now.',
  off: 'Location sharing is off in Conduit for this profile, so no location can be read.',
};

/** Appends one read to the log and drops entries past the log's 30 days. */
export function logLocationRead(
  store: PhoneDataStore,
  entry: { at: number; deviceId: string | null; action: string; via: string; chat: string | null },
): void {
  store.db.prepare('DELETE FROM location_reads WHERE at < ?').run(entry.at - LOCATION_LIMITS.readLogDays * DAY_S);
  store.db
    .prepare('INSERT INTO location_reads (at, device_id, action, via, chat) VALUES (?, ?, ?, ?, ?)')
    .run(entry.at, entry.deviceId ?? '', entry.action, entry.via, entry.chat);
}

/** The read log of the last 30 days, oldest first; older entries are deleted. */
export function locationReadLog(
  store: PhoneDataStore,
  nowS: number,
): { at: number; action: string; via: string; chat: string | null; device_id: string | null }[] {
  store.db.prepare('DELETE FROM location_reads WHERE at < ?').run(nowS - LOCATION_LIMITS.readLogDays * DAY_S);
  const rows = store.db
    .prepare('SELECT at, action, via, chat, device_id FROM location_reads ORDER BY at, id')
    .all() as { at: number; action: string; via: string; chat: string | null; device_id: string }[];
  return rows.map((row) => ({ ...row, device_id: row.device_id === '' ? null : row.device_id }));
}

/** The newest fix of each device in scope (after retention), newest first. */
function latestRows(store: PhoneDataStore, devices: readonly string[]): FixRow[] {
  const rows: FixRow[] = [];
  for (const device of devices) {
    const row = store.db
      .prepare('SELECT * FROM location_fixes WHERE device_id = ? ORDER BY at DESC, received_at DESC, id DESC LIMIT 1')
      .get(device) as FixRow | undefined;
    if (row) rows.push(row);
  }
  return rows.sort((a, b) => b.at - a.at);
}

/** Runs `work` on the profile's location store, or answers null when nothing was ever shared. */
function withLocationStore<T>(home: string, work: (store: PhoneDataStore) => T): T | null {
  const store = PhoneDataStore.open(home, LOCATION_SHAPE, false);
  if (store === null) return null;
  try {
    return work(store);
  } finally {
    store.close();
  }
}

function refused(args: unknown): LocationReadResult | LocationReadArgs {
  const parsed = locationReadArgs.safeParse(args);
  if (parsed.success) return parsed.data;
  const field = parsed.error.issues[0]?.path[0];
  return { ok: false, error: `${typeof field === 'string' ? field : 'arguments'} is missing or invalid` };
}

/** Reads the profile's location; `{ok: false, error}` for refused arguments or nothing shared. */
export function readLocation(home: string, rawArgs: unknown, context: LocationReadContext): LocationReadResult {
  const args = refused(rawArgs);
  if ('ok' in args) return args;
  const answer = withLocationStore(home, (store) => readWith(store, args, context));
  return answer ?? { ok: false, error: 'No location has been shared with this profile' };
}

function readWith(store: PhoneDataStore, args: LocationReadArgs, context: LocationReadContext): LocationReadResult {
  const { nowS } = context;
  const asked = context.onlyDevice ?? args.device;
  const sharing = storedSharing(store).filter((entry) => asked === undefined || entry.deviceId === asked);
  if (asked !== undefined && sharing.length === 0) {
    return { ok: false, error: 'That device shares no location with this profile' };
  }
  const devices = sharing.map((entry) => entry.deviceId);
  for (const device of devices) enforceRetention(store, device, nowS);
  logLocationRead(store, {
    at: nowS,
    deviceId: asked ?? null,
    action: args.action,
    via: context.via,
    chat: context.chat,
  });
  const state = combinedState(sharing);
  if (state !== 'on') return { ok: true, action: args.action, sharing: state, message: STATE_MESSAGES[state] };
  // A device that paused or turned sharing off is left out even when another still shares.
  const live = sharing.filter((entry) => stateOf(entry) === 'on').map((entry) => entry.deviceId);
  const shape = (row: FixRow) => sharedFix(store, row, nowS, context.withoutCoordinates === true);
  const base = { ok: true as const, action: args.action, sharing: state };

  switch (args.action) {
    case 'now': {
      const fixes = latestRows(store, live).map(shape);
      return fixes.length === 0
        ? { ...base, fixes, message: 'The phone has not shared a fix yet.' }
        : { ...base, fixes };
    }
    case 'places': {
      const places = live.map((device) => {
        const all = [...placesOf(store, device).entries()];
        return {
          device_id: device,
          places: all
            .filter(([, place]) => !place.private)
            .map(([id, place]) => ({ id, name: place.name, kind: place.kind })),
          private_places: all.filter(([, place]) => place.private).length,
        };
      });
      return { ...base, devices: places };
    }
    case 'history': {
      const hours = args.hours ?? LOCATION_HOST_LIMITS.historyDefaultHours;
      const since = nowS - hours * 3600;
      const limit = args.limit ?? LOCATION_HOST_LIMITS.historyDefaultFixes;
      const marks = live.map(() => '?').join(', ');
      const rows = store.db
        .prepare(
          `SELECT * FROM location_fixes WHERE device_id IN (${marks}) AND at >= ? ORDER BY at DESC, id DESC LIMIT ?`,
        )
        .all(...live, since, limit + 1) as FixRow[];
      const events = store.db
        .prepare(
          `SELECT device_id, type, place_id, private, at FROM location_events
           WHERE device_id IN (${marks}) AND at >= ? ORDER BY at DESC LIMIT ?`,
        )
        .all(...live, since, limit) as {
        device_id: string;
        type: string;
        place_id: string | null;
        private: number;
        at: number;
      }[];
      return {
        ...base,
        hours,
        fixes: rows.slice(0, limit).map(shape),
        truncated: rows.length > limit,
        place_events: events.map((event) => {
          const place = event.place_id === null ? undefined : placesOf(store, event.device_id).get(event.place_id);
          const name = event.private === 1 || !place || place.private ? 'a private place' : place.name;
          return { device_id: event.device_id, type: event.type, place: name, at: event.at };
        }),
      };
    }
    case 'distance_to':
      return distanceTo(store, args, live, nowS, context, shape);
  }
}

function distanceTo(
  store: PhoneDataStore,
  args: LocationReadArgs,
  live: readonly string[],
  nowS: number,
  context: LocationReadContext,
  shape: (row: FixRow) => SharedFix,
): LocationReadResult {
  const toPoint = args.lat !== undefined && args.lon !== undefined;
  if (!args.place && !toPoint) return { ok: false, error: 'distance_to needs place, or lat and lon' };
  if (toPoint && context.withoutCoordinates) {
    return { ok: false, error: 'A voice read measures distances to saved places only' };
  }
  const [latest] = latestRows(store, live);
  if (!latest) return { ok: false, error: 'The phone has not shared a fix yet' };
  const fix = shape(latest);
  const from = { device_id: fix.device_id, at: fix.at, age_s: fix.age_s, where: fix.where, detail: fix.detail };
  if (toPoint) {
    if (fix.lat === undefined || fix.lon === undefined) {
      return { ok: false, error: `The latest fix was shared at "${fix.detail}" detail, without coordinates` };
    }
    const m = Math.round(haversineM({ lat: fix.lat, lon: fix.lon }, { lat: args.lat ?? 0, lon: args.lon ?? 0 }));
    return {
      ok: true,
      action: 'distance_to',
      sharing: 'on',
      from,
      to: { lat: args.lat, lon: args.lon },
      m,
      straight_line: true,
      ...(fix.detail === 'area' ? { note: 'From an area-level position: about ±1 km.' } : {}),
    };
  }
  const wanted = (args.place ?? '').trim().toLowerCase();
  const places = [...placesOf(store, latest.device_id).entries()].filter(([, place]) => !place.private);
  const match = places.find(([id, place]) => id === args.place || place.name?.toLowerCase() === wanted);
  if (!match) return { ok: false, error: `No saved place named "${args.place ?? ''}"; see the places action` };
  const [placeId, place] = match;
  const to = { place_id: placeId, name: place.name };
  if (fix.place?.id === placeId)
    return { ok: true, action: 'distance_to', sharing: 'on', from, to, m: 0, at_place: true };
  const distance = fix.distances.find((entry) => entry.place_id === placeId);
  if (!distance) {
    return {
      ok: false,
      error: `The latest fix carries no distance to ${place.name ?? 'that place'} (shared at "${fix.detail}" detail)`,
    };
  }
  return { ok: true, action: 'distance_to', sharing: 'on', from, to, m: distance.m, straight_line: true };
}

/** What the profile shares now: for visibility, locate, maps ("features") and calls. */
export interface LocationSharingSummary {
  state: SharingState;
  /** Some device shares in the background and is not paused. */
  background: boolean;
  /** What the sharing phones answer beyond fixes (`maps`). */
  features: string[];
  /** Devices that sent at least one batch. */
  devices: number;
}

export function locationSharing(home: string): LocationSharingSummary {
  const summary = withLocationStore(home, (store) => {
    const sharing = storedSharing(store);
    const on = sharing.filter((entry) => stateOf(entry) === 'on');
    return {
      state: combinedState(sharing),
      background: on.some((entry) => entry.background),
      features: [...new Set(on.flatMap((entry) => entry.features))],
      devices: sharing.length,
    };
  });
  return summary ?? { state: 'off', background: false, features: [], devices: 0 };
}

/**
 * The newest fix of any sharing device taken within `maxAgeS`, at the detail the user shared (place,
 * area, distances; coordinates only at area or precise detail), or null: nothing that recent, or
 * sharing paused or off. Not a read of the agent's, so not logged: maps' "me" and calls' avoided
 * places log their own use.
 */
export function latestFix(home: string, options: { maxAgeS: number; nowS: number }): SharedFix | null {
  return withLocationStore(home, (store) => {
    const live = storedSharing(store)
      .filter((entry) => stateOf(entry) === 'on')
      .map((entry) => entry.deviceId);
    for (const device of live) enforceRetention(store, device, options.nowS);
    const [row] = latestRows(store, live);
    if (!row || row.at < options.nowS - options.maxAgeS) return null;
    return sharedFix(store, row, options.nowS, false);
  });
}

/** The newest fix received after `sinceS` (host time) and taken no earlier than `takenAfterS`. */
export function freshFixSince(home: string, sinceS: number, takenAfterS: number, nowS: number): SharedFix | null {
  return withLocationStore(home, (store) => {
    const row = store.db
      .prepare(
        'SELECT * FROM location_fixes WHERE received_at > ? AND at >= ? ORDER BY at DESC, received_at DESC LIMIT 1',
      )
      .get(sinceS, takenAfterS) as FixRow | undefined;
    return row ? sharedFix(store, row, nowS, false) : null;
  });
}

/** Whether a phone has sent this profile a location batch: the tool is offered only then. */
export function locationShared(home: string): boolean {
  try {
    return locationSharing(home).devices > 0;
  } catch {
    return false; // an unreadable store: not offered
  }
}

/** Logs a read that ran outside readLocation (locate, a refused locate). */
export function logLocationUse(
  home: string,
  entry: { at: number; action: string; via: string; chat: string | null },
): void {
  withLocationStore(home, (store) => logLocationRead(store, { ...entry, deviceId: null }));
}

/**
 * How long the latest fix stands for where the user is, for calls (the seed, "No calls at places"):
 * with background sharing on, the phone reports every arrival and departure, so a day-old fix at a
 * place still holds; with only While Using, a fix is a moment in a conversation, so an hour.
 */
export const WHEREABOUTS_MAX_AGE_S = { background: 24 * 3600, foreground: 3600 } as const;

/**
 * Where the user is as calls ask it: the saved place of the latest fix that still counts (null when
 * it is not at a saved place, or at a private one), and `known` false when there is no such fix or
 * sharing is paused or off. Not a read of the agent's, so not logged.
 */
export function whereabouts(home: string, nowS: number): Whereabouts {
  const sharing = locationSharing(home);
  if (sharing.state !== 'on') return { placeId: null, known: false };
  const maxAgeS = sharing.background ? WHEREABOUTS_MAX_AGE_S.background : WHEREABOUTS_MAX_AGE_S.foreground;
  const fix = latestFix(home, { maxAgeS, nowS });
  if (!fix) return { placeId: null, known: false };
  return { placeId: fix.place?.id ?? null, known: true };
}
