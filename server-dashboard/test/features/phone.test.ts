import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HEALTH_LABEL } from '@conduit/contracts/dashboard/health';
import { PHONE_LABEL } from '@conduit/contracts/dashboard/phone';
import type { Host } from '../../src/app.js';
import { ManualClock, tempHermesHome, testConfig } from '../support/config.js';
import { startHost } from '../support/host.js';
import { PhoneStandIn } from '../support/phone-stand-in.js';

/**
 * The phone feature's sealed ingest against the real app, with a phone stand-in (node:crypto) that
 * sends what a phone might, including what the user's sharing state forbids: the host keeps only what
 * each batch's own sharing state allows, trims to the shared window, keeps the latest status and Focus
 * only, and refuses tampered, replayed, oversized and wrongly keyed batches without storing anything.
 */
const home = tempHermesHome();
const DAY = 1_780_000_000 - (1_780_000_000 % 86_400);
const NOW = DAY + 12 * 3600;
const clock = new ManualClock(NOW * 1000);
let host: Host & { url: string };
let iphone: PhoneStandIn;
const file = path.join(home.root, 'conduit-phone.sqlite3');

function query<T = Record<string, unknown>>(sql: string, ...params: unknown[]): T[] {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    return db.prepare(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}
const ids = (table: string) => query<{ id: string }>(`SELECT id FROM ${table} ORDER BY id`).map((row) => row.id);

/** What the user chose in Conduit: two calendars and lists readable or add-only, a week ahead, a day back. */
const sharing = (over: Record<string, unknown> = {}) => ({
  calendars: { on: true, modes: { 'cal-home': 'read', 'cal-work': 'add_only', 'cal-off': 'off' } },
  reminders: { on: true, modes: { 'list-todo': 'read', 'list-shop': 'add_only' } },
  include_details: false,
  past_days: 1,
  future_days: 7,
  focus: true,
  status: true,
  time_zone: 'Europe/London',
  ...over,
});

const event = (id: string, calendarId: string, start: number, over: Record<string, unknown> = {}) => ({
  id,
  calendar_id: calendarId,
  title: `Title ${id}`,
  start,
  end: start + 3600,
  location: 'Surgery',
  notes: 'NOTEMARKER door code 1234',
  url: 'https://meet.example/abc',
  attendees: [{ name: 'Anna', email: 'anna@example.com', status: 'accepted' }],
  ...over,
});

const reminder = (id: string, listId: string, over: Record<string, unknown> = {}) => ({
  id,
  list_id: listId,
  title: `Reminder ${id}`,
  notes: 'REMINDERNOTE',
  url: 'https://shop.example/list',
  ...over,
});

beforeAll(async () => {
  host = await startHost(testConfig(home.root, { clock }));
  iphone = new PhoneStandIn(host.url, 'phone', PHONE_LABEL, 'iphone-1');
});
afterAll(async () => {
  await host.app.close();
  home.cleanup();
});

describe('phone sealed ingest', () => {
  it('agrees its own key and creates conduit-phone.sqlite3 with mode 0600', async () => {
    const agreed = await iphone.agree();
    expect(agreed).toMatchObject({ status: 200, body: { ok: true, v: 1, replaced: false } });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    // The phone key is its own: health's store is not created, and health has no key for this device.
    expect(existsSync(path.join(home.root, 'conduit-health.sqlite3'))).toBe(false);
  });

  it('stores only what the sharing state allows, whatever the phone sends', async () => {
    const sent = await iphone.send({
      v: 1,
      sharing: sharing(),
      calendars: [
        { id: 'cal-home', title: 'Home' },
        { id: 'cal-work', title: 'Work', account: 'Exchange' },
        { id: 'cal-off', title: 'Off' },
        { id: 'cal-unnamed', title: 'Unnamed' },
      ],
      events: [
        event('e-home', 'cal-home', NOW + 3600),
        event('e-work', 'cal-work', NOW + 3600),
        event('e-off', 'cal-off', NOW + 3600),
        event('e-unnamed', 'cal-unnamed', NOW + 3600),
        event('e-old', 'cal-home', NOW - 3 * 86_400),
        event('e-far', 'cal-home', NOW + 10 * 86_400),
      ],
      lists: [
        { id: 'list-todo', title: 'To do' },
        { id: 'list-shop', title: 'Shopping' },
      ],
      reminders: [
        reminder('r-todo', 'list-todo', { due: NOW + 7200 }),
        reminder('r-undated', 'list-todo'),
        reminder('r-shop', 'list-shop'),
        reminder('r-done-long-ago', 'list-todo', { completed: true, completed_at: NOW - 5 * 86_400 }),
        reminder('r-far', 'list-todo', { due: NOW + 30 * 86_400 }),
      ],
      focus: { at: NOW, active: true, name: 'Work' },
      status: { at: NOW, battery_level: 0.42, charging: false, low_power: true, carplay: false, network: 'wifi' },
    });
    expect(sent).toEqual({ status: 200, body: { ok: true, batch_id: 'b-iphone-1-1', stored: 9, ignored: 10 } });
    // An add-only calendar is listed, never its events; an off or unnamed one is not kept at all.
    expect(query('SELECT id, mode FROM phone_calendars ORDER BY id')).toEqual([
      { id: 'cal-home', mode: 'read' },
      { id: 'cal-work', mode: 'add_only' },
    ]);
    expect(ids('phone_events')).toEqual(['e-home']);
    expect(ids('phone_reminders')).toEqual(['r-todo', 'r-undated']);
    // Without "Include notes and attendees": no notes, links or attendees (so no attendee emails).
    expect(query('SELECT notes, url, attendees, location FROM phone_events')).toEqual([
      { notes: null, url: null, attendees: null, location: 'Surgery' },
    ]);
    expect(query('SELECT notes, url FROM phone_reminders WHERE notes IS NOT NULL OR url IS NOT NULL')).toEqual([]);
    const bytes = Buffer.concat(
      ['', '-wal'].map((s) => (existsSync(file + s) ? readFileSync(file + s) : Buffer.alloc(0))),
    );
    for (const secret of ['NOTEMARKER', 'anna@example.com', 'REMINDERNOTE', 'meet.example']) {
      expect(bytes.includes(secret)).toBe(false);
    }
  });

  it('keeps notes and attendees only while the user includes them, and drops them when they stop', async () => {
    const withDetails = sharing({ include_details: true });
    await iphone.send({ v: 1, sharing: withDetails, events: [event('e-home', 'cal-home', NOW + 3600)] });
    expect(query<{ notes: string; attendees: string }>('SELECT notes, attendees FROM phone_events')[0]).toEqual({
      notes: 'NOTEMARKER door code 1234',
      attendees: JSON.stringify([{ name: 'Anna', email: 'anna@example.com', status: 'accepted', organizer: false }]),
    });
    // Turned off, the stored details go too, even when the phone still sends them.
    await iphone.send({ v: 1, sharing: sharing(), events: [event('e-home', 'cal-home', NOW + 3600)] });
    expect(query('SELECT notes, url, attendees FROM phone_events')).toEqual([
      { notes: null, url: null, attendees: null },
    ]);
  });

  it('a calendar turned add-only or off loses its stored events, even when the phone keeps sending them', async () => {
    const addOnly = sharing({ calendars: { on: true, modes: { 'cal-home': 'add_only' } } });
    const sent = await iphone.send({ v: 1, sharing: addOnly, events: [event('e-home', 'cal-home', NOW + 3600)] });
    expect(sent.body).toMatchObject({ stored: 0, ignored: 1 });
    expect(ids('phone_events')).toEqual([]);
    expect(query('SELECT id, mode FROM phone_calendars')).toEqual([{ id: 'cal-home', mode: 'add_only' }]);
    // Calendars turned off altogether: the calendars go as well.
    await iphone.send({ v: 1, sharing: sharing({ calendars: { on: false, modes: { 'cal-home': 'read' } } }) });
    expect(ids('phone_calendars')).toEqual([]);
    // And back on: the phone sends them again.
    const back = await iphone.send({
      v: 1,
      sharing: sharing(),
      calendars: [{ id: 'cal-home', title: 'Home' }],
      events: [event('e-home', 'cal-home', NOW + 3600), event('e-tomorrow', 'cal-home', NOW + 86_400)],
    });
    expect(back.body).toMatchObject({ stored: 3, ignored: 0 });
  });

  it('keeps only the shared window: what time moves out of it is trimmed with the next batch', async () => {
    clock.advance(4 * 86_400_000);
    try {
      await iphone.send({ v: 1, sharing: sharing() });
      expect(ids('phone_events')).toEqual([]);
      // An undated open reminder stays; an open one now overdue stays too (only done ones age out).
      expect(ids('phone_reminders')).toEqual(['r-todo', 'r-undated']);
      // A full sync replaces the window's items: stored ones it leaves out are deleted.
      await iphone.send({ v: 1, sharing: sharing(), full: true, reminders: [reminder('r-undated', 'list-todo')] });
      expect(ids('phone_reminders')).toEqual(['r-undated']);
    } finally {
      clock.advance(-4 * 86_400_000);
    }
    await iphone.send({
      v: 1,
      sharing: sharing(),
      events: [event('e-home', 'cal-home', NOW + 3600), event('e-tomorrow', 'cal-home', NOW + 86_400)],
    });
    expect(ids('phone_events')).toEqual(['e-home', 'e-tomorrow']);
  });

  it('keeps the latest status and Focus only, and forgets them as soon as they are turned off', async () => {
    const older = await iphone.send({
      v: 1,
      sharing: sharing(),
      focus: { at: NOW - 60, active: false, name: null },
      status: { at: NOW - 60, battery_level: 0.9 },
    });
    expect(older.body).toMatchObject({ stored: 0, ignored: 2 });
    await iphone.send({ v: 1, sharing: sharing(), status: { at: NOW + 60, battery_level: 0.4, carplay: true } });
    expect(query('SELECT battery_level, carplay, low_power FROM phone_status')).toEqual([
      { battery_level: 0.4, carplay: 1, low_power: null },
    ]);
    const off = await iphone.send({
      v: 1,
      sharing: sharing({ status: false, focus: false }),
      focus: { at: NOW + 120, active: true, name: 'Sleep' },
      status: { at: NOW + 120, battery_level: 0.3 },
    });
    expect(off.body).toMatchObject({ stored: 0, ignored: 2 });
    expect(query('SELECT * FROM phone_status')).toEqual([]);
    expect(query('SELECT * FROM phone_focus')).toEqual([]);
    await iphone.send({ v: 1, sharing: sharing(), focus: { at: NOW + 180, active: true, name: 'Work' } });
    expect(query('SELECT active, name FROM phone_focus')).toEqual([{ active: 1, name: 'Work' }]);
  });

  it('refuses tampered, replayed, oversized and wrongly keyed batches, storing nothing of them', async () => {
    const before = () => JSON.stringify([query('SELECT * FROM phone_events'), query('SELECT * FROM batches')]);
    const snapshot = before();
    const marked = { v: 1, sharing: sharing(), events: [event('e-evil', 'cal-home', NOW + 600)] };

    const tampered = iphone.seal(marked, 'b-tampered');
    const ct = Buffer.from(tampered.ct, 'base64url');
    ct[0] = (ct[0] ?? 0) ^ 1;
    expect((await iphone.ingest({ ...tampered, ct: ct.toString('base64url') })).status).toBe(400);

    const sealed = iphone.seal({ v: 1, sharing: sharing() }, 'b-once');
    expect((await iphone.ingest(sealed)).status).toBe(200);
    const afterOnce = before();
    expect((await iphone.ingest(sealed)).status).toBe(409);
    // The same batch id with other contents is a replay too.
    expect((await iphone.send(marked, 'b-once')).status).toBe(409);

    const many = { v: 1, sharing: sharing(), deleted_events: Array.from({ length: 5001 }, (_, i) => `x${i}`) };
    expect((await iphone.send(many)).status).toBe(413);
    const tooBig = { v: 1, sharing: sharing(), padding: 'x'.repeat(4 * 1024 * 1024 + 1) };
    expect((await iphone.send(tooBig)).status).toBe(413);

    // Another key under this device's id and kid: it does not open.
    const impostor = new PhoneStandIn(host.url, 'phone', PHONE_LABEL, 'iphone-1');
    impostor.hostKey = iphone.hostKey;
    impostor.kid = iphone.kid;
    expect((await impostor.send(marked)).status).toBe(400);
    // Health's key for the same device does not open a phone batch, nor a phone batch under health.
    const healthKey = new PhoneStandIn(host.url, 'health', HEALTH_LABEL, 'iphone-1', { secret: iphone.secret });
    await healthKey.agree();
    const underHealth = healthKey.seal(marked, 'b-cross');
    expect((await iphone.ingest({ ...underHealth, kid: iphone.kid })).status).toBe(400);
    // A device that never agreed a key.
    const stranger = new PhoneStandIn(host.url, 'phone', PHONE_LABEL, 'ipad-9');
    stranger.hostKey = iphone.hostKey;
    stranger.kid = iphone.kid;
    expect((await stranger.send(marked)).status).toBe(412);
    // An opened batch the contract refuses (an event ending before it starts).
    const backwards = { v: 1, sharing: sharing(), events: [event('e-back', 'cal-home', NOW, { end: NOW - 1 })] };
    expect((await iphone.send(backwards)).status).toBe(400);

    expect(before()).toBe(afterOnce);
    expect(afterOnce).not.toBe(snapshot); // only the good batch's id was added
    expect(ids('phone_events')).not.toContain('e-evil');
  });

  it('status reports counts and days per device, never content', async () => {
    const status = await iphone.call('GET', 'status');
    expect(status.body).toMatchObject({ ok: true, enabled: true });
    const devices = status.body.devices as Record<string, unknown>[];
    expect(devices).toHaveLength(1);
    expect(devices[0]).toMatchObject({
      device_id: 'iphone-1',
      counts: { calendars: 1, events: 2, reminder_lists: 2, reminders: 1, focus: 1, status: 0 },
      first_day: new Date((NOW + 3600) * 1000).toISOString().slice(0, 10),
      last_day: new Date((NOW + 86_400) * 1000).toISOString().slice(0, 10),
    });
    expect(JSON.stringify(status.body)).not.toMatch(/Title|Reminder|Home|Work|Surgery/);
  });

  it('wipe deletes one device (rows and file pages) or everything', async () => {
    const second = new PhoneStandIn(host.url, 'phone', PHONE_LABEL, 'ipad-2');
    await second.agree();
    await second.send({
      v: 1,
      sharing: sharing(),
      events: [event('e-ipad', 'cal-home', NOW + 600, { title: 'MARKERTITLEzz' })],
    });
    const bytes = () =>
      Buffer.concat(['', '-wal'].map((s) => (existsSync(file + s) ? readFileSync(file + s) : Buffer.alloc(0))));
    expect(bytes().includes('MARKERTITLEzz')).toBe(true);
    expect((await second.call('POST', 'wipe', { device_id: 'ipad-2' })).body).toEqual({ ok: true, devices: 1 });
    expect(bytes().includes('MARKERTITLEzz')).toBe(false);
    expect(query("SELECT * FROM phone_events WHERE device_id = 'ipad-2'")).toEqual([]);
    expect(query("SELECT * FROM phone_sharing WHERE device_id = 'ipad-2'")).toEqual([]);
    expect(ids('phone_events')).toEqual(['e-home', 'e-tomorrow']);
    // Wiping the phone data leaves health's key alone.
    expect(existsSync(path.join(home.root, 'conduit-health.sqlite3'))).toBe(true);

    expect((await second.call('POST', 'wipe', { all: true })).body).toEqual({ ok: true, devices: 1 });
    expect(existsSync(file)).toBe(false);
    expect(existsSync(path.join(home.root, 'conduit-health.sqlite3'))).toBe(true);
  });
});
