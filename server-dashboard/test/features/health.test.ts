import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HEALTH_LABEL } from '@conduit/contracts/dashboard/health';
import type { Host } from '../../src/app.js';
import { healthFeature } from '../../src/features/health/index.js';
import { HEALTH_SHAPE, readHealth } from '../../src/features/health/health-reads.js';
import { PhoneDataStore } from '../../src/kernel/phone-data/store.js';
import { ManualClock, TEST_TOKEN, tempHermesHome, testConfig } from '../support/config.js';
import { startHost } from '../support/host.js';
import { PhoneStandIn } from '../support/phone-stand-in.js';

const home = tempHermesHome();
const clock = new ManualClock();
let host: Host & { url: string };
/** The one phone these tests share: a new stand-in would be a new key, which drops its data. */
let iphone: PhoneStandIn;
const fileOf = (profile: string) =>
  path.join(profile === 'default' ? home.root : path.join(home.root, 'profiles', profile), 'conduit-health.sqlite3');
const phone = (deviceId: string, profile?: string) =>
  new PhoneStandIn(host.url, 'health', HEALTH_LABEL, deviceId, profile ? { profile } : {});

function query<T>(sql: string, ...params: unknown[]): T[] {
  const db = new Database(fileOf('default'), { readonly: true, fileMustExist: true });
  try {
    return db.prepare(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}

const DAY = 1_780_000_000 - (1_780_000_000 % 86_400);
const total = (metric: string, value: number, computedAt: number, start = DAY) => ({
  kind: 'total',
  window: 'day',
  metric,
  start,
  value,
  unit: 'count',
  computed_at: computedAt,
});
const workout = (id: string, start = DAY + 3600) => ({
  kind: 'workout',
  id,
  activity: 'running',
  start,
  end: start + 1800,
  energy_kcal: 310,
  distance_m: 5012,
});

beforeAll(async () => {
  host = await startHost(testConfig(home.root, { clock }), { features: [healthFeature] });
  iphone = phone('iphone-1');
});
afterAll(async () => {
  await host.app.close();
  home.cleanup();
});

describe('health', () => {
  it('is listed as the health capability', async () => {
    const response = await fetch(`${host.url}/api/plugins/conduit_push/capabilities`, {
      headers: { authorization: `Bearer ${TEST_TOKEN}` },
    });
    const text = await response.text();
    expect(text).toContain('health');
  });

  it('stores every kind of summary from a sealed batch in conduit-health.sqlite3 (0600)', async () => {
    const device = iphone;
    expect((await device.agree()).status).toBe(200);
    const sent = await device.send({
      v: 1,
      items: [
        total('stepCount', 8042, DAY + 100),
        { ...total('stepCount', 612, DAY + 100, DAY + 7200), window: 'hour' },
        { ...total('heartRate', 61, DAY + 100), stat: 'avg', unit: 'count/min' },
        {
          kind: 'sleep_night',
          night: '2026-05-29',
          start: DAY - 7 * 3600,
          end: DAY + 3600,
          asleep_s: 26_000,
          deep_s: 4000,
          computed_at: DAY + 100,
        },
        { kind: 'sleep_stage', id: 's-1', stage: 'deep', start: DAY - 3600, end: DAY - 1800 },
        workout('w-1'),
        {
          kind: 'sample',
          id: 'hr-1',
          metric: 'heartRate',
          start: DAY + 60,
          end: DAY + 60,
          value: 58,
          unit: 'count/min',
        },
      ],
    });
    expect(sent).toEqual({ status: 200, body: { ok: true, batch_id: 'b-iphone-1-1', stored: 7, ignored: 0 } });
    expect(statSync(fileOf('default')).mode & 0o777).toBe(0o600);
    expect(query('SELECT metric, window, stat, value FROM health_totals ORDER BY window, metric')).toEqual([
      { metric: 'heartRate', window: 'day', stat: 'avg', value: 61 },
      { metric: 'stepCount', window: 'day', stat: 'sum', value: 8042 },
      { metric: 'stepCount', window: 'hour', stat: 'sum', value: 612 },
    ]);
  });

  it('a newer computation of a window replaces the older one; an older one is ignored', async () => {
    const device = iphone;
    expect((await device.send({ v: 1, items: [total('stepCount', 9100, DAY + 500)] })).body).toMatchObject({
      stored: 1,
      ignored: 0,
    });
    expect((await device.send({ v: 1, items: [total('stepCount', 100, DAY + 200)] })).body).toMatchObject({
      stored: 0,
      ignored: 1,
    });
    expect(query("SELECT value FROM health_totals WHERE metric = 'stepCount' AND window = 'day'")).toEqual([
      { value: 9100 },
    ]);
  });

  it('a deleted workout or reading stays deleted', async () => {
    const device = iphone;
    const deleted = await device.send({
      v: 1,
      items: [
        { kind: 'deleted', of: 'workout', id: 'w-1' },
        { kind: 'deleted', of: 'sample', id: 'hr-1' },
      ],
    });
    expect(deleted.status).toBe(200);
    expect(query('SELECT id FROM health_workouts')).toEqual([]);
    expect(query('SELECT id FROM health_samples')).toEqual([]);
    const again = await device.send({ v: 1, items: [workout('w-1'), workout('w-2')] });
    expect(again.body).toMatchObject({ stored: 1, ignored: 1 });
    expect(query<{ id: string }>('SELECT id FROM health_workouts').map((row) => row.id)).toEqual(['w-2']);
  });

  it('refuses a batch with a bad item or more than 6,000 items and stores nothing of it', async () => {
    const device = iphone;
    const before = query('SELECT * FROM health_workouts');
    const bad = await device.send({ v: 1, items: [workout('w-3'), { kind: 'workout', id: 'w-4' }] });
    expect(bad.status).toBe(400);
    const backwards = await device.send({ v: 1, items: [{ ...workout('w-5'), end: DAY }] });
    expect(backwards.status).toBe(400);
    const many = Array.from({ length: 6001 }, (_, i) => ({ kind: 'deleted', of: 'sample', id: `x${i}` }));
    expect((await device.send({ v: 1, items: many })).status).toBe(413);
    expect(query('SELECT * FROM health_workouts')).toEqual(before);
  });

  it('status reports counts and days per device, never values', async () => {
    const status = await iphone.call('GET', 'status');
    expect(status.body).toMatchObject({ ok: true, enabled: true });
    const devices = status.body.devices as Record<string, unknown>[];
    expect(devices).toHaveLength(1);
    expect(devices[0]).toMatchObject({
      device_id: 'iphone-1',
      counts: { totals: 3, sleep_nights: 1, sleep_stages: 1, workouts: 1, samples: 0, deleted: 2 },
      first_day: new Date((DAY - 7 * 3600) * 1000).toISOString().slice(0, 10),
      last_day: new Date(DAY * 1000).toISOString().slice(0, 10),
    });
    expect(JSON.stringify(status.body)).not.toMatch(/9100|8042|26000|running|stepCount/);
  });

  it('wipe deletes one device (rows and file pages) or everything', async () => {
    const second = phone('ipad-2');
    await second.agree();
    await second.send({ v: 1, items: [{ ...workout('w-9'), activity: 'MARKERACTIVITYzz' }] });
    const bytes = () =>
      Buffer.concat(
        ['', '-wal'].map((s) =>
          existsSync(fileOf('default') + s) ? readFileSync(fileOf('default') + s) : Buffer.alloc(0),
        ),
      );
    expect(bytes().includes('MARKERACTIVITYzz')).toBe(true);
    expect((await second.call('POST', 'wipe', { device_id: 'ipad-2' })).body).toEqual({ ok: true, devices: 1 });
    expect(bytes().includes('MARKERACTIVITYzz')).toBe(false);
    expect(query("SELECT * FROM health_workouts WHERE device_id = 'ipad-2'")).toEqual([]);
    expect(query("SELECT id FROM health_workouts WHERE device_id = 'iphone-1'")).toHaveLength(1);

    expect((await second.call('POST', 'wipe', { all: true })).body).toEqual({ ok: true, devices: 1 });
    expect(existsSync(fileOf('default'))).toBe(false);
  });
});

describe('conduit_health reads', () => {
  const workHome = () => path.join(home.root, 'profiles', 'work');
  const nowS = DAY + 20 * 3600;
  const read = (args: unknown, onlyDevice?: string): Record<string, unknown> =>
    readHealth(workHome(), args, {
      nowS,
      via: onlyDevice ? 'Gemini Live call' : 'tool',
      ...(onlyDevice ? { onlyDevice } : {}),
    });

  beforeAll(async () => {
    const mine = phone('watch-phone', 'work');
    const other = phone('other-phone', 'work');
    await mine.agree();
    await other.agree();
    await mine.send({
      v: 1,
      items: [
        total('stepCount', 5000, DAY, DAY - 86_400),
        total('stepCount', 7000, DAY + 100),
        { ...total('stepCount', 300, DAY + 100, DAY + 3600), window: 'hour' },
        {
          kind: 'sleep_night',
          night: '2026-05-29',
          start: DAY - 7 * 3600,
          end: DAY + 3600,
          asleep_s: 25_000,
          computed_at: DAY,
        },
        workout('w-1'),
        {
          kind: 'sample',
          id: 'hr-1',
          metric: 'heartRate',
          start: DAY + 60,
          end: DAY + 60,
          value: 58,
          unit: 'count/min',
        },
      ],
    });
    await other.send({ v: 1, items: [total('stepCount', 123, DAY + 100)] });
  });

  it('answers each action over the window, newest daily totals first in the overview', () => {
    const daily = read({ action: 'daily', metric: 'stepCount', days: 2 });
    expect(daily).toMatchObject({ ok: true, from: new Date((DAY - 86_400) * 1000).toISOString().slice(0, 10) });
    expect((daily as { totals: { value: number }[] }).totals.map((row) => row.value).sort()).toEqual([123, 5000, 7000]);
    expect((read({ action: 'hourly' }) as { totals: unknown[] }).totals).toHaveLength(1);
    expect((read({ action: 'sleep' }) as { nights: { asleep_s: number }[] }).nights).toMatchObject([
      { asleep_s: 25_000 },
    ]);
    expect((read({ action: 'workouts' }) as { workouts: unknown[] }).workouts).toHaveLength(1);
    expect((read({ action: 'samples', metric: 'heartRate' }) as { samples: unknown[] }).samples).toHaveLength(1);
    const overview = read({ action: 'overview', device: 'watch-phone' }) as Record<string, unknown>;
    expect(overview.latest_daily).toMatchObject([{ metric: 'stepCount', value: 7000 }]);
    expect(overview.workouts).toBe(1);
  });

  it('a voice read covers only the asking device', () => {
    const voice = read({ action: 'daily', device: 'watch-phone' }, 'other-phone') as { totals: { value: number }[] };
    expect(voice.totals.map((row) => row.value)).toEqual([123]);
  });

  it('refuses more than 92 days and unknown actions', () => {
    expect(read({ action: 'daily', start_date: '2026-01-01', end_date: '2026-05-01' })).toEqual({
      ok: false,
      error: 'A read covers at most 92 days',
    });
    expect(read({ action: 'daily', days: 93 })).toMatchObject({ ok: false });
    expect(read({ action: 'write' })).toEqual({ ok: false, error: 'action is missing or invalid' });
    expect(readHealth(path.join(home.root, 'nowhere'), { action: 'overview' }, { nowS, via: 'tool' })).toMatchObject({
      ok: false,
    });
  });

  it('logs every read without what it returned', () => {
    const store = PhoneDataStore.open(workHome(), HEALTH_SHAPE, false);
    const log = store?.readsSince(0) ?? [];
    store?.close();
    // Seven reads above; a refused call reads nothing and is not logged.
    expect(log.map((entry) => entry.action)).toEqual([
      'daily',
      'hourly',
      'sleep',
      'workouts',
      'samples',
      'overview',
      'daily',
    ]);
    expect(log).toContainEqual({ at: nowS, deviceId: 'other-phone', action: 'daily', via: 'Gemini Live call' });
  });
});

describe('health limits', () => {
  it('takes 120 uploads a minute per profile, refused ones included, then 429 until the window moves', async () => {
    mkdirSync(path.join(home.root, 'profiles', 'busy'), { recursive: true });
    const device = phone('busy-phone', 'busy');
    await device.agree();
    const statuses: number[] = [];
    for (let i = 0; i < 120; i += 1) {
      statuses.push((await (i % 2 === 0 ? device.send({ v: 1, items: [] }) : device.ingest({ v: 1 }))).status);
    }
    expect(statuses.filter((status) => status === 200)).toHaveLength(60);
    expect((await device.send({ v: 1, items: [] })).status).toBe(429);
    // Another profile has its own window.
    const elsewhere = phone('work-tablet', 'work');
    await elsewhere.agree();
    expect((await elsewhere.send({ v: 1, items: [] })).status).toBe(200);
    clock.advance(60_000);
    expect((await device.send({ v: 1, items: [] })).status).toBe(200);
  });
});
