/**
 * conduit_maps through the host's Apple Maps engine, end to end: the MCP SDK's own client (after the
 * pre_tool_call hook, as Hermes calls it), the host, a real relay process holding a Maps key (server-
 * relay, APNs in accept mode) that mints its token at an Apple Maps Server API stand-in, and that
 * stand-in answering lookups only with the token the relay handed out. A second real relay without a
 * Maps key answers 404.
 */
import type { ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRelayClient } from '@conduit/sdk/relay';
import { freePort, startServerProcess } from '@conduit/contracts/testing';
import type { Host } from '../../src/app.js';
import { mapsFeature, MAPS_USAGE_FILE, type SharedFix } from '../../src/features/maps/index.js';
import { readOrCreateMcpToken } from '../../src/mcp/mcp-token.js';
import { createRelayApi } from '../../src/pairing/relay-api.js';
import { runPush } from '../../src/pairing/cli.js';
import { createRelayFetch } from '../../src/pairing/relay-http.js';
import { AppleMapsStandIn, PARIS } from '../support/apple-maps-stand-in.js';
import { ManualClock, tempHermesHome, testConfig } from '../support/config.js';
import { callHook } from '../support/hook-call.js';
import { startHost } from '../support/host.js';
import { connectMcp } from '../support/mcp-client.js';

const REPO = path.resolve(new URL('.', import.meta.url).pathname, '../../..');
const TOPIC = 'dev.conduit.test';
const KEY_ID = 'MAPSKEY001';
const TEAM_ID = 'TEAM000001';
const HOUR = 3_600_000;

const home = tempHermesHome();
const soloHome = path.join(home.root, 'profiles', 'solo');
mkdirSync(soloHome, { recursive: true });
const clock = new ManualClock(Date.UTC(2026, 11, 4, 9, 0, 0));
const relays: ChildProcess[] = [];
let relayWithMaps: string;
let relayWithout: string;
let apple: AppleMapsStandIn;
let host: Host & { url: string };
let mcpToken: string;

/** The relay token asks the host made, per relay origin: the event each test checks. */
const tokenAsks = new Map<string, number>();
const asksTo = (relayUrl: string) => tokenAsks.get(relayUrl) ?? 0;
const pairingFetch = createRelayFetch({ timeoutMs: 10_000 });
const countingFetch: typeof fetch = (input, init) => {
  const request = new Request(input, init);
  const url = new URL(request.url);
  if (url.pathname === '/v1/maps/token') tokenAsks.set(url.origin, asksTo(url.origin) + 1);
  return pairingFetch(request, init);
};

/** The location feature's side, as a test sets it: the last shared fix and the saved places. */
let fix: SharedFix | null = null;
const offHomes = new Set<string>();
const reads: { profile: string; action: string; chat: string }[] = [];

async function startRelay(dataDir: string, env: Record<string, string>): Promise<string> {
  const port = await freePort();
  const server = await startServerProcess({
    name: 'relay',
    command: path.join(REPO, 'node_modules/.bin/tsx'),
    args: [path.join(REPO, 'server-relay/src/main.ts')],
    cwd: REPO,
    env: {
      ...process.env,
      HOST: '127.0.0.1',
      PORT: String(port),
      DATA_PATH: path.join(dataDir, 'relay.sqlite'),
      PUBLIC_URL: 'https://relay.invalid',
      APNS_TOPIC: TOPIC,
      APNS_MODE: 'accept',
      ...env,
    },
    port,
    ready: async (url) => (await fetch(`${url}/healthz`)).ok,
    timeoutMs: 60_000,
  });
  relays.push(server.child);
  return `http://127.0.0.1:${port}`;
}

/** The phone registers and mints a code through the relay's device API; the host pairs with it. */
async function pair(relayUrl: string, profileHome: string): Promise<void> {
  const relay = createRelayClient({ baseUrl: relayUrl });
  const registered = await relay.POST('/v1/installations', {
    body: { bundle_id: TOPIC, device_token: randomBytes(32).toString('hex'), environment: 'production' },
  });
  if (!registered.data) throw new Error(`register failed: ${registered.response.status}`);
  const pairing = await relay.POST('/v1/installations/{id}/pairings', {
    params: { path: { id: registered.data.installation.id } },
    headers: { authorization: `Bearer ${registered.data.credential}` },
    body: {},
  });
  if (!pairing.data) throw new Error(`pairing failed: ${pairing.response.status}`);
  const lines: string[] = [];
  const code = await runPush(['pair', pairing.data.pairing_code, '--relay-url', relayUrl, '--home', profileHome], {
    env: {},
    out: (line) => lines.push(line),
    err: (line) => lines.push(line),
    relay: createRelayApi({ userAgent: 'Conduit-Host/test' }),
    hostname: () => 'box',
    clock: Date.now,
    randomBytes: (n) => new Uint8Array(randomBytes(n)),
    identity: { version: '0.1.0', capabilities: ['version-reporting'] },
  });
  if (code !== 0) throw new Error(`pair failed: ${lines.join(' ')}`);
}

beforeAll(async () => {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const keyPath = path.join(home.root, 'maps.p8');
  writeFileSync(keyPath, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  apple = new AppleMapsStandIn({
    publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    keyId: KEY_ID,
    teamId: TEAM_ID,
  });
  await apple.start();
  mkdirSync(path.join(home.root, 'relay-a'));
  mkdirSync(path.join(home.root, 'relay-b'));
  [relayWithMaps, relayWithout] = await Promise.all([
    startRelay(path.join(home.root, 'relay-a'), {
      MAPS_KEY_ID: KEY_ID,
      MAPS_KEY_PATH: keyPath,
      APNS_TEAM_ID: TEAM_ID,
      MAPS_TOKEN_URL: `${apple.url}/v1/token`,
    }),
    startRelay(path.join(home.root, 'relay-b'), {}),
  ]);
  await pair(relayWithMaps, home.root);
  await pair(relayWithout, path.join(home.root, 'profiles', 'work'));
  host = await startHost(testConfig(home.root, { clock }), {
    features: [
      mapsFeature({
        origin: { me: () => fix, savedPlaceNames: () => ['Home', 'Work'] },
        readLog: { record: (profile, entry) => void reads.push({ profile: profile.name, ...entry }) },
        settings: { hostEngineOff: (profileHome) => offHomes.has(profileHome) },
        appleOrigin: apple.url,
        relayFetch: countingFetch,
      }),
    ],
  });
  mcpToken = await readOrCreateMcpToken(path.join(home.root, 'conduit-host'));
}, 120_000);

afterAll(async () => {
  await host?.app.close();
  await apple?.stop();
  await Promise.all(
    relays.map(async (child) => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }),
  );
  home.cleanup();
});

async function tools(profile = 'default'): Promise<string[]> {
  const client = await connectMcp(host.url, mcpToken, profile);
  try {
    return (await client.listTools()).tools.map((tool) => tool.name);
  } finally {
    await client.close();
  }
}

let turn = 0;
/** The hook first (it signs the calling turn into the arguments), then the tool, as Hermes does. */
async function maps(args: Record<string, unknown>, options: { profile?: string; chat?: string; taskId?: string } = {}) {
  const profile = options.profile ?? 'default';
  const chat = options.chat ?? 'chat-1';
  turn++;
  const hooked = await callHook(host.url, host.hookToken, {
    hook_event_name: 'pre_tool_call',
    profile,
    session_id: chat,
    tool_name: 'mcp_conduit_conduit_maps',
    tool_input: args,
    extra: { turn_id: `t-${turn}`, tool_call_id: `tc-${turn}`, ...(options.taskId ? { task_id: options.taskId } : {}) },
  });
  const answer = hooked.answer as { action: string; args: Record<string, unknown> };
  expect(answer.action).toBe('modify');
  const client: Client = await connectMcp(host.url, mcpToken, profile);
  try {
    const result = await client.callTool({ name: 'conduit_maps', arguments: answer.args });
    const text = (result.content as { type: string; text: string }[])[0]?.text ?? '';
    return { isError: result.isError === true, text, json: () => JSON.parse(text) as Record<string, unknown> };
  } finally {
    await client.close();
  }
}

const louvre = PARIS[0];
const flore = PARIS[1];

describe('conduit_maps on the host engine', () => {
  it('is offered while the profile is paired with a relay, and not once the user keeps lookups on the phone', async () => {
    expect(await tools()).toContain('conduit_maps');
    expect(await tools('solo')).not.toContain('conduit_maps');
    offHomes.add(home.root);
    expect(await tools()).not.toContain('conduit_maps');
    offHomes.delete(home.root);
    expect(await tools()).toContain('conduit_maps');
  });

  it('searches near a place by category with the token the relay minted at Apple, asking the relay once for several lookups', async () => {
    const before = apple.calls.length;
    const found = await maps({
      action: 'search',
      query: 'coffee',
      categories: ['Cafe'],
      near: `${louvre?.lat},${louvre?.lon}`,
    });
    expect(found.isError).toBe(false);
    const answer = found.json() as { results: { name: string; place_id: string; distance_m: number }[] };
    expect(answer.results.map((place) => place.name)).toEqual(['Café Kitsuné', 'Café de Flore']);
    expect(answer.results[0]?.distance_m).toBeGreaterThan(0);
    expect(answer.results[0]?.place_id).toMatch(/^[A-Za-z0-9]{12}$/);
    const [search] = apple.callsTo('/v1/search').slice(-1);
    expect(search?.params.get('includePoiCategories')).toBe('Cafe');
    expect(search?.params.get('searchLocation')).toBe(`${louvre?.lat},${louvre?.lon}`);
    // The relay exchanged its signed JWT once; the host used exactly the token it was handed.
    expect(apple.tokenExchanges).toBe(1);
    expect(search?.token).toBe(apple.issued[0]);

    await maps({ action: 'lookup', place: 'Gare de Lyon' });
    await maps({ action: 'reverse_geocode', place: '48.8541,2.3326' });
    const lookups = apple.calls.slice(before).filter((call) => call.path !== '/v1/token');
    expect(lookups.map((call) => call.path)).toEqual(['/v1/search', '/v1/geocode', '/v1/reverseGeocode']);
    expect(lookups.every((call) => call.status === 200 && call.token === apple.issued[0])).toBe(true);
    expect(asksTo(relayWithMaps)).toBe(1);
  });

  it('looks up an address, answers a place_id from it without asking Apple again, and routes to it', async () => {
    const lookup = await maps({ action: 'lookup', place: '10 Rue de Rivoli' });
    const place = (lookup.json() as { place: { place_id: string; name: string; lat: number; lon: number } }).place;
    expect(place).toMatchObject({ name: '10 Rue de Rivoli', lat: 48.8556, lon: 2.3601 });

    const before = apple.calls.length;
    const again = await maps({ action: 'lookup', place: `place_id:${place.place_id}` });
    expect((again.json() as { place: unknown }).place).toEqual(place);
    expect(apple.calls.length).toBe(before);

    const walk = await maps({
      action: 'directions',
      from: `place_id:${place.place_id}`,
      to: 'Musée du Louvre',
      mode: 'walking',
    });
    expect(walk.isError).toBe(false);
    const [call] = apple.callsTo('/v1/directions').slice(-1);
    expect(call?.params.get('origin')).toBe('48.8556,2.3601');
    expect(call?.params.get('destination')).toBe('Musée du Louvre');
    expect(call?.params.get('transportType')).toBe('Walking');
    const route = (walk.json() as { routes: { duration_s: number; steps: { instructions: string }[] }[] }).routes[0];
    expect(route?.steps.map((step) => step.instructions)).toEqual([
      'Head east on Quai du Louvre',
      'Arrive at the destination',
    ]);

    const unknown = await maps({ action: 'lookup', place: 'place_id:NoSuchPlace1' });
    expect(unknown.isError).toBe(true);
    expect(unknown.text).toContain('place_id:NoSuchPlace1 is not one this profile was given');
  });

  it('drives avoiding tolls to arrive by a time and says when to leave', async () => {
    const arriveBy = '2026-12-04T18:00:00+01:00';
    const drive = await maps({
      action: 'directions',
      from: 'Gare de Lyon',
      to: `${flore?.lat},${flore?.lon}`,
      avoid_tolls: true,
      arrive_by: arriveBy,
    });
    expect(drive.isError).toBe(false);
    const [call] = apple.callsTo('/v1/directions').slice(-1);
    expect(call?.params.get('avoid')).toBe('Tolls');
    expect(call?.params.get('arrivalDate')).toBe('2026-12-04T17:00:00Z');
    expect(call?.params.get('transportType')).toBe('Automobile');
    expect(call?.params.get('requestsAlternateRoutes')).toBe('true');
    const answer = drive.json() as {
      from: { name: string };
      routes: { duration_s: number; leave_by: string; has_tolls: boolean }[];
    };
    expect(answer.from.name).toBe('Gare de Lyon');
    expect(answer.routes).toHaveLength(2);
    for (const route of answer.routes) {
      expect(route.has_tolls).toBe(false);
      expect(Date.parse(route.leave_by)).toBe(Date.parse(arriveBy) - route.duration_s * 1000);
    }
  });

  it('gives travel times to several places from "me", matched by coordinate', async () => {
    fix = { lat: 48.85837, lon: 2.294481, detail: 'precise' };
    const destinations = ['Musée du Louvre', 'Gare de Lyon', `${flore?.lat},${flore?.lon}`];
    const times = await maps({ action: 'travel_times', destinations, mode: 'cycling' });
    expect(times.isError).toBe(false);
    const [eta] = apple.callsTo('/v1/etas').slice(-1);
    expect(eta?.params.get('origin')).toBe('48.85837,2.294481');
    expect(eta?.params.get('transportType')).toBe('Cycling');
    const answer = times.json() as {
      from: unknown;
      travel_times: { to: { name: string; lat: number }; distance_m: number; duration_s: number }[];
    };
    expect(answer.from).toEqual({ me: true, detail: 'precise' });
    expect(answer.travel_times.map((time) => time.to.name)).toEqual([
      'Musée du Louvre',
      'Gare de Lyon',
      `${flore?.lat},${flore?.lon}`,
    ]);
    // The stand-in answers in reverse order: each time still belongs to its own place.
    const [toLouvre, toLyon] = answer.travel_times;
    expect(toLyon?.distance_m).toBeGreaterThan(toLouvre?.distance_m ?? Infinity);

    const tooMany = await maps({
      action: 'travel_times',
      destinations: Array.from({ length: 11 }, () => 'Gare de Lyon'),
    });
    expect(tooMany.isError).toBe(true);
    expect(tooMany.text).toMatch(/destinations/);
    expect(tooMany.text).toMatch(/<=10 items/);
  });

  it('uses "me" at area detail without revealing more, and refuses it at "places only" or without a fix', async () => {
    fix = { lat: 48.856613, lon: 2.352222, detail: 'area' };
    const near = await maps({ action: 'search', query: 'museum', near: 'me' });
    expect(near.isError).toBe(false);
    const [search] = apple.callsTo('/v1/search').slice(-1);
    expect(search?.params.get('searchLocation')).toBe('48.86,2.35');
    expect(near.text).not.toContain('48.856613');
    expect((near.json() as { near: unknown }).near).toMatchObject({ me: true, detail: 'area' });

    const where = await maps({ action: 'reverse_geocode', place: 'me' });
    const answer = where.json() as { area: string; place: unknown };
    expect(answer.area).toContain('Paris');
    expect(where.text).not.toContain('formattedAddress');
    expect(where.text).not.toMatch(/Rue|Boulevard|Place Louis/);

    fix = { lat: 48.856613, lon: 2.352222, detail: 'places' };
    const before = apple.calls.length;
    const placesOnly = await maps({ action: 'directions', to: 'Gare de Lyon' });
    expect(placesOnly.isError).toBe(true);
    expect(placesOnly.text).toContain('"places only"');
    fix = null;
    const none = await maps({ action: 'search', query: 'cafe', near: 'me' });
    expect(none.isError).toBe(true);
    expect(none.text).toContain('no recent location');
    expect(apple.calls.length).toBe(before);
  });

  it('refuses saved places, transit and bad input with a clear sentence, before asking Apple', async () => {
    const before = apple.calls.length;
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ action: 'directions', from: 'Gare de Lyon', to: 'home' }, /"Home" is one of the user's saved places/],
      [
        { action: 'directions', from: 'Gare de Lyon', to: 'Musée du Louvre', mode: 'transit' },
        /Transit routes need the user's iPhone/,
      ],
      [{ action: 'directions', from: 'Gare de Lyon' }, /to is required/],
      [{ action: 'reverse_geocode', place: '91.5,2.3' }, /latitude within ±90/],
      [
        { action: 'directions', to: 'Gare de Lyon', arrive_by: 'tomorrow at six' },
        /arrive_by must be an ISO 8601 time/,
      ],
      [{ action: 'search' }, /search needs a query or categories/],
      [{ action: 'lookup', place: '   ' }, /A place is empty/],
      [{ action: 'lookup', place: 'place_id:' }, /place_id:<id>/],
      [{ action: 'lookup', place: 'Atlantis' }, /found no place/],
    ];
    for (const [args, expected] of cases) {
      const answer = await maps(args);
      expect(answer.isError, JSON.stringify(args)).toBe(true);
      expect(answer.text).toMatch(expected);
    }
    // Only the lookup of an unknown name reached Apple (one geocode).
    expect(apple.calls.slice(before).map((call) => call.path)).toEqual(['/v1/geocode']);
    // The read log has the action and the chat, never the query.
    expect(reads.at(-1)).toMatchObject({ profile: 'default', action: 'lookup', chat: 'chat-1' });
    expect(JSON.stringify(reads)).not.toContain('Atlantis');
  });

  it('answers a subagent and a scheduled job (a building block), and refuses a call whose turn it cannot prove', async () => {
    await callHook(host.url, host.hookToken, {
      hook_event_name: 'subagent_start',
      profile: 'default',
      session_id: 'parent',
      extra: { child_session_id: 'child-1', parent_session_id: 'parent' },
    });
    const child = await maps({ action: 'lookup', place: 'Gare de Lyon' }, { chat: 'child-1' });
    expect(child.isError).toBe(false);
    expect(reads.at(-1)).toMatchObject({ action: 'lookup', chat: 'child-1' });
    const cron = await maps(
      { action: 'travel_times', from: 'Gare de Lyon', destinations: ['Musée du Louvre'] },
      { chat: 'cron_0123456789ab_20261204_090000', taskId: 'cron:0123456789ab:20261204_090000' },
    );
    expect(cron.isError).toBe(false);
    expect(reads.at(-1)).toMatchObject({ action: 'travel_times', cronJobId: '0123456789ab' });

    const client = await connectMcp(host.url, mcpToken);
    const unproved = await client.callTool({
      name: 'conduit_maps',
      arguments: { action: 'lookup', place: 'Gare de Lyon' },
    });
    await client.close();
    expect(unproved.isError).toBe(true);
    expect(JSON.stringify(unproved.content)).toContain('conduit setup-hermes');
  });

  it('asks the relay again once its token is about to expire', async () => {
    const asked = asksTo(relayWithMaps);
    await maps({ action: 'lookup', place: 'Gare de Lyon' });
    expect(asksTo(relayWithMaps)).toBe(asked);
    clock.advance(apple.expiresInSeconds * 1000);
    // Concurrent lookups share the one exchange.
    const answers = await Promise.all([
      maps({ action: 'lookup', place: 'Gare de Lyon' }),
      maps({ action: 'lookup', place: 'Musée du Louvre' }),
      maps({ action: 'reverse_geocode', place: '48.8443,2.3744' }),
    ]);
    expect(answers.map((answer) => answer.isError)).toEqual([false, false, false]);
    expect(asksTo(relayWithMaps)).toBe(asked + 1);
    await maps({ action: 'lookup', place: 'Gare de Lyon' });
    expect(asksTo(relayWithMaps)).toBe(asked + 1);
  });

  it('stops asking a relay without a Maps key for an hour after its 404', async () => {
    expect(await tools('work')).toContain('conduit_maps');
    const refused = await maps({ action: 'lookup', place: 'Gare de Lyon' }, { profile: 'work', chat: 'work-chat' });
    expect(refused.isError).toBe(true);
    expect(refused.text).toContain('has no Apple Maps access');
    expect(asksTo(relayWithout)).toBe(1);
    // Not offered, not asked, for the hour.
    expect(await tools('work')).not.toContain('conduit_maps');
    clock.advance(HOUR - 60_000);
    expect(await tools('work')).not.toContain('conduit_maps');
    expect(asksTo(relayWithout)).toBe(1);
    // The paired relay with a key is not affected.
    expect(await tools()).toContain('conduit_maps');
    clock.advance(60_000);
    expect(await tools('work')).toContain('conduit_maps');
    await maps({ action: 'lookup', place: 'Gare de Lyon' }, { profile: 'work', chat: 'work-chat' });
    expect(asksTo(relayWithout)).toBe(2);
  });

  it('makes at most 200 Apple calls a day on this host, counted in a 0600 file', async () => {
    const usage = path.join(home.root, 'conduit-host', MAPS_USAGE_FILE);
    const today = new Date(clock.now()).toISOString().slice(0, 10);
    writeFileSync(usage, JSON.stringify({ day: today, calls: 199 }) + '\n', { mode: 0o600 });
    const last = await maps({ action: 'lookup', place: 'Gare de Lyon' });
    expect(last.isError).toBe(false);
    const before = apple.calls.length;
    const spent = await maps({ action: 'search', query: 'cafe', near: 'Gare de Lyon' });
    expect(spent.isError).toBe(true);
    expect(spent.text).toContain('200 Apple Maps lookups for today');
    expect(apple.calls.length).toBe(before);
    // Nor is the relay asked for a token while the day's calls are spent.
    const asked = asksTo(relayWithMaps);
    clock.advance(apple.expiresInSeconds * 1000);
    expect((await maps({ action: 'lookup', place: 'Gare de Lyon' })).isError).toBe(true);
    expect(asksTo(relayWithMaps)).toBe(asked);
    expect(JSON.parse(readFileSync(usage, 'utf8'))).toEqual({ day: today, calls: 200 });
    expect(statSync(usage).mode & 0o777).toBe(0o600);
    // A new UTC day, a new budget.
    clock.advance(24 * HOUR);
    const tomorrow = await maps({ action: 'lookup', place: 'Gare de Lyon' });
    expect(tomorrow.isError).toBe(false);
  });

  it('asks the relay for a fresh token once when Apple refuses one, then says so clearly', async () => {
    const token = apple.issued.at(-1) ?? '';
    apple.revoke(token);
    const asked = asksTo(relayWithMaps);
    const before = apple.calls.length;
    const refused = await maps({ action: 'lookup', place: 'Gare de Lyon' });
    expect(refused.isError).toBe(true);
    expect(refused.text).toContain('Apple Maps refused the access token');
    // The relay still holds the same token (its own cache), so the one retry is refused too.
    expect(asksTo(relayWithMaps)).toBe(asked + 1);
    expect(apple.calls.slice(before).map((call) => call.status)).toEqual([401, 401]);
    expect(refused.text).not.toContain(token);
  });

  it("the Apple stand-in accepts no token but the relay's", async () => {
    const forged = await fetch(`${apple.url}/v1/geocode?q=Louvre`, { headers: { authorization: 'Bearer forged' } });
    expect(forged.status).toBe(401);
    const jwt = await fetch(`${apple.url}/v1/token`, { headers: { authorization: 'Bearer a.b.c' } });
    expect(jwt.status).toBe(401);
  });
});
