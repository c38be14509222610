import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCATION_LABEL } from '@conduit/contracts/dashboard/location';
import type { Host } from '../../src/app.js';
import type { MapsOrigin, MapsReadLog } from '../../src/features/maps/index.js';
import {
  latestFix,
  locationFeature,
  locationMapsOrigin,
  locationMapsReadLog,
  locationSharing,
  readLocation,
  readLocationForVoice,
  type PlaceEvent,
} from '../../src/features/location/index.js';
import type { LocationRelay } from '../../src/features/location/location-relay.js';
import { ManualClock, tempHermesHome, testConfig } from '../support/config.js';
import { startHost } from '../support/host.js';
import { chachaOpen, chachaSeal, PhoneStandIn, voiceAadOf } from '../support/phone-stand-in.js';

/**
 * Location's ingest, store and reads against the real app, with a phone stand-in doing what Conduit
 * does (node:crypto key agreement and seals): precision applied again, private places, retention,
 * pause and off, refused batches, status, wipe, the read log, what other features read, and the
 * sealed voice reads.
 */

const NOW_S = 1_780_000_000;
const home = tempHermesHome();
const clock = new ManualClock(NOW_S * 1000);
const nowS = () => clock.now() / 1000;
let host: Host & { url: string };
/** Never asked here: locate has its own tests (location-tool.test.ts). */
const idleRelay: LocationRelay = { requestLocation: () => Promise.resolve({ kind: 'unpaired' }) };
const feature = locationFeature({ relay: idleRelay });
const told: PlaceEvent[] = [];

const homeOf = (profile: string) => (profile === 'default' ? home.root : path.join(home.root, 'profiles', profile));
const fileOf = (profile: string) => path.join(homeOf(profile), 'conduit-location.sqlite3');
function profileNamed(name: string): string {
  mkdirSync(homeOf(name), { recursive: true });
  return name;
}
const phone = (deviceId: string, profile: string, secret?: Uint8Array) =>
  new PhoneStandIn(host.url, 'location', LOCATION_LABEL, deviceId, { profile, ...(secret ? { secret } : {}) });

function query<T>(profile: string, sql: string, ...params: unknown[]): T[] {
  const db = new Database(fileOf(profile), { readonly: true, fileMustExist: true });
  try {
    return db.prepare(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}

/** Every byte of the store on disk, WAL included. */
function fileBytes(profile: string): Buffer {
  return Buffer.concat(
    ['', '-wal'].map((suffix) =>
      existsSync(fileOf(profile) + suffix) ? readFileSync(fileOf(profile) + suffix) : Buffer.alloc(0),
    ),
  );
}

const sharing = (over: Record<string, unknown> = {}) => ({
  foreground: true,
  background: true,
  paused: false,
  retention_days: 7,
  precision: { foreground: 'precise', background: 'area' },
  features: [],
  ...over,
});
const PLACES = [
  { id: 'home', name: 'Home', kind: 'home' },
  { id: 'work', name: 'Work', kind: 'work' },
  { id: 'clinic', name: 'Dr Jekyll Clinic', kind: 'other', private: true },
];
const fix = (id: string, over: Record<string, unknown> = {}) => ({
  id,
  at: nowS(),
  layer: 'background',
  kind: 'fix',
  lat: 51.523456,
  lon: -0.087654,
  accuracy_m: 30,
  area: { neighbourhood: 'Shoreditch', locality: 'London' },
  distances: [
    { place_id: 'home', m: 2432 },
    { place_id: 'clinic', m: 812 },
  ],
  ...over,
});

beforeAll(async () => {
  host = await startHost(testConfig(home.root, { clock }), { features: [feature] });
  feature.onPlaceEvent((event) => told.push(event));
});
afterAll(async () => {
  await host.app.close();
  home.cleanup();
});

describe('location ingest', () => {
  it('is listed as the location capability', async () => {
    const response = await fetch(`${host.url}/api/plugins/conduit_push/capabilities`);
    expect(((await response.json()) as { capabilities: string[] }).capabilities).toContain('location');
  });

  it('keeps a sealed batch in conduit-location.sqlite3 (0600), applying each layer’s precision again', async () => {
    const profile = profileNamed('precision');
    const device = phone('iphone-1', profile);
    expect((await device.agree()).status).toBe(200);
    const sent = await device.send({
      v: 1,
      sharing: sharing(),
      places: PLACES,
      fixes: [fix('bg-1'), fix('fg-1', { layer: 'foreground', at: nowS() - 60 })],
    });
    expect(sent).toEqual({ status: 200, body: { ok: true, batch_id: 'b-iphone-1-1', stored: 2, ignored: 0 } });
    expect(statSync(fileOf(profile)).mode & 0o777).toBe(0o600);
    const rows = query<Record<string, unknown>>(
      profile,
      'SELECT id, detail, lat, lon, accuracy_m, distances, area FROM location_fixes ORDER BY id',
    );
    // The background layer is area: the phone sent 6 decimals and 30 m, the host keeps 2 decimals, 1 km,
    // distances to 100 m, and never a distance to the private place.
    expect(rows).toEqual([
      {
        id: 'bg-1',
        detail: 'area',
        lat: 51.52,
        lon: -0.09,
        accuracy_m: 1000,
        distances: JSON.stringify([{ place_id: 'home', m: 2400 }]),
        area: JSON.stringify({ neighbourhood: 'Shoreditch', locality: 'London' }),
      },
      {
        id: 'fg-1',
        detail: 'precise',
        lat: 51.523456,
        lon: -0.087654,
        accuracy_m: 30,
        distances: JSON.stringify([{ place_id: 'home', m: 2432 }]),
        area: JSON.stringify({ neighbourhood: 'Shoreditch', locality: 'London' }),
      },
    ]);
  });

  it('places detail keeps only the saved place: no coordinates, area or distances', async () => {
    const profile = profileNamed('places-only');
    const device = phone('iphone-1', profile);
    await device.agree();
    const sent = await device.send({
      v: 1,
      sharing: sharing({ precision: { foreground: 'places', background: 'places' } }),
      places: PLACES,
      fixes: [fix('at-home', { place_id: 'home' }), fix('elsewhere', { at: nowS() - 10 })],
    });
    expect(sent.body).toMatchObject({ stored: 2 });
    expect(
      query(profile, 'SELECT id, lat, lon, accuracy_m, area, distances, place_id FROM location_fixes ORDER BY id'),
    ).toEqual([
      { id: 'at-home', lat: null, lon: null, accuracy_m: null, area: null, distances: null, place_id: 'home' },
      { id: 'elsewhere', lat: null, lon: null, accuracy_m: null, area: null, distances: null, place_id: null },
    ]);
    expect(fileBytes(profile).includes('Shoreditch')).toBe(false);
  });

  it('a private place is only "at a private place": no name, kind, coordinates, area or distances', async () => {
    const profile = profileNamed('private');
    const device = phone('iphone-1', profile);
    await device.agree();
    await device.send({
      v: 1,
      sharing: sharing({ precision: { foreground: 'precise', background: 'precise' } }),
      places: PLACES,
      fixes: [fix('at-clinic', { place_id: 'clinic' })],
      events: [{ id: 'e-1', type: 'arrive', place_id: 'clinic', at: nowS() - 5 }],
    });
    expect(query(profile, 'SELECT id, name, kind, private FROM location_places WHERE id = ?', 'clinic')).toEqual([
      { id: 'clinic', name: null, kind: null, private: 1 },
    ]);
    expect(query(profile, 'SELECT lat, lon, area, distances, place_id, private FROM location_fixes')).toEqual([
      { lat: null, lon: null, area: null, distances: null, place_id: null, private: 1 },
    ]);
    expect(query(profile, 'SELECT place_id, private FROM location_events')).toEqual([{ place_id: null, private: 1 }]);
    expect(fileBytes(profile).includes('Jekyll')).toBe(false);
    const now = readVia(profile, { action: 'now' });
    expect(now).toMatchObject({ fixes: [{ where: 'at a private place', at_private_place: true, place: null }] });
    expect(JSON.stringify(now)).not.toMatch(/Jekyll|clinic|51\.5/);

    // A place the user marks private later takes its name off fixes already stored there.
    await device.send({ v: 1, sharing: sharing(), fixes: [fix('at-work', { place_id: 'work', at: nowS() + 1 })] });
    await device.send({
      v: 1,
      sharing: sharing(),
      places: PLACES.map((place) => (place.id === 'work' ? { ...place, private: true } : place)),
    });
    expect(query(profile, "SELECT place_id, private, lat FROM location_fixes WHERE id = 'at-work'")).toEqual([
      { place_id: null, private: 1, lat: null },
    ]);
  });

  it('retention: 0 keeps only the newest fix; days drop older history on ingest and on read', async () => {
    const profile = profileNamed('retention');
    const device = phone('iphone-1', profile);
    await device.agree();
    const day = 86_400;
    await device.send({
      v: 1,
      sharing: sharing({ retention_days: 1 }),
      places: PLACES,
      fixes: [fix('old', { at: nowS() - 2 * day }), fix('hours-ago', { at: nowS() - 3600 }), fix('now')],
    });
    expect(query<{ id: string }>(profile, 'SELECT id FROM location_fixes ORDER BY at').map((r) => r.id)).toEqual([
      'hours-ago',
      'now',
    ]);
    // Time passing: a read drops what fell out of the day.
    clock.advance(23.5 * 3600 * 1000);
    expect((readVia(profile, { action: 'history', hours: 48 }) as { fixes: unknown[] }).fixes).toHaveLength(1);
    expect(query(profile, 'SELECT id FROM location_fixes')).toEqual([{ id: 'now' }]);

    await device.send({ v: 1, sharing: sharing({ retention_days: 0 }), fixes: [fix('latest', { at: nowS() })] });
    expect(query(profile, 'SELECT id FROM location_fixes')).toEqual([{ id: 'latest' }]);
    await device.send({ v: 1, sharing: sharing({ retention_days: 0 }), fixes: [fix('older', { at: nowS() - 60 })] });
    expect(query(profile, 'SELECT id FROM location_fixes')).toEqual([{ id: 'latest' }]);
  });

  it('paused stores nothing and reads say paused; off deletes the history; a layer that is off keeps nothing', async () => {
    const profile = profileNamed('paused');
    const device = phone('iphone-1', profile);
    await device.agree();
    await device.send({ v: 1, sharing: sharing(), places: PLACES, fixes: [fix('before')] });
    const paused = await device.send({ v: 1, sharing: sharing({ paused: true }), fixes: [fix('while-paused')] });
    expect(paused.body).toMatchObject({ stored: 0, ignored: 1 });
    expect(readVia(profile, { action: 'now' })).toMatchObject({ ok: true, sharing: 'paused' });
    expect(JSON.stringify(readVia(profile, { action: 'history' }))).not.toContain('Shoreditch');
    expect(locationSharing(homeOf(profile))).toMatchObject({ state: 'paused', background: false });
    expect(latestFix(homeOf(profile), { maxAgeS: 3600, nowS: nowS() })).toBeNull();

    const foregroundOnly = await device.send({
      v: 1,
      sharing: sharing({ background: false }),
      fixes: [fix('bg'), fix('fg', { layer: 'foreground' })],
      events: [{ id: 'e-bg', type: 'leave', place_id: 'home', at: nowS() }],
    });
    expect(foregroundOnly.body).toMatchObject({ stored: 1, ignored: 2 });

    const off = await device.send({ v: 1, sharing: sharing({ foreground: false, background: false }) });
    expect(off.status).toBe(200);
    expect(query(profile, 'SELECT id FROM location_fixes')).toEqual([]);
    expect(readVia(profile, { action: 'now' })).toMatchObject({ ok: true, sharing: 'off' });
  });

  it('refuses tampered, replayed, oversized and wrong-key batches with 4xx and stores nothing', async () => {
    const profile = profileNamed('refusals');
    const device = phone('iphone-1', profile);
    await device.agree();
    const envelope = device.seal({ v: 1, sharing: sharing(), places: PLACES, fixes: [fix('f-1')] });
    const ct = Buffer.from(envelope.ct, 'base64url');
    ct[5] = (ct[5] ?? 0) ^ 0x40;
    expect((await device.ingest({ ...envelope, ct: ct.toString('base64url') })).status).toBe(400);
    const impostor = phone('iphone-1', profile, Buffer.alloc(32, 9));
    impostor.hostKey = device.hostKey;
    impostor.kid = device.kid;
    expect((await impostor.send({ v: 1, sharing: sharing(), fixes: [fix('evil')] })).status).toBe(400);
    const stranger = phone('ipad-9', profile);
    stranger.hostKey = device.hostKey;
    stranger.kid = device.kid;
    expect((await stranger.send({ v: 1, sharing: sharing(), fixes: [fix('evil')] })).status).toBe(412);
    // Over 256 KiB sealed: refused before it is opened.
    const long = Array.from({ length: 1900 }, (_, i) => fix(`big-${i}`, { area: { locality: 'x'.repeat(80) } }));
    expect((await device.send({ v: 1, sharing: sharing(), fixes: long })).status).toBe(413);
    // Under 256 KiB but past 2,000 fixes and events, or 20 places.
    const many = Array.from({ length: 2001 }, (_, i) => ({ id: `e${i}`, type: 'arrive', place_id: 'home', at: 1 }));
    expect((await device.send({ v: 1, sharing: sharing(), events: many })).status).toBe(413);
    const places = Array.from({ length: 21 }, (_, i) => ({ id: `p${i}`, name: `P${i}`, kind: 'other' }));
    expect((await device.send({ v: 1, sharing: sharing(), places })).status).toBe(413);
    // Refused fields: no sharing state, a retention Conduit does not offer, half a coordinate.
    expect((await device.send({ v: 1, fixes: [fix('f-2')] })).status).toBe(400);
    expect((await device.send({ v: 1, sharing: sharing({ retention_days: 3 }) })).status).toBe(400);
    expect((await device.send({ v: 1, sharing: sharing(), fixes: [fix('f-3', { lon: undefined })] })).status).toBe(400);
    expect(query(profile, 'SELECT id FROM location_fixes')).toEqual([]);
    expect(query(profile, 'SELECT id FROM location_places')).toEqual([]);

    expect((await device.ingest(envelope)).status).toBe(200);
    expect((await device.ingest(envelope)).status).toBe(409);
    expect(query(profile, 'SELECT id FROM location_fixes')).toEqual([{ id: 'f-1' }]);
  });

  it('status reports counts and days, never places or positions', async () => {
    const status = await phone('iphone-1', 'precision').call('GET', 'status');
    expect(status.body).toMatchObject({ ok: true, enabled: true });
    expect((status.body.devices as Record<string, unknown>[])[0]).toMatchObject({
      device_id: 'iphone-1',
      counts: { fixes: 2, place_events: 0, places: 3 },
    });
    expect(JSON.stringify(status.body)).not.toMatch(/Home|Work|Shoreditch|London|51\.|clinic/i);
  });

  it('wipe deletes one device’s rows and their pages, or the whole file', async () => {
    const profile = profileNamed('wipe');
    const kept = phone('iphone-1', profile);
    const wiped = phone('ipad-2', profile);
    await kept.agree();
    await wiped.agree();
    await kept.send({ v: 1, sharing: sharing(), places: PLACES, fixes: [fix('k-1')] });
    const marker = 'MARKERPLACEq7z';
    await wiped.send({
      v: 1,
      sharing: sharing(),
      places: [{ id: 'm', name: marker, kind: 'other' }],
      fixes: [fix('w-1', { area: { locality: 'MARKERAREAq7z' } })],
    });
    expect(fileBytes(profile).includes(marker)).toBe(true);
    expect((await wiped.call('POST', 'wipe', { device_id: 'ipad-2' })).body).toEqual({ ok: true, devices: 1 });
    expect(fileBytes(profile).includes(marker)).toBe(false);
    expect(fileBytes(profile).includes('MARKERAREAq7z')).toBe(false);
    expect(query(profile, "SELECT id FROM location_fixes WHERE device_id = 'ipad-2'")).toEqual([]);
    expect(query(profile, "SELECT id FROM location_fixes WHERE device_id = 'iphone-1'")).toEqual([{ id: 'k-1' }]);
    expect((await wiped.send({ v: 1, sharing: sharing() })).status).toBe(412);
    expect((await kept.call('POST', 'wipe', { all: true })).body).toEqual({ ok: true, devices: 1 });
    expect(existsSync(fileOf(profile))).toBe(false);
  });
});

/** A read as the MCP tool makes it (the tool's own tests go through the MCP client). */
const readVia = (profile: string, args: Record<string, unknown>, chat = 'chat-1'): Record<string, unknown> =>
  readLocation(homeOf(profile), args, { nowS: nowS(), via: 'tool', chat });

describe('reads, the read log and what other features read', () => {
  const profile = 'reads';
  let device: PhoneStandIn;

  beforeAll(async () => {
    profileNamed(profile);
    device = phone('iphone-1', profile);
    await device.agree();
    await device.send({
      v: 1,
      sharing: sharing({ features: ['maps'] }),
      places: PLACES,
      fixes: [fix('earlier', { at: nowS() - 1800, place_id: 'home' }), fix('latest')],
      events: [{ id: 'e-leave', type: 'leave', place_id: 'home', at: nowS() - 900 }],
    });
  });

  it('answers now, places, history and distance_to at the shared detail', () => {
    const now = readVia(profile, { action: 'now' }) as { fixes: Record<string, unknown>[] };
    expect(now.fixes).toEqual([
      expect.objectContaining({
        where: 'in Shoreditch, London',
        detail: 'area',
        lat: 51.52,
        lon: -0.09,
        distances: [{ place_id: 'home', place: 'Home', m: 2400 }],
      }),
    ]);
    expect(readVia(profile, { action: 'places' })).toMatchObject({
      devices: [
        {
          device_id: 'iphone-1',
          places: [
            { id: 'home', name: 'Home', kind: 'home' },
            { id: 'work', name: 'Work', kind: 'work' },
          ],
          private_places: 1,
        },
      ],
    });
    const history = readVia(profile, { action: 'history', hours: 2 }) as Record<string, unknown>;
    expect((history.fixes as { where: string }[]).map((f) => f.where)).toEqual(['in Shoreditch, London', 'at Home']);
    expect(history.place_events).toEqual([{ device_id: 'iphone-1', type: 'leave', place: 'Home', at: nowS() - 900 }]);
    expect(readVia(profile, { action: 'distance_to', place: 'home' })).toMatchObject({ m: 2400, to: { name: 'Home' } });
    // Haversine from the area-level position (51.52, -0.09) to a point about 1.1 km north.
    const toPoint = readVia(profile, { action: 'distance_to', lat: 51.53, lon: -0.09 }) as { m: number };
    expect(toPoint.m).toBeGreaterThan(1100);
    expect(toPoint.m).toBeLessThan(1125);
    expect(readVia(profile, { action: 'distance_to', place: 'Work' })).toMatchObject({ ok: false });
    expect(readVia(profile, { action: 'distance_to', place: 'Dr Jekyll Clinic' })).toMatchObject({ ok: false });
    expect(readVia(profile, { action: 'distance_to' })).toMatchObject({ ok: false });
    expect(readVia(profile, { action: 'teleport' })).toEqual({ ok: false, error: 'action is missing or invalid' });
  });

  it('GET /location/reads lists every read (via, chat) for 30 days, never a location', async () => {
    const log = await device.call('GET', 'reads');
    expect(log.status).toBe(200);
    const reads = log.body.reads as { action: string; via: string; chat: string | null }[];
    expect(reads.map((entry) => entry.action)).toEqual([
      'now',
      'places',
      'history',
      'distance_to',
      'distance_to',
      'distance_to',
      'distance_to',
      'distance_to',
    ]);
    expect(reads[0]).toEqual({ at: nowS(), action: 'now', via: 'tool', chat: 'chat-1', device_id: null });
    expect(JSON.stringify(log.body)).not.toMatch(/Shoreditch|51\.|Home/);
    clock.advance(31 * 86_400 * 1000);
    expect((await device.call('GET', 'reads')).body).toEqual({ ok: true, reads: [] });
    clock.advance(-31 * 86_400 * 1000);
  });

  it('latestFix and locationSharing give other features the shared detail', () => {
    expect(locationSharing(homeOf(profile))).toEqual({ state: 'on', background: true, features: ['maps'], devices: 1 });
    expect(latestFix(homeOf(profile), { maxAgeS: 3600, nowS: nowS() })).toMatchObject({
      where: 'in Shoreditch, London',
      lat: 51.52,
      distances: [{ place_id: 'home', m: 2400 }],
    });
    expect(latestFix(homeOf(profile), { maxAgeS: 60, nowS: nowS() + 120 })).toBeNull();
    expect(latestFix(path.join(home.root, 'nowhere'), { maxAgeS: 60, nowS: nowS() })).toBeNull();
  });

  it('gives maps "me" at the background detail, the saved places’ names, and the read log', async () => {
    // Typed as maps' own ports: app.ts hands these to mapsFeature as they are.
    const origin: MapsOrigin = locationMapsOrigin(clock);
    expect(await origin.me(homeOf(profile))).toEqual({ lat: 51.52, lon: -0.09, detail: 'area' });
    expect(await origin.savedPlaceNames?.(homeOf(profile))).toEqual(['Home', 'Work']);
    expect(await origin.me(homeOf('paused'))).toBeNull();
    const log: MapsReadLog = locationMapsReadLog();
    await log.record(
      { name: profile, home: homeOf(profile) },
      { action: 'directions', chat: 'chat-9', cronJobId: undefined, atMs: clock.now() },
    );
    const reads = (await device.call('GET', 'reads')).body.reads as Record<string, unknown>[];
    expect(reads.at(-1)).toEqual({
      at: nowS(),
      action: 'maps.directions',
      via: 'tool',
      chat: 'chat-9',
      device_id: null,
    });
  });

  it('tells place-event listeners after the batch is stored, once per event', async () => {
    told.length = 0;
    const arrive = { id: 'e-arrive', type: 'arrive', place_id: 'work', at: nowS() };
    await device.send({ v: 1, sharing: sharing(), events: [arrive] });
    await device.send({ v: 1, sharing: sharing(), events: [arrive] });
    await device.send({ v: 1, sharing: sharing({ paused: true }), events: [{ ...arrive, id: 'e-paused' }] });
    await device.send({ v: 1, sharing: sharing(), events: [{ ...arrive, id: 'e-priv', place_id: 'clinic' }] });
    expect(told).toEqual([
      expect.objectContaining({ profile, deviceId: 'iphone-1', id: 'e-arrive', type: 'arrive', placeName: 'Work' }),
      expect.objectContaining({ id: 'e-priv', placeId: null, placeName: null, private: true }),
    ]);
  });
});

describe('voice reads', () => {
  const profile = 'voice';
  let asking: PhoneStandIn;
  let other: PhoneStandIn;

  /** A voice call sealed by the phone as Conduit seals a voice model's tool call. */
  function voiceCall(device: PhoneStandIn, args: Record<string, unknown>, extra: Record<string, unknown> = {}) {
    const callId = `call-${Object.keys(args).length}-${String(args.action)}`;
    const tool = (extra.tool as string | undefined) ?? 'conduit_location';
    const nonce = Buffer.alloc(12, 5);
    const plain = Buffer.from(JSON.stringify({ call_id: callId, tool, args, provider: 'gemini-live', ...extra }));
    const aad = voiceAadOf(LOCATION_LABEL, tool, device.kid ?? '', device.deviceId, callId);
    return {
      v: 1,
      device_id: device.deviceId,
      kid: device.kid,
      call_id: callId,
      tool,
      nonce: nonce.toString('base64url'),
      ct: chachaSeal(device.key('voice device-to-host'), nonce, aad, plain).toString('base64url'),
    };
  }
  /** The result inside a sealed answer, opened as the phone opens it. */
  function resultOf(device: PhoneStandIn, answer: ReturnType<typeof readLocationForVoice>): Record<string, unknown> {
    if (answer.status !== 200) throw new Error(answer.detail);
    const aad = voiceAadOf(LOCATION_LABEL, answer.body.tool, device.kid ?? '', device.deviceId, answer.body.call_id);
    const plain = chachaOpen(
      device.key('voice host-to-device'),
      Buffer.from(answer.body.nonce, 'base64url'),
      aad,
      Buffer.from(answer.body.ct, 'base64url'),
    );
    return (JSON.parse(plain?.toString('utf8') ?? 'null') as { result: Record<string, unknown> }).result;
  }
  const voice = (call: unknown) => readLocationForVoice(homeOf(profile), call, { nowS: nowS() });

  beforeAll(async () => {
    profileNamed(profile);
    asking = phone('asking-phone', profile);
    other = phone('other-phone', profile);
    await asking.agree();
    await other.agree();
    const precise = sharing({ precision: { foreground: 'precise', background: 'precise' } });
    await asking.send({ v: 1, sharing: precise, places: PLACES, fixes: [fix('mine')] });
    await other.send({
      v: 1,
      sharing: precise,
      places: PLACES,
      fixes: [fix('theirs', { at: nowS() + 5, area: { locality: 'Elsewhere' } })],
    });
  });

  it("answers only the asking device's fix, without coordinates, sealed for it alone, and logs it", async () => {
    const answer = voice(voiceCall(asking, { action: 'now' }));
    const result = resultOf(asking, answer);
    expect(result).toMatchObject({
      ok: true,
      fixes: [{ device_id: 'asking-phone', where: 'in Shoreditch, London', distances: [{ place: 'Home', m: 2432 }] }],
    });
    expect(JSON.stringify(result)).not.toMatch(/"lat"|"lon"|51\.52|Elsewhere/);
    // The other device cannot open it.
    if (answer.status !== 200) throw new Error('refused');
    const aad = voiceAadOf(LOCATION_LABEL, 'conduit_location', other.kid ?? '', 'asking-phone', answer.body.call_id);
    expect(
      chachaOpen(
        other.key('voice host-to-device'),
        Buffer.from(answer.body.nonce, 'base64url'),
        aad,
        Buffer.from(answer.body.ct, 'base64url'),
      ),
    ).toBeNull();
    expect(resultOf(asking, voice(voiceCall(asking, { action: 'distance_to', place: 'Home' })))).toMatchObject({
      m: 2432,
    });
    expect(resultOf(asking, voice(voiceCall(asking, { action: 'distance_to', lat: 1, lon: 2 })))).toMatchObject({
      ok: false,
    });
    const reads = (await other.call('GET', 'reads')).body.reads as { via: string; device_id: string }[];
    expect(reads).toEqual(
      ['now', 'distance_to', 'distance_to'].map((action) =>
        expect.objectContaining({ action, via: 'Gemini Live call', chat: null, device_id: 'asking-phone' }),
      ),
    );
  });

  it('offers read actions only, for conduit_location, from a known provider and key', async () => {
    expect(voice(voiceCall(asking, { action: 'locate' }))).toMatchObject({ status: 400 });
    expect(voice(voiceCall(asking, { action: 'now', device: 'other-phone' }))).toMatchObject({
      status: 400,
      detail: 'device is not an argument of a conduit_location voice read',
    });
    expect(voice(voiceCall(asking, { action: 'now' }, { tool: 'conduit_health' }))).toMatchObject({ status: 400 });
    expect(voice(voiceCall(asking, { action: 'now' }, { provider: 'someone-else' }))).toMatchObject({ status: 400 });
    const stale = voiceCall(asking, { action: 'now' });
    await phone('asking-phone', profile).agree(); // a new key for the device: the old one reads nothing
    expect(voice(stale)).toMatchObject({ status: 412 });
    expect(readLocationForVoice(path.join(home.root, 'nowhere'), stale, { nowS: nowS() })).toMatchObject({
      status: 412,
    });
  });
});
