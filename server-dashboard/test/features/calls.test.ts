import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Host } from '../../src/app.js';
import { CallsState, withTurnEnd } from '../../src/features/calls/calls-state.js';
import { ManualClock, TEST_TOKEN, tempHermesHome, testConfig } from '../support/config.js';
import { startHost } from '../support/host.js';

const PREFIX = '/api/plugins/conduit_push';
const home = tempHermesHome();
const clock = new ManualClock();
let host: Host & { url: string };

/** A profile home; `paired` writes the credential file the pairing leaves. */
function profile(name: string, paired: boolean): string {
  const dir = name === 'default' ? home.root : path.join(home.root, 'profiles', name);
  mkdirSync(dir, { recursive: true });
  if (paired) {
    writeFileSync(
      path.join(dir, 'conduit-push.json'),
      JSON.stringify({ credential: 'inst.gw.secret', installation_id: 'inst', gateway_id: 'gw' }),
    );
  }
  return dir;
}

async function call(method: 'GET' | 'PUT' | 'POST' | 'DELETE', route: string, body?: unknown) {
  const response = await fetch(host.url + PREFIX + route, {
    method,
    headers: {
      authorization: `Bearer ${TEST_TOKEN}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });
  return {
    status: response.status,
    cache: response.headers.get('cache-control'),
    body: (await response.json()) as Record<string, unknown>,
  };
}

const callsFile = (dir: string) => path.join(dir, 'conduit-calls.json');
const nowS = () => clock.now() / 1000;

let defaultHome: string;
beforeAll(async () => {
  defaultHome = profile('default', true);
  for (const name of ['work', 'limits', 'outcomes', 'holds', 'ended', 'rate']) profile(name, true);
  profile('unpaired', false);
  host = await startHost(testConfig(home.root, { clock }));
});
afterAll(async () => {
  await host.app.close();
  home.cleanup();
});
// Every test starts in a fresh rate window.
beforeEach(() => clock.advance(61_000));

async function callsOn(profileName: string): Promise<void> {
  const query = profileName === 'default' ? '' : `?profile=${profileName}`;
  expect((await call('PUT', `/calls${query}`, { settings: { enabled: true } })).status).toBe(200);
}

describe('GET and PUT /calls', () => {
  it('answers the defaults, the bounds and the pairing before anything is stored', async () => {
    const { status, cache, body } = await call('GET', '/calls?profile=unpaired');
    expect(status).toBe(200);
    expect(cache).toBe('no-store');
    expect(body).toEqual({
      ok: true,
      paired: false,
      settings: {
        enabled: false,
        when_asked: true,
        decides: false,
        alerts: false,
        min_gap_s: 120,
        per_hour: 6,
        per_day: 20,
        rules: '',
        avoid_places: [],
        avoid_unknown_place: false,
      },
      bounds: { min_gap_s: { min: 30, max: 3600 }, per_hour: { min: 1, max: 30 }, per_day: { min: 1, max: 60 } },
      rules_max: 500,
      watches: 0,
    });
  });

  it('changes what it is given, keeps the rest, and writes conduit-calls.json 0600', async () => {
    const put = await call('PUT', '/calls?profile=work', {
      settings: { enabled: true, min_gap_s: 30, rules: 'Only when the deploy fails.' },
    });
    expect(put.status).toBe(200);
    expect(put.body.settings).toMatchObject({ enabled: true, when_asked: true, min_gap_s: 30, per_hour: 6 });
    const again = await call('GET', '/calls?profile=work');
    expect(again.body).toMatchObject({ paired: true, settings: put.body.settings });
    const file = callsFile(path.join(home.root, 'profiles', 'work'));
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ v: 1, settings: { enabled: true, min_gap_s: 30 } });
  });

  it.each([
    [{}, 'Expected a JSON object with settings'],
    [[1], 'Expected a JSON object with settings'],
    [{ settings: 'on' }, 'Expected a JSON object with settings'],
    [{ settings: { enabled: 'true' } }, 'enabled must be true or false'],
    [{ settings: { alerts: 1 } }, 'alerts must be true or false'],
    [{ settings: { min_gap_s: 29 } }, 'min_gap_s must be a whole number from 30 to 3600'],
    [{ settings: { per_hour: 2.5 } }, 'per_hour must be a whole number from 1 to 30'],
    [{ settings: { per_day: true } }, 'per_day must be a whole number from 1 to 60'],
    [{ settings: { rules: 'x'.repeat(501) } }, 'rules must be text of up to 500 characters'],
    [{ settings: { enabled: true, ring_tone: 'bell' } }, 'unknown setting ring_tone'],
  ])('refuses %j with 400 and changes nothing', async (body, detail) => {
    const before = await call('GET', '/calls?profile=limits');
    const { status, body: answer } = await call('PUT', '/calls?profile=limits', body);
    expect([status, answer]).toEqual([400, { detail }]);
    expect((await call('GET', '/calls?profile=limits')).body).toEqual(before.body);
  });

  it('answers 400 for a body that is not JSON, 413 past 4 KiB, 503 for a profile that cannot be resolved', async () => {
    expect(await call('PUT', '/calls', '{nope')).toMatchObject({
      status: 400,
      body: { detail: 'Request body is not JSON' },
    });
    const big = await call('PUT', '/calls', { settings: { rules: 'x'.repeat(5000) } });
    expect(big).toMatchObject({ status: 413, body: { detail: 'Request body is too large' } });
    expect((await call('GET', '/calls?profile=nobody')).status).toBe(503);
  });

  it('leaves a conduit-calls.json it cannot read as it is and says so (503)', async () => {
    const dir = profile('broken', true);
    writeFileSync(callsFile(dir), '{"v": 1, "watches": "many"}');
    const { status, body } = await call('PUT', '/calls?profile=broken', { settings: { enabled: true } });
    expect(status).toBe(503);
    expect(body.detail).toMatch(/conduit-calls\.json is not valid/);
    expect(readFileSync(callsFile(dir), 'utf8')).toBe('{"v": 1, "watches": "many"}');
  });

  it('allows 30 requests a minute per profile, then 429', async () => {
    for (let i = 0; i < 30; i++) expect((await call('GET', '/calls?profile=rate')).status).toBe(200);
    expect(await call('GET', '/calls?profile=rate')).toMatchObject({
      status: 429,
      body: { detail: 'Too many call requests; try again shortly' },
    });
    expect((await call('GET', '/calls?profile=work')).status).toBe(200);
    clock.advance(60_001);
    expect((await call('GET', '/calls?profile=rate')).status).toBe(200);
  });
});

describe('call watches', () => {
  it('refuses an unpaired profile (409) and a profile with calls off (409)', async () => {
    expect(await call('POST', '/calls/watches?profile=unpaired', { session_ids: ['s1'] })).toMatchObject({
      status: 409,
      body: { detail: "This Hermes profile isn't paired with Conduit" },
    });
    const off = await call('POST', '/calls/watches?profile=holds', { session_ids: ['s1'] });
    expect(off).toMatchObject({ status: 409, body: { detail: 'Calls are off for this Hermes profile' } });
    await call('PUT', '/calls?profile=holds', { settings: { enabled: true, when_asked: false } });
    expect((await call('POST', '/calls/watches?profile=holds', { session_ids: ['s1'] })).status).toBe(409);
  });

  it.each([
    [{}, 'session_ids must be a list of 1 to 4 session ids'],
    [{ session_ids: [] }, 'session_ids must be a list of 1 to 4 session ids'],
    [{ session_ids: ['a', 'b', 'c', 'd', 'e'] }, 'session_ids must be a list of 1 to 4 session ids'],
    [{ session_ids: ['has space'] }, 'session_ids must be a list of 1 to 4 session ids'],
    [{ session_ids: ['s'], title: 'x'.repeat(121) }, 'title must be text of up to 120 characters'],
    [{ session_ids: ['s'], hold_s: 601 }, 'hold_s must be a whole number from 0 to 600'],
    [{ session_ids: ['s'], ended_within_s: 1801 }, 'ended_within_s must be a whole number from 0 to 1800'],
  ])('refuses %j with 400', async (body, detail) => {
    await callsOn('work');
    expect(await call('POST', '/calls/watches?profile=work', body)).toMatchObject({ status: 400, body: { detail } });
  });

  it('watches, keeps one watch per session, renews and releases holds, and deletes', async () => {
    await callsOn('default');
    const first = await call('POST', '/calls/watches', {
      session_ids: ['job-1', 'job-1-stored'],
      title: 'Build',
      hold_s: 60,
    });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ ok: true, status: 'watching' });
    const id = String(first.body.id);
    expect(id).toMatch(/^[0-9a-f]{24}$/);
    const same = await call('POST', '/calls/watches', { session_ids: ['job-1-stored'], hold_s: 120 });
    expect(same.body).toEqual({ ok: true, status: 'watching', id });
    expect((await call('GET', '/calls')).body.watches).toBe(1);

    let stored = JSON.parse(readFileSync(callsFile(defaultHome), 'utf8')) as { watches: Record<string, unknown>[] };
    expect(stored.watches).toEqual([
      expect.objectContaining({
        id,
        session_ids: ['job-1', 'job-1-stored'],
        title: 'Build',
        hold_until: nowS() + 120,
        expires_at: nowS() + 24 * 3600,
        origin: 'conduit',
        pending: null,
      }),
    ]);

    expect((await call('PUT', `/calls/watches/${id}`, { hold_s: 300 })).body).toEqual({ ok: true, status: 'watching' });
    expect((await call('PUT', `/calls/watches/${id}`, { hold_s: 0 })).body).toEqual({ ok: true, status: 'watching' });
    stored = JSON.parse(readFileSync(callsFile(defaultHome), 'utf8')) as { watches: Record<string, unknown>[] };
    expect(stored.watches[0]?.hold_until).toBeNull();

    expect((await call('DELETE', `/calls/watches/${id}`)).body).toEqual({ ok: true, removed: true });
    expect((await call('DELETE', `/calls/watches/${id}`)).body).toEqual({ ok: true, removed: false });
    expect((await call('PUT', `/calls/watches/${id}`, { hold_s: 10 })).body).toEqual({ ok: true, status: 'gone' });
    expect(await call('PUT', '/calls/watches/NOT-AN-ID', { hold_s: 10 })).toMatchObject({
      status: 400,
      body: { detail: 'Unknown watch id' },
    });
    expect((await call('DELETE', '/calls/watches/abc')).status).toBe(400);
  });

  it('a job that ended during the hold answers ended; releasing the hold consumes the watch', async () => {
    await call('PUT', '/calls?profile=holds', { settings: { enabled: true, when_asked: true } });
    const { body } = await call('POST', '/calls/watches?profile=holds', { session_ids: ['long-job'], hold_s: 600 });
    const id = String(body.id);
    // The turn-end path marks the outcome of a held watch (what it will do when that path lands).
    const dir = path.join(home.root, 'profiles', 'holds');
    await new CallsState(dir).update(nowS(), (file) => ({
      file: { ...file, watches: file.watches.map((watch) => ({ ...watch, pending: 'stopped' as const })) },
      result: undefined,
    }));
    expect((await call('PUT', `/calls/watches/${id}?profile=holds`, { hold_s: 60 })).body).toEqual({
      ok: true,
      status: 'ended',
      outcome: 'failed',
    });
    expect((await call('GET', '/calls?profile=holds')).body.watches).toBe(1);
    expect((await call('PUT', `/calls/watches/${id}?profile=holds`, { hold_s: 0 })).body).toMatchObject({
      status: 'ended',
    });
    expect((await call('GET', '/calls?profile=holds')).body.watches).toBe(0);
  });

  it('answers ended when one of the sessions ended within ended_within_s', async () => {
    await callsOn('ended');
    const dir = path.join(home.root, 'profiles', 'ended');
    const endedAt = nowS();
    await new CallsState(dir).update(endedAt, (file) => ({
      file: withTurnEnd(file, 'quick-job', 'done', endedAt),
      result: undefined,
    }));
    clock.advance(90_000);
    expect(
      (await call('POST', '/calls/watches?profile=ended', { session_ids: ['quick-job'], ended_within_s: 120 })).body,
    ).toEqual({
      ok: true,
      status: 'ended',
      outcome: 'done',
    });
    // An earlier turn of the same chat does not count: the window is how long ago the request went out.
    const watching = await call('POST', '/calls/watches?profile=ended', {
      session_ids: ['quick-job'],
      ended_within_s: 60,
    });
    expect(watching.body).toMatchObject({ status: 'watching' });
  });

  it('holds at most 20 watches per profile (429) and lets them expire after 24 hours', async () => {
    await callsOn('limits');
    for (let i = 0; i < 20; i++) {
      clock.advance(3_000); // 20 posts plus the checks stay within 30 a minute
      expect((await call('POST', '/calls/watches?profile=limits', { session_ids: [`job-${i}`] })).status).toBe(200);
    }
    clock.advance(61_000);
    expect(await call('POST', '/calls/watches?profile=limits', { session_ids: ['job-20'] })).toMatchObject({
      status: 429,
      body: { detail: 'Too many jobs are already waiting to call you' },
    });
    expect((await call('GET', '/calls?profile=limits')).body.watches).toBe(20);
    clock.advance(24 * 3600 * 1000);
    expect((await call('GET', '/calls?profile=limits')).body.watches).toBe(0);
    expect((await call('POST', '/calls/watches?profile=limits', { session_ids: ['job-20'] })).status).toBe(200);
  });

  it('never loses a change when many watches are asked for at once', async () => {
    await callsOn('work');
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        call('POST', '/calls/watches?profile=work', { session_ids: [`parallel-${i}`] }),
      ),
    );
    expect(answers.map((answer) => answer.status)).toEqual(Array(12).fill(200));
    const stored = JSON.parse(readFileSync(callsFile(path.join(home.root, 'profiles', 'work')), 'utf8')) as {
      watches: { id: string }[];
    };
    expect(new Set(stored.watches.map((watch) => watch.id))).toEqual(new Set(answers.map((answer) => answer.body.id)));
  });
});

describe('presence and outcomes', () => {
  it('holds presence and releases it; unpaired is 409', async () => {
    expect((await call('PUT', '/calls/presence?profile=holds', { hold_s: 600 })).body).toEqual({
      ok: true,
      status: 'present',
    });
    const dir = path.join(home.root, 'profiles', 'holds');
    expect((await new CallsState(dir).read(nowS())).presence_until).toBe(nowS() + 600);
    expect((await call('PUT', '/calls/presence?profile=holds', { hold_s: 0 })).body).toEqual({
      ok: true,
      status: 'away',
    });
    expect((await new CallsState(dir).read(nowS())).presence_until).toBeNull();
    expect((await call('PUT', '/calls/presence?profile=unpaired', { hold_s: 60 })).status).toBe(409);
    expect((await call('PUT', '/calls/presence?profile=holds', { hold_s: 601 })).status).toBe(400);
    expect((await call('PUT', '/calls/presence?profile=holds', {})).status).toBe(400);
  });

  it('records a declined call once per call id, at most 20 waiting, each for a day', async () => {
    const report = (callId: string, extra: Record<string, unknown> = {}) =>
      call('POST', '/calls/outcomes?profile=outcomes', {
        call_id: callId,
        session_ids: ['chat-1'],
        outcome: 'declined',
        kind: 'done',
        title: 'Build',
        age_s: 720,
        ...extra,
      });
    expect((await report('call_0001')).body).toEqual({ ok: true, status: 'recorded' });
    expect((await report('call_0001', { outcome: 'missed', age_s: 5 })).body).toEqual({ ok: true, status: 'recorded' });
    const dir = path.join(home.root, 'profiles', 'outcomes');
    let state = await new CallsState(dir).read(nowS());
    expect(state.outcomes).toEqual([
      expect.objectContaining({ call_id: 'call_0001', outcome: 'declined', at: nowS() - 720 }),
    ]);
    for (let i = 2; i <= 22; i++) {
      if (i % 10 === 0) clock.advance(61_000);
      await report(`call_${String(i).padStart(4, '0')}`);
    }
    state = await new CallsState(dir).read(nowS());
    expect(state.outcomes.map((outcome) => outcome.call_id)).toHaveLength(20);
    expect(state.outcomes[0]?.call_id).toBe('call_0003');
    clock.advance(24 * 3600 * 1000 + 1000);
    expect((await new CallsState(dir).read(nowS())).outcomes).toEqual([]);
  });

  it.each([
    [{ call_id: 'short', session_ids: [], outcome: 'declined' }, 'call_id must be 8 to 64 letters, digits, - or _'],
    [
      { call_id: 'call_ok_1', session_ids: 'chat', outcome: 'declined' },
      'session_ids must be a list of up to 4 session ids',
    ],
    [{ call_id: 'call_ok_1', session_ids: [], outcome: 'answered' }, 'outcome must be declined or missed'],
    [
      { call_id: 'call_ok_1', session_ids: [], outcome: 'missed', age_s: 86_400 },
      'age_s must be a whole number from 0 to 86399',
    ],
    [
      { call_id: 'call_ok_1', session_ids: [], outcome: 'missed', reason: 'r'.repeat(201) },
      'reason must be text of up to 200 characters',
    ],
  ])('refuses %j with 400', async (body, detail) => {
    expect(await call('POST', '/calls/outcomes?profile=outcomes', body)).toMatchObject({
      status: 400,
      body: { detail },
    });
  });

  it('refuses an unpaired profile (409)', async () => {
    const answer = await call('POST', '/calls/outcomes?profile=unpaired', {
      call_id: 'call_0001',
      session_ids: [],
      outcome: 'missed',
    });
    expect(answer).toMatchObject({ status: 409, body: { detail: "This Hermes profile isn't paired with Conduit" } });
  });
});

describe('authentication', () => {
  it('answers 401 without the dashboard credential on every calls route', async () => {
    for (const [method, route] of [
      ['GET', '/calls'],
      ['PUT', '/calls'],
      ['POST', '/calls/watches'],
      ['PUT', '/calls/watches/0123456789abcdef01234567'],
      ['DELETE', '/calls/watches/0123456789abcdef01234567'],
      ['PUT', '/calls/presence'],
      ['POST', '/calls/outcomes'],
    ] as const) {
      const response = await fetch(host.url + PREFIX + route, { method });
      expect(response.status, `${method} ${route}`).toBe(401);
    }
  });
});
