import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LOCATION_LABEL } from '@conduit/contracts/dashboard/location';
import type { Host } from '../../src/app.js';
import { callVerdict, type Whereabouts } from '../../src/features/calls/call-dispatch.js';
import type { CallsFile, CallWatch } from '../../src/features/calls/calls-state.js';
import type { Logger } from '../../src/log.js';
import { ManualClock, TEST_TOKEN, tempHermesHome, testConfig } from '../support/config.js';
import { FakeRelay } from '../support/fake-relay.js';
import { callHook } from '../support/hook-call.js';
import { startHost } from '../support/host.js';
import { writePairing } from '../support/pairing.js';
import { PhoneStandIn } from '../support/phone-stand-in.js';

/**
 * "No calls at places" (the seed, Location): a call that would ring while the user's latest fix is at
 * an avoided place goes out as the usual notification (limited, reason place); with
 * avoid_unknown_place, also with no recent fix, or sharing paused or off. Through the whole host: the
 * calls routes, a phone stand-in's sealed location batches, Hermes' turn-end hooks, and what reaches
 * the relay. The latest fix counts a day with background sharing on, else an hour.
 */
const PREFIX = '/api/plugins/conduit_push';

const watch = (over: Partial<CallWatch> = {}): CallWatch => ({
  id: 'a'.repeat(24),
  session_ids: ['job'],
  title: null,
  created_at: 0,
  expires_at: 10_000,
  hold_until: null,
  pending: 'done',
  origin: 'conduit',
  reason: null,
  asked: true,
  ...over,
});
const file = (settings: CallsFile['settings']): CallsFile => ({
  v: 1,
  settings: { enabled: true, ...settings },
  watches: [],
  history: [],
  ends: [],
  seeded: [],
  presence_until: null,
  outcomes: [],
  told: [],
});

describe('callVerdict with avoided places', () => {
  it('is limited with reason place at an avoided place, and asks where only when the settings need it', () => {
    let asked = 0;
    const at = (where: Whereabouts) => () => {
      asked += 1;
      return where;
    };
    expect(callVerdict(file({}), watch(), 100, at({ placeId: 'home', known: true }))).toEqual({ decision: 'call' });
    expect(asked).toBe(0);
    const avoiding = file({ avoid_places: ['home'] });
    expect(callVerdict(avoiding, watch(), 100, at({ placeId: 'home', known: true }))).toEqual({
      decision: 'limited',
      reason: 'place',
    });
    expect(callVerdict(avoiding, watch(), 100, at({ placeId: 'work', known: true }))).toEqual({ decision: 'call' });
    expect(callVerdict(avoiding, watch(), 100, at({ placeId: null, known: false }))).toEqual({ decision: 'call' });
    const unknownToo = file({ avoid_places: ['home'], avoid_unknown_place: true });
    expect(callVerdict(unknownToo, watch(), 100, at({ placeId: null, known: false }))).toEqual({
      decision: 'limited',
      reason: 'place',
    });
    // A host without location never knows the place.
    expect(callVerdict(unknownToo, watch(), 100)).toEqual({ decision: 'limited', reason: 'place' });
    // The other limits keep their own reasons.
    expect(callVerdict({ ...avoiding, history: [90] }, watch(), 100)).toEqual({ decision: 'limited', reason: 'gap' });
  });
});

describe('calls through the host at avoided places', () => {
  let home: ReturnType<typeof tempHermesHome>;
  let relay: FakeRelay;
  let clock: ManualClock;
  let host: Host & { url: string };
  let phone: PhoneStandIn;
  let logged: { msg: string; fields: Record<string, unknown> }[];
  let sessions = 0;

  const nowS = () => clock.now() / 1000;
  const sharing = (over: Record<string, unknown> = {}) => ({
    foreground: true,
    background: true,
    paused: false,
    retention_days: 7,
    precision: { foreground: 'precise', background: 'places' },
    features: [],
    ...over,
  });
  const PLACES = [
    { id: 'home', name: 'Home', kind: 'home' },
    { id: 'work', name: 'Work', kind: 'work' },
  ];
  let fixes = 0;
  /** The phone shares a fix at `place`, taken `agoS` seconds ago. */
  async function fixAt(place: string, agoS: number, over: Record<string, unknown> = {}): Promise<void> {
    fixes += 1;
    const layer = over.background === false ? 'foreground' : 'background';
    const sent = await phone.send({
      v: 1,
      sharing: sharing(over),
      places: PLACES,
      fixes: [{ id: `fix-${fixes}`, at: nowS() - agoS, layer, kind: 'fix', place_id: place }],
    });
    expect(sent.status).toBe(200);
  }

  async function api(method: string, route: string, body?: unknown) {
    const response = await fetch(host.url + PREFIX + route, {
      method,
      headers: { authorization: `Bearer ${TEST_TOKEN}`, 'content-type': 'application/json' },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  }

  async function hook(name: string, sessionId: string, extra: Record<string, unknown> = {}) {
    return callHook(host.url, host.hookToken, {
      hook_event_name: name,
      profile: 'default',
      session_id: sessionId,
      extra,
    });
  }

  /** A watched job's turn ends; answers what reached the relay for it (call or usual push). */
  async function watchedJobEnds(): Promise<string> {
    sessions += 1;
    const sessionId = `job-${sessions}`;
    const before = relay.events.length;
    expect((await api('POST', '/calls/watches', { session_ids: [sessionId] })).body).toMatchObject({
      status: 'watching',
    });
    await hook('pre_llm_call', sessionId, { turn_id: `t-${sessionId}` });
    await hook('post_llm_call', sessionId, { assistant_response: 'Done.', turn_id: `t-${sessionId}` });
    await hook('on_session_end', sessionId, { turn_id: `t-${sessionId}`, completed: true });
    await host.calls.settled();
    await host.queue.whenIdle();
    // Past the 120 s gap, so the next call is judged on the place alone.
    clock.advance(10 * 60_000);
    const sent = relay.events.slice(before).map((event) => String(event.body.type));
    expect(sent).toHaveLength(1);
    return sent[0] ?? '';
  }

  const heldForPlace = () =>
    logged.some((line) => line.msg.startsWith('call held back') && line.fields.reason === 'place');

  beforeEach(async () => {
    home = tempHermesHome();
    relay = new FakeRelay();
    await relay.start();
    writePairing(home.root, relay.url);
    clock = new ManualClock(Date.UTC(2026, 11, 7, 9, 0, 0));
    logged = [];
    const log: Logger = {
      info: (msg, fields) => void logged.push({ msg, fields: fields ?? {} }),
      warn: (msg, fields) => void logged.push({ msg, fields: fields ?? {} }),
      error: (msg, fields) => void logged.push({ msg, fields: fields ?? {} }),
    };
    host = await startHost(testConfig(home.root, { clock, log }), { sleep: async () => {} });
    phone = new PhoneStandIn(host.url, 'location', LOCATION_LABEL, 'iphone-1');
    expect((await phone.agree()).status).toBe(200);
    expect((await api('PUT', '/calls', { settings: { enabled: true, avoid_places: ['home'] } })).status).toBe(200);
  });
  afterEach(async () => {
    await host.app.close();
    await relay.stop();
    home.cleanup();
  });

  it('GET and PUT /calls carry avoid_places and avoid_unknown_place, and refuse malformed ones', async () => {
    expect((await api('GET', '/calls')).body.settings).toMatchObject({
      avoid_places: ['home'],
      avoid_unknown_place: false,
    });
    const put = await api('PUT', '/calls', {
      settings: { avoid_places: ['home', 'work', 'home'], avoid_unknown_place: true },
    });
    expect(put.body.settings).toMatchObject({ avoid_places: ['home', 'work'], avoid_unknown_place: true });
    for (const bad of [{ avoid_places: 'home' }, { avoid_places: ['bad id'] }, { avoid_unknown_place: 'yes' }]) {
      expect((await api('PUT', '/calls', { settings: bad })).status).toBe(400);
    }
  });

  it('at an avoided place the call goes out as the usual notification (limited, reason place); elsewhere it rings', async () => {
    await fixAt('home', 60);
    expect(await watchedJobEnds()).toBe('response.ready');
    expect(heldForPlace()).toBe(true);
    await fixAt('work', 60);
    expect(await watchedJobEnds()).toBe('call.requested');
  });

  it('the latest fix counts for 24 hours with background sharing on, otherwise 1 hour', async () => {
    await fixAt('home', 23 * 3600);
    expect(await watchedJobEnds()).toBe('response.ready');
    // While Using only: a two-hour-old fix no longer says where the user is, so the call rings.
    await fixAt('home', 2 * 3600, { background: false });
    expect(await watchedJobEnds()).toBe('call.requested');
    await fixAt('home', 30 * 60, { background: false });
    expect(await watchedJobEnds()).toBe('response.ready');
  });

  it('with avoid_unknown_place, no recent fix or paused sharing holds the call too', async () => {
    expect((await api('PUT', '/calls', { settings: { avoid_unknown_place: true } })).status).toBe(200);
    // Nothing shared yet: unknown.
    expect(await watchedJobEnds()).toBe('response.ready');
    await fixAt('work', 60);
    expect(await watchedJobEnds()).toBe('call.requested');
    // Paused in Conduit: the place is unknown again, whatever the last fix said.
    expect((await phone.send({ v: 1, sharing: sharing({ paused: true }), fixes: [] })).status).toBe(200);
    expect(await watchedJobEnds()).toBe('response.ready');
    logged = [];
    expect((await phone.send({ v: 1, sharing: sharing(), fixes: [] })).status).toBe(200);
    clock.advance(25 * 3600_000);
    expect(await watchedJobEnds()).toBe('response.ready');
    expect(heldForPlace()).toBe(true);
  });
});
