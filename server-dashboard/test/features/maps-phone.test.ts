/**
 * conduit_maps answered by the user's iPhone, end to end: the MCP SDK's own client (after the
 * pre_tool_call hook, as Hermes calls it), the real location push over the real relay gateway to a relay
 * stand-in (opened here with an independent implementation, as the phone's extension opens it), and a
 * phone stand-in that agrees its location key, shares with `maps` among its features, fetches the sealed
 * lookup and answers it sealed (node:crypto, apart from the host's @noble code).
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { locationRequestInner, type MapsLookupPlaintext } from '@conduit/contracts/dashboard/location';
import type { Host } from '../../src/app.js';
import { httpRelayGateway } from '../../src/delivery/relay-gateway.js';
import {
  locationFeature,
  locationMapsOrigin,
  locationMapsPhone,
  locationMapsReadLog,
  relayLocationPush,
  type LocationPushOutcome,
  type LocationRelay,
} from '../../src/features/location/index.js';
import { mapsFeature, MAPS_WAKES_FILE } from '../../src/features/maps/index.js';
import { ManualTimers } from '../../src/kernel/timers.js';
import { readOrCreateMcpToken } from '../../src/mcp/mcp-token.js';
import type { ProfileScope } from '../../src/notifier/notifier.js';
import { nodeKeys, nodeOpen, type NodeEnvelope } from '../crypto/independent-e2e.js';
import { ManualClock, tempHermesHome, testConfig } from '../support/config.js';
import { FakeRelay } from '../support/fake-relay.js';
import { callHook } from '../support/hook-call.js';
import { startHost } from '../support/host.js';
import { MapsPhoneStandIn, type MapsAnswerEnvelope } from '../support/maps-phone-stand-in.js';
import { connectMcp } from '../support/mcp-client.js';
import { GATEWAY_ID, INSTALLATION_ID, writePairing } from '../support/pairing.js';

const NOW_S = 1_780_000_000;
const home = tempHermesHome();
const clock = new ManualClock(NOW_S * 1000);
const timers = new ManualTimers();
const nowS = () => clock.now() / 1000;
const relay = new FakeRelay();
const e2eSecret = randomBytes(32);
const E2E_KID = '0123456789abcdef0123456789abcdef';
const MINUTE = 60_000;
let host: Host & { url: string };
let mcpToken: string;

/** The real port over the real gateway, reporting each push so a test waits for it instead of sleeping. */
class ReportingRelay implements LocationRelay {
  readonly outcomes: LocationPushOutcome[] = [];
  private readonly waiters: ((outcome: LocationPushOutcome) => void)[] = [];
  private readonly real = relayLocationPush({
    gateway: httpRelayGateway({ userAgent: 'Conduit-Host/test', timeoutMs: 10_000 }),
    clock,
  });

  async requestLocation(profile: ProfileScope, request: Parameters<LocationRelay['requestLocation']>[1]) {
    const outcome = await this.real.requestLocation(profile, request);
    this.outcomes.push(outcome);
    for (const wake of this.waiters.splice(0)) wake(outcome);
    return outcome;
  }

  next(): Promise<LocationPushOutcome> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }
}
const reporting = new ReportingRelay();

/** The profile that keeps maps lookups on the iPhone ("Keep maps lookups on this iPhone"). */
const KEEP = 'keep';
const homeOf = (profile: string) => (profile === 'default' ? home.root : path.join(home.root, 'profiles', profile));

const sealedPairing = {
  e2e: {
    kid: E2E_KID,
    secret: e2eSecret.toString('base64url'),
    created_at: '2026-05-01T00:00:00Z',
    installation_id: INSTALLATION_ID,
    gateway_id: GATEWAY_ID,
  },
};

const phones = new Map<string, MapsPhoneStandIn>();
function phoneOf(profile: string, deviceId = `iphone-${profile}`): MapsPhoneStandIn {
  const key = `${profile}/${deviceId}`;
  let phone = phones.get(key);
  if (!phone) {
    mkdirSync(homeOf(profile), { recursive: true });
    phone = new MapsPhoneStandIn(host.url, deviceId, profile === 'default' ? {} : { profile });
    phones.set(key, phone);
  }
  return phone;
}

const sharing = (over: Record<string, unknown> = {}) => ({
  foreground: true,
  background: true,
  paused: false,
  retention_days: 7,
  precision: { foreground: 'precise', background: 'area' },
  features: ['maps'],
  ...over,
});
const PLACES = [
  { id: 'home', name: 'Home', kind: 'home' },
  { id: 'work', name: 'Work', kind: 'work' },
];
const fix = (id: string) => ({
  id,
  at: nowS(),
  layer: 'background',
  kind: 'fix',
  lat: 51.5234,
  lon: -0.0876,
  area: { neighbourhood: 'Shoreditch', locality: 'London' },
  distances: [
    { place_id: 'home', m: 2432 },
    { place_id: 'work', m: 5100 },
  ],
});

/** A phone shares location with `over` sharing settings (the location feature stores it). */
async function share(profile: string, over: Record<string, unknown> = {}, deviceId?: string) {
  const phone = phoneOf(profile, deviceId);
  if (!phone.kid) expect((await phone.agree()).status).toBe(200);
  const sent = await phone.send({
    v: 1,
    sharing: sharing(over),
    places: PLACES,
    fixes: [fix(`f-${randomBytes(4).toString('hex')}`)],
  });
  expect(sent.status).toBe(200);
  return phone;
}

beforeAll(async () => {
  await relay.start();
  host = await startHost(testConfig(home.root, { clock, timers }), {
    features: [
      locationFeature({ relay: reporting }),
      mapsFeature({
        origin: locationMapsOrigin(clock),
        readLog: locationMapsReadLog(),
        phone: locationMapsPhone({ clock, relay: reporting }),
        settings: { hostEngineOff: (profileHome) => profileHome === homeOf(KEEP) },
      }),
    ],
  });
  mcpToken = await readOrCreateMcpToken(path.join(home.root, 'conduit-host'));
  for (const profile of ['default', KEEP, 'places']) {
    mkdirSync(homeOf(profile), { recursive: true });
    writePairing(homeOf(profile), relay.url, sealedPairing);
  }
});
afterAll(async () => {
  await host.app.close();
  await relay.stop();
  home.cleanup();
});

async function tools(profile = 'default'): Promise<string[]> {
  const client = await connectMcp(host.url, mcpToken, profile === 'default' ? null : profile);
  try {
    return (await client.listTools()).tools.map((tool) => tool.name);
  } finally {
    await client.close();
  }
}

let turn = 0;
/** The hook first (it signs the calling turn into the arguments), then the tool, as Hermes does. */
async function maps(args: Record<string, unknown>, profile = 'default', chat = 'chat-1') {
  turn += 1;
  const hooked = await callHook(host.url, host.hookToken, {
    hook_event_name: 'pre_tool_call',
    profile,
    session_id: chat,
    tool_name: 'mcp_conduit_conduit_maps',
    tool_input: args,
    extra: { turn_id: `t-${turn}`, tool_call_id: `tc-${turn}` },
  });
  const answer = hooked.answer as { action: string; args: Record<string, unknown> };
  expect(answer.action).toBe('modify');
  const client = await connectMcp(host.url, mcpToken, profile === 'default' ? null : profile);
  try {
    const result = await client.callTool({ name: 'conduit_maps', arguments: answer.args });
    const text = (result.content as { type: string; text: string }[])[0]?.text ?? '';
    return { isError: result.isError === true, text, json: () => JSON.parse(text) as Record<string, unknown> };
  } finally {
    await client.close();
  }
}

/** The push the tool sent, opened as the phone's extension opens it: only the lookup id inside. */
async function pushedLookupId(pushed: Promise<LocationPushOutcome>): Promise<string> {
  expect(await pushed).toEqual({ kind: 'sent', delivered: true });
  const body = relay.events.at(-1)?.body ?? {};
  const envelope = body.e2e as NodeEnvelope;
  const inner = locationRequestInner.parse(
    nodeOpen(envelope, 'location.request', INSTALLATION_ID, GATEWAY_ID, nodeKeys(e2eSecret).push),
  );
  expect(inner.location.kind).toBe('maps');
  // The relay sees no lookup id, query or place in the clear.
  expect(envelope.req).toBe('');
  expect(JSON.stringify(body)).not.toContain(inner.location.request_id);
  expect(Object.keys(body).sort()).toEqual(['e2e', 'event_id', 'type']);
  return inner.location.request_id;
}

const ROUTE = {
  name: 'Overground',
  distance_m: 2949,
  duration_s: 1261,
  has_tolls: false,
  steps: [{ instructions: 'Walk to Shoreditch High Street', distance_m: 310 }],
};

function wakesOf(profile: string): number[] {
  try {
    return (JSON.parse(readFileSync(path.join(homeOf(profile), MAPS_WAKES_FILE), 'utf8')) as { wakes: number[] }).wakes;
  } catch {
    return [];
  }
}

function readLog(profile = 'default'): { action: string; via: string; chat: string | null }[] {
  const db = new Database(path.join(homeOf(profile), 'conduit-location.sqlite3'), { readonly: true });
  try {
    return db.prepare('SELECT action, via, chat FROM location_reads ORDER BY id').all() as {
      action: string;
      via: string;
      chat: string | null;
    }[];
  } finally {
    db.close();
  }
}

describe('the phone path', () => {
  it('is offered to a profile that keeps lookups on the iPhone only once its phone answers maps lookups', async () => {
    expect(await tools(KEEP)).not.toContain('conduit_maps');
    await share(KEEP, { features: [] });
    expect(await tools(KEEP)).not.toContain('conduit_maps');
    await share(KEEP, { paused: true });
    expect(await tools(KEEP)).not.toContain('conduit_maps');
    await share(KEEP, { background: false });
    expect(await tools(KEEP)).not.toContain('conduit_maps');
    await share(KEEP, { precision: { foreground: 'precise', background: 'precise' } });
    expect(await tools(KEEP)).toContain('conduit_maps');
  });

  it('asks the phone for a trip from "me" to a saved place by transit, and answers at the shared detail', async () => {
    const phone = await share('default');
    const pushed = reporting.next();
    const call = maps({ action: 'directions', to: 'home', mode: 'transit' }, 'default', 'chat-7');
    const lookupId = await pushedLookupId(pushed);
    const lookup: MapsLookupPlaintext = await phone.lookup(lookupId);
    expect(lookup).toMatchObject({
      v: 1,
      lookup_id: lookupId,
      detail: 'area',
      request: { action: 'directions', from: { me: true }, to: { saved_place: 'Home' }, mode: 'transit' },
    });
    expect((await phone.answer(lookupId, { ok: true, routes: [ROUTE] })).status).toBe(200);
    const result = await call;
    expect(result.isError).toBe(false);
    const answer = result.json();
    expect(answer).toMatchObject({
      ok: true,
      source: "Apple Maps on the user's iPhone",
      from: { me: true, detail: 'area' },
      to: { saved_place: 'Home' },
      mode: 'transit',
      // Area detail: 100 m and whole minutes, and no steps that would name the user's street.
      routes: [{ name: 'Overground', distance_m: 2900, duration_s: 1260 }],
    });
    expect((answer.routes as Record<string, unknown>[])[0]).not.toHaveProperty('steps');
    // Logged with its action and chat, never the query.
    expect(readLog().at(-1)).toEqual({ action: 'maps.directions', via: 'tool', chat: 'chat-7' });
    expect(JSON.stringify(readLog())).not.toMatch(/home|transit/i);
    expect(wakesOf('default')).toHaveLength(1);
  });

  it('answers a repeat within 2 minutes from the last answer, without waking the phone', async () => {
    const events = relay.events.length;
    clock.advance(MINUTE);
    const again = await maps({ action: 'directions', to: 'Home', mode: 'transit' });
    expect(again.json()).toMatchObject({ routes: [{ duration_s: 1260 }], repeat_of: expect.any(String) });
    expect(relay.events.length).toBe(events);
    expect(wakesOf('default')).toHaveLength(1);
    // Past the 2 minutes the phone is asked again.
    clock.advance(MINUTE + 1000);
    const pushed = reporting.next();
    const call = maps({ action: 'directions', to: 'Home', mode: 'transit' });
    const lookupId = await pushedLookupId(pushed);
    await phoneOf('default').lookup(lookupId);
    await phoneOf('default').answer(lookupId, { ok: true, routes: [{ ...ROUTE, duration_s: 1500 }] });
    expect((await call).json()).toMatchObject({ routes: [{ duration_s: 1500 }] });
    expect((await call).json()).not.toHaveProperty('repeat_of');
  });

  it('refuses tampered, forged, replayed and wrong-device answers, storing nothing; the first real answer wins', async () => {
    const phone = phoneOf('default');
    const ipad = await share('default', {}, 'ipad-default');
    // The phone asked is the one that shared last: the iPhone shares again to be the one carried.
    clock.advance(1000);
    await share('default');
    const pushed = reporting.next();
    const call = maps({ action: 'travel_times', destinations: ['Work', '51.5,-0.1'] });
    const lookupId = await pushedLookupId(pushed);

    // Another device cannot fetch it, nor an unknown id; its own device can, and the seal opens only for it.
    expect((await ipad.fetchLookup(lookupId)).status).toBe(412);
    expect((await phone.fetchLookup('no-such-lookup-0001')).status).toBe(404);
    const fetched = await phone.fetchLookup(lookupId);
    expect(fetched.status).toBe(200);
    expect(ipad.openLookup(fetched.body.lookup as MapsAnswerEnvelope)).toBeNull();

    const result = { ok: true, travel_times: [{ distance_m: 5230, duration_s: 960 }, { error: 'No route' }] };
    const genuine = phone.sealAnswer(lookupId, result);
    const tampered = {
      ...genuine,
      ct: Buffer.from(Buffer.from(genuine.ct, 'base64url').map((byte, i) => (i === 3 ? byte ^ 1 : byte))).toString(
        'base64url',
      ),
    };
    expect((await phone.postAnswer(lookupId, tampered)).status).toBe(400);
    // Sealed for another lookup id and posted to this one.
    const forged = phone.sealAnswer(lookupId, result, { sealedFor: 'other-lookup-0001' });
    expect((await phone.postAnswer(lookupId, { ...forged, lookup_id: lookupId })).status).toBe(400);
    expect((await phone.postAnswer(lookupId, forged)).status).toBe(400);
    // The iPad's own valid seal, for a lookup that is not its own.
    expect((await ipad.answer(lookupId, result)).status).toBe(412);
    // A sealed answer that opens but is not an answer.
    expect((await phone.answer(lookupId, { ok: 'yes' })).status).toBe(400);
    // Nothing of those was taken: the lookup can still be fetched and answered.
    expect((await phone.fetchLookup(lookupId)).status).toBe(200);

    expect((await phone.postAnswer(lookupId, genuine)).status).toBe(200);
    const replay = await phone.postAnswer(lookupId, genuine);
    expect(replay.status).toBe(409);
    expect((await phone.answer(lookupId, { ok: true, travel_times: [] })).status).toBe(409);
    expect((await phone.fetchLookup(lookupId)).status).toBe(404);
    expect((await call).json()).toMatchObject({
      from: { me: true, detail: 'area' },
      travel_times: [
        { to: { saved_place: 'Work' }, distance_m: 5200, duration_s: 960 },
        { to: { name: '51.5,-0.1' }, error: 'No route' },
      ],
    });
  });

  it('gives a trip from "me" to a saved place a labelled straight-line guess when the phone does not answer', async () => {
    const pushed = reporting.next();
    const before = timers.waiting;
    const call = maps({ action: 'directions', to: 'Work', mode: 'walking' });
    const lookupId = await pushedLookupId(pushed);
    await timers.untilWaiting(before + 1);
    timers.advance(25_000);
    const guess = (await call).json();
    expect(guess).toMatchObject({
      ok: true,
      guess: true,
      source: 'straight-line guess (not Apple Maps)',
      to: { saved_place: 'Work' },
      straight_line_m: 5100,
      // 5.1 km × 1.3 at 1.4 m/s, to the minute.
      rough_duration_s: 4740,
    });
    expect(String(guess.note)).toContain('did not answer within 25 s');

    // An answer that comes after the tool stopped waiting is still taken, and serves a repeat.
    const events = relay.events.length;
    await phoneOf('default').lookup(lookupId);
    expect((await phoneOf('default').answer(lookupId, { ok: true, routes: [ROUTE] })).status).toBe(200);
    const repeat = (await maps({ action: 'directions', to: 'Work', mode: 'walking' })).json();
    expect(repeat).toMatchObject({ routes: [{ duration_s: 1260 }], repeat_of: expect.any(String) });
    expect(relay.events.length).toBe(events);
  });

  it('refuses "me" when the user shares places only, without waking the phone', async () => {
    const events = relay.events.length;
    await share('places', { precision: { foreground: 'places', background: 'places' } });
    const refused = await maps({ action: 'directions', to: 'Work' }, 'places');
    expect(refused.isError).toBe(true);
    expect(refused.text).toContain('places only');
    expect(relay.events.length).toBe(events);
  });

  it('leaves lookups that do not involve the user to the host engine, unless the user keeps them on the iPhone', async () => {
    const events = relay.events.length;
    // The host engine answers (here: its relay has no Maps key), and the phone is not woken.
    const onHost = await maps({ action: 'lookup', place: '10 Downing Street, London' });
    expect(onHost.isError).toBe(true);
    expect(onHost.text).toContain('has no Apple Maps access');
    expect(relay.events.length).toBe(events);

    const phone = phoneOf(KEEP);
    const pushed = reporting.next();
    const call = maps({ action: 'lookup', place: '10 Downing Street, London' }, KEEP);
    const lookupId = await pushedLookupId(pushed);
    expect((await phone.lookup(lookupId)).request).toEqual({
      action: 'lookup',
      place: { text: '10 Downing Street, London' },
    });
    await phone.answer(lookupId, {
      ok: true,
      places: [{ name: '10 Downing Street', address: 'London SW1A 2AA', lat: 51.5034, lon: -0.1276 }],
    });
    expect((await call).json()).toMatchObject({
      source: "Apple Maps on the user's iPhone",
      place: { name: '10 Downing Street', place_id: expect.any(String) },
    });
  });
});

describe('the phone wake budgets', () => {
  it('allows 30 wakes an hour and 120 a day per profile, persisted in the profile home', async () => {
    const phone = phoneOf(KEEP);
    const file = path.join(homeOf(KEEP), MAPS_WAKES_FILE);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    // 29 wakes in the last hour (this profile's one so far included): the 30th goes, the 31st does not.
    const inHour = Array.from({ length: 28 }, (_, i) => clock.now() - (i + 1) * MINUTE);
    writeFileSync(file, JSON.stringify({ wakes: [...wakesOf(KEEP), ...inHour] }), { mode: 0o600 });
    expect(wakesOf(KEEP)).toHaveLength(29);
    const pushed = reporting.next();
    const thirtieth = maps({ action: 'search', query: 'coffee', near: 'me' }, KEEP);
    const lookupId = await pushedLookupId(pushed);
    await phone.lookup(lookupId);
    await phone.answer(lookupId, { ok: true, places: [{ name: 'Ozone', lat: 51.52, lon: -0.08, distance_m: 349 }] });
    // Precise detail: distances as the phone gave them.
    expect((await thirtieth).json()).toMatchObject({
      near: { me: true, detail: 'precise' },
      results: [{ name: 'Ozone', distance_m: 349 }],
    });
    const events = relay.events.length;
    const spent = await maps({ action: 'search', query: 'tea', near: 'me' }, KEEP);
    expect(spent.isError).toBe(true);
    expect(spent.text).toContain('at most 30 maps lookups an hour');
    expect(relay.events.length).toBe(events);

    // An hour on, the hour is free again but the day holds 120: 119 earlier today, the 120th goes.
    clock.advance(61 * MINUTE);
    const earlier = Array.from({ length: 119 }, (_, i) => clock.now() - 2 * 3_600_000 - i * MINUTE);
    writeFileSync(file, JSON.stringify({ wakes: earlier }), { mode: 0o600 });
    const pushedAgain = reporting.next();
    const last = maps({ action: 'search', query: 'tea', near: 'me' }, KEEP);
    const lastId = await pushedLookupId(pushedAgain);
    await phone.lookup(lastId);
    await phone.answer(lastId, { ok: true, places: [] });
    expect((await last).isError).toBe(false);
    expect(wakesOf(KEEP)).toHaveLength(120);
    const dayOver = await maps({ action: 'search', query: 'juice', near: 'me' }, KEEP);
    expect(dayOver.text).toContain('at most 120 maps lookups a day');
    expect(relay.events.length).toBe(events + 1);
  });

  it('gives a wake back when the push never leaves', async () => {
    writePairing(homeOf(KEEP), relay.url); // no end-to-end key: the request is never sent in the clear
    clock.advance(25 * 3_600_000);
    const events = relay.events.length;
    const refused = await maps({ action: 'search', query: 'bakery', near: 'me' }, KEEP);
    expect(refused.isError).toBe(true);
    expect(refused.text).toContain('only ever asked sealed');
    expect(relay.events.length).toBe(events);
    expect(wakesOf(KEEP)).toEqual([]);
    writePairing(homeOf(KEEP), relay.url, sealedPairing);
  });
});
