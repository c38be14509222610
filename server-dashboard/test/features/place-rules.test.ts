import { statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LOCATION_LABEL } from '@conduit/contracts/dashboard/location';
import { hermesApiClient } from '@conduit/contracts/hermes/api-client';
import type { Host } from '../../src/app.js';
import {
  locationFeature,
  NEVER_SCHEDULE,
  PLACE_RULES_FILE,
  PlaceRules,
  type LocationFeature,
} from '../../src/features/location/index.js';
import { silentLogger } from '../../src/log.js';
import { readOrCreateMcpToken } from '../../src/mcp/mcp-token.js';
import { ManualClock, TEST_TOKEN, tempHermesHome, testConfig } from '../support/config.js';
import { FakeRelay } from '../support/fake-relay.js';
import { HermesJobsStandIn, type JobsCall } from '../support/hermes-jobs-stand-in.js';
import { callHook } from '../support/hook-call.js';
import { startHost } from '../support/host.js';
import { connectMcp } from '../support/mcp-client.js';
import { writePairing } from '../support/pairing.js';
import { PhoneStandIn } from '../support/phone-stand-in.js';

/**
 * Place rules end to end: conduit_location's set_rule writes the "Place rule: <what>" job into a Hermes
 * jobs API stand-in, a phone stand-in's sealed arrive and leave events run it through the jobs API
 * (`/run`, after the prompt gains the line naming the place and the move), and the rules' bounds (a
 * day, 30 minutes, 15 minutes, days, hours, place, move, paused sharing) hold. Days and hours read in
 * UTC (the profile's config.yaml); the clock starts on Monday 7 December 2026, 08:00.
 */

const PREFIX = '/api/plugins/conduit_push';
const START_MS = Date.UTC(2026, 11, 7, 8, 0, 0);
const home = tempHermesHome();
const clock = new ManualClock(START_MS);
const nowS = () => clock.now() / 1000;
/** Moves the clock forward to `ms` (the tests only go forward, as time does). */
const setClock = (ms: number) => clock.advance(ms - clock.now());
const relay = new FakeRelay();
const hermes = new HermesJobsStandIn();
const location: LocationFeature = locationFeature();
let host: Host & { url: string };
let mcpToken: string;
let phone: PhoneStandIn;
let event = 0;

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
  { id: 'clinic', name: 'Clinic', kind: 'other', private: true },
];

beforeAll(async () => {
  writeFileSync(path.join(home.root, 'config.yaml'), 'timezone: UTC\n');
  await relay.start();
  await hermes.start();
  writePairing(home.root, relay.url);
  host = await startHost(testConfig(home.root, { clock, hermesApi: { url: hermes.url, key: 'hermes-key' } }), {
    features: [location],
  });
  mcpToken = await readOrCreateMcpToken(path.join(home.root, 'conduit-host'));
  phone = new PhoneStandIn(host.url, 'location', LOCATION_LABEL, 'iphone-1');
  expect((await phone.agree()).status).toBe(200);
  expect((await phone.send({ v: 1, sharing: sharing(), places: PLACES, fixes: [] })).status).toBe(200);
});
afterAll(async () => {
  await host.app.close();
  await hermes.stop();
  await relay.stop();
  home.cleanup();
});

async function api(method: string, route: string) {
  const response = await fetch(host.url + PREFIX + route, {
    method,
    headers: { authorization: `Bearer ${TEST_TOKEN}` },
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** The hook first (it signs the calling turn into the arguments), then the tool, as Hermes does. */
async function toolCall(args: Record<string, unknown>) {
  const hooked = await callHook(host.url, host.hookToken, {
    hook_event_name: 'pre_tool_call',
    profile: 'default',
    session_id: 'chat-rules',
    tool_name: 'mcp_conduit_conduit_location',
    tool_input: args,
    extra: { turn_id: 't-rules', tool_call_id: 'tc-1' },
  });
  const answer = hooked.answer as { args: Record<string, unknown> };
  const client = await connectMcp(host.url, mcpToken, null);
  try {
    const result = await client.callTool({ name: 'conduit_location', arguments: answer.args });
    const text = (result.content as { type: string; text: string }[])[0]?.text ?? '';
    return { isError: result.isError === true, text, json: () => JSON.parse(text) as Record<string, unknown> };
  } finally {
    await client.close();
  }
}

/** The phone reports arriving at or leaving a place `agoS` seconds ago; resolves once the rules heard it. */
async function move(type: 'arrive' | 'leave', placeId: string, agoS = 30): Promise<void> {
  event += 1;
  const sent = await phone.send({
    v: 1,
    sharing: sharing(),
    fixes: [],
    events: [{ id: `ev-${event}`, type, place_id: placeId, at: Math.round(nowS() - agoS) }],
  });
  expect(sent.status).toBe(200);
  await location.rulesSettled();
}

/** The run requests the stand-in saw for `jobId` since `from`: each PATCH of the prompt, then `/run`. */
function runsOf(jobId: string, from = 0): JobsCall[] {
  return hermes.calls.slice(from).filter((call) => call.method === 'POST' && call.path === `/api/jobs/${jobId}/run`);
}

async function setRule(args: Record<string, unknown>): Promise<string> {
  const answer = await toolCall({ action: 'set_rule', ...args });
  expect(answer.isError, answer.text).toBe(false);
  return String((answer.json().rule as { id: string }).id);
}

describe('set_rule, rules and remove_rule', () => {
  it('set_rule keeps a "Place rule: <what>" job that never runs on its own schedule', async () => {
    const answer = await toolCall({
      action: 'set_rule',
      what: 'Brief when I leave home',
      task: 'Call me with my morning brief.',
      place: 'home',
      move: 'leave',
      days: ['mon', 'tue', 'wed', 'thu', 'fri'],
      rule_hours: '06:00-10:00',
    });
    expect(answer.isError, answer.text).toBe(false);
    const rule = answer.json().rule as { id: string };
    expect(answer.json()).toMatchObject({
      ok: true,
      action: 'set_rule',
      status: 'created',
      job_name: 'Place rule: Brief when I leave home',
      rule: {
        what: 'Brief when I leave home',
        place: { id: 'home', name: 'Home' },
        move: 'leave',
        days: ['mon', 'tue', 'wed', 'thu', 'fri'],
        hours: '06:00-10:00',
        repeat: 'daily',
        last_fired_at: null,
      },
    });
    const job = hermes.jobs.get(rule.id);
    expect(job).toMatchObject({ name: 'Place rule: Brief when I leave home', enabled: true, deliver: 'local' });
    expect(job?.schedule).toEqual({ kind: 'interval', minutes: 36525 * 1440, display: `every ${36525 * 1440}m` });
    expect(NEVER_SCHEDULE).toBe('every 36525d');
    expect(String(job?.prompt)).toContain('Task: Call me with my morning brief.');
    expect(statSync(path.join(home.root, PLACE_RULES_FILE)).mode & 0o777).toBe(0o600);
  });

  it('the same what changes its job; an unknown or private place, a bad window or no move is refused', async () => {
    const before = hermes.jobs.size;
    const again = await toolCall({
      action: 'set_rule',
      what: 'brief  when I leave HOME',
      task: 'Call me with my morning brief, weather first.',
      place: 'Home',
      move: 'leave',
      days: ['mon', 'tue', 'wed', 'thu', 'fri'],
      rule_hours: '06:00-10:00',
    });
    expect(again.json()).toMatchObject({ status: 'updated' });
    expect(hermes.jobs.size).toBe(before);
    for (const [args, error] of [
      [{ place: 'Gym' }, /No saved place "Gym" \(saved places: Home, Work\)/],
      [{ place: 'clinic' }, /No saved place "clinic"/],
      [{ rule_hours: '25:00-07:00' }, /hours must be HH:MM-HH:MM/],
      [{ move: undefined }, /needs move/],
    ] as const) {
      const refused = await toolCall({ action: 'set_rule', what: 'x', task: 'y', move: 'arrive', ...args });
      expect(refused.isError).toBe(true);
      expect(refused.text).toMatch(error);
    }
    expect(hermes.jobs.size).toBe(before);
  });

  it('rules and GET /location/rules list them; remove_rule and DELETE /location/rules/<id> remove job and rule', async () => {
    const first = await setRule({
      what: 'Plants',
      task: 'Remind me to water the plants.',
      place: 'Home',
      move: 'arrive',
    });
    const second = await setRule({ what: 'Gym bag', task: 'Remind me about the gym bag.', move: 'either' });
    const listed = await toolCall({ action: 'rules' });
    // The what as the user last put it.
    expect((listed.json().rules as { what: string }[]).map((rule) => rule.what)).toEqual([
      'brief when I leave HOME',
      'Plants',
      'Gym bag',
    ]);
    const routed = await api('GET', '/location/rules');
    expect(routed.status).toBe(200);
    expect(routed.body.rules).toEqual(listed.json().rules);
    expect((routed.body.rules as { place: unknown }[])[2]?.place).toBeNull();

    expect((await toolCall({ action: 'remove_rule', what: 'plants' })).json()).toMatchObject({
      removed: true,
      id: first,
      what: 'Plants',
    });
    expect(hermes.jobs.has(first)).toBe(false);
    expect(await api('DELETE', `/location/rules/${second}`)).toEqual({
      status: 200,
      body: { ok: true, removed: true },
    });
    expect(hermes.jobs.has(second)).toBe(false);
    expect(await api('DELETE', `/location/rules/${second}`)).toEqual({
      status: 200,
      body: { ok: true, removed: false },
    });
    expect((await api('DELETE', '/location/rules/not-a-job')).status).toBe(400);
    const unauthenticated = await fetch(`${host.url}${PREFIX}/location/rules`);
    expect(unauthenticated.status).toBe(401);
    expect(((await api('GET', '/location/rules')).body.rules as unknown[]).length).toBe(1);
  });
});

describe('an arrive or leave event runs a matching rule', () => {
  let briefId: string;
  beforeEach(async () => {
    const [rule] = (await api('GET', '/location/rules')).body.rules as { id: string }[];
    briefId = rule?.id ?? '';
  });

  it('leaving Home on a weekday morning runs the job now, with a line naming the place and the move, once a day', async () => {
    const from = hermes.calls.length;
    await move('leave', 'home');
    const runs = runsOf(briefId, from);
    expect(runs).toHaveLength(1);
    const patch = hermes.calls.slice(from).find((call) => call.method === 'PATCH');
    expect(String(patch?.body?.prompt)).toMatch(
      /Task: Call me with my morning brief, weather first\.\n\nTriggered now: the user left Home\.$/,
    );
    // Patched before it runs: the run reads the line.
    expect(hermes.calls.indexOf(patch as JobsCall)).toBeLessThan(hermes.calls.indexOf(runs[0] as JobsCall));
    expect(((await api('GET', '/location/rules')).body.rules as { last_fired_at: number }[])[0]?.last_fired_at).toBe(
      nowS(),
    );

    // Back home and out again the same morning: once a day.
    clock.advance(45 * 60_000);
    await move('arrive', 'home');
    await move('leave', 'home');
    expect(runsOf(briefId, from)).toHaveLength(1);
  });

  it('does not run for another move, place, day or hour', async () => {
    setClock(Date.UTC(2026, 11, 8, 7, 0, 0)); // Tuesday 07:00
    const from = hermes.calls.length;
    await move('arrive', 'home'); // another move
    await move('leave', 'work'); // another place
    await move('leave', 'clinic'); // a private place: the host keeps no id for it
    setClock(Date.UTC(2026, 11, 8, 11, 0, 0)); // Tuesday 11:00, outside 06:00-10:00
    await move('leave', 'home');
    setClock(Date.UTC(2026, 11, 12, 8, 0, 0)); // Saturday 08:00
    await move('leave', 'home');
    expect(runsOf(briefId, from)).toEqual([]);
    setClock(Date.UTC(2026, 11, 14, 8, 0, 0)); // Monday again: runs
    await move('leave', 'home');
    expect(runsOf(briefId, from)).toHaveLength(1);
  });

  it('never for an event over 15 minutes old', async () => {
    setClock(Date.UTC(2026, 11, 15, 8, 0, 0)); // Tuesday
    const from = hermes.calls.length;
    await move('leave', 'home', 16 * 60);
    expect(runsOf(briefId, from)).toEqual([]);
    await move('leave', 'home', 14 * 60);
    expect(runsOf(briefId, from)).toHaveLength(1);
  });

  it('"every" runs each match at least 30 minutes apart, at any place with "any"', async () => {
    const id = await setRule({ what: 'Log arrivals', task: 'Note where I arrived.', move: 'arrive', repeat: 'every' });
    const from = hermes.calls.length;
    await move('arrive', 'work');
    clock.advance(29 * 60_000);
    await move('arrive', 'home');
    expect(runsOf(id, from)).toHaveLength(1);
    clock.advance(60_000);
    await move('arrive', 'home');
    expect(runsOf(id, from)).toHaveLength(2);
    // "any" fires at a private place too, named only as one.
    clock.advance(31 * 60_000);
    await move('arrive', 'clinic');
    const prompts = hermes.calls
      .slice(from)
      .filter((call) => call.method === 'PATCH' && call.path === `/api/jobs/${id}`)
      .map((call) => String(call.body?.prompt).split('\n').at(-1));
    expect(prompts).toEqual([
      'Triggered now: the user arrived at Work.',
      'Triggered now: the user arrived at Home.',
      'Triggered now: the user arrived at a private place.',
    ]);
    expect((await toolCall({ action: 'remove_rule', id })).json()).toMatchObject({ removed: true });
  });
});

describe('the rules engine itself', () => {
  const engine = () =>
    new PlaceRules({
      jobs: { api: hermesApiClient({ url: hermes.url, key: 'hermes-key', timeoutMs: 5000 }), apiProfile: 'default' },
      clock,
      log: silentLogger,
      timeZone: async () => 'UTC',
    });
  const profile = { name: 'default', home: home.root };
  const leaving = (over: Record<string, unknown> = {}) => ({
    profile: 'default',
    home: home.root,
    deviceId: 'iphone-1',
    type: 'leave' as const,
    placeId: 'home',
    placeName: 'Home',
    private: false,
    at: nowS(),
    receivedAt: nowS(),
    ...over,
  });

  it('says why a rule did not run: stale, paused sharing, mismatch, repeat', async () => {
    setClock(Date.UTC(2026, 11, 21, 8, 0, 0)); // Monday
    const rules = engine();
    expect(await rules.handle(profile, leaving({ at: nowS() - 901 }))).toEqual(['stale']);
    expect(await rules.handle(profile, leaving({ type: 'arrive' }))).toEqual(['mismatch']);
    // Paused in Conduit: the phone's next batch says so, and no rule fires while it is.
    expect((await phone.send({ v: 1, sharing: sharing({ paused: true }), fixes: [] })).status).toBe(200);
    expect(await rules.handle(profile, leaving())).toEqual(['not_sharing']);
    expect((await phone.send({ v: 1, sharing: sharing(), fixes: [] })).status).toBe(200);
    expect(await rules.handle(profile, leaving())).toEqual(['fired']);
    expect(await rules.handle(profile, leaving())).toEqual(['repeat']);
  });

  it('a run Hermes refuses gives the day back, so the next matching event still fires', async () => {
    setClock(Date.UTC(2026, 11, 22, 8, 0, 0)); // Tuesday
    const rules = engine();
    hermes.cron = false;
    try {
      expect(await rules.handle(profile, leaving())).toEqual(['failed']);
    } finally {
      hermes.cron = true;
    }
    expect(await rules.handle(profile, leaving())).toEqual(['fired']);
  });

  it('a job the user paused in Hermes stays paused and does not run', async () => {
    setClock(Date.UTC(2026, 11, 23, 8, 0, 0)); // Wednesday
    const rules = engine();
    const [rule] = await rules.list(home.root);
    const job = hermes.jobs.get(rule?.id ?? '');
    Object.assign(job ?? {}, { enabled: false, state: 'paused' });
    const from = hermes.calls.length;
    expect(await rules.handle(profile, leaving())).toEqual(['job_paused']);
    expect(runsOf(rule?.id ?? '', from)).toEqual([]);
    expect(job).toMatchObject({ enabled: false });
    Object.assign(job ?? {}, { enabled: true, state: 'scheduled' });
    expect(await rules.handle(profile, leaving())).toEqual(['fired']);
  });
});
