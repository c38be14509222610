import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PHONE_LABEL } from '@conduit/contracts/dashboard/phone';
import type { Host } from '../../src/app.js';
import { PHONE_SHAPE } from '../../src/features/phone/index.js';
import { PhoneDataStore } from '../../src/kernel/phone-data/store.js';
import { readOrCreateMcpToken } from '../../src/mcp/mcp-token.js';
import { ManualClock, tempHermesHome, testConfig } from '../support/config.js';
import { startHost } from '../support/host.js';
import { callToolAsHermes } from '../support/mcp-client.js';
import { ExchangingPhone, type ExchangeEnvelope } from '../support/phone-exchange-stand-in.js';

/**
 * Pending changes without a paired relay (the nudge is then "unpaired", and nothing depends on it):
 * conduit_calendar's writes queued in conduit-phone.sqlite3, handed to the phone by the sealed POST
 * /phone/exchange and settled there; applied, dismissed and expired (on the manual clock); every bound
 * of the queue and the exchange at its edge; and the voice reads the exchange carries as op "voice".
 */
const home = tempHermesHome();
const START_S = 1_780_000_000 - (1_780_000_000 % 86_400) + 8 * 3600;
const clock = new ManualClock(START_S * 1000);
const dateOf = (unixS: number) => new Date(unixS * 1000).toISOString().slice(0, 10);
/** Today's start (UTC) and tomorrow's date as of each test's start: tests move the clock by days. */
let DAY = 0;
let TOMORROW = '';
const WEEK_S = 7 * 86_400;
const nowS = () => Math.floor(clock.now() / 1000);
let host: Host & { url: string };
let mcpToken: string;
let phone: ExchangingPhone;
let phones = 0;

const sharing = (over: Record<string, unknown> = {}) => ({
  calendars: {
    on: true,
    modes: { 'cal-home': 'read', 'cal-family': 'read', 'cal-add': 'add_only', 'cal-off': 'off' },
    add_without_asking: false,
  },
  reminders: { on: true, modes: { 'list-todo': 'read' } },
  past_days: 1,
  future_days: 14,
  focus: false,
  status: false,
  time_zone: 'Europe/Paris',
  ...over,
});

const batch = (over: Record<string, unknown> = {}) => ({
  v: 1,
  sharing: sharing(),
  calendars: [
    { id: 'cal-home', title: 'Home' },
    { id: 'cal-family', title: 'Family', shared: true },
    { id: 'cal-add', title: 'Inbox' },
    { id: 'cal-off', title: 'Hidden' },
  ],
  events: [
    {
      id: 'dentist',
      calendar_id: 'cal-home',
      title: 'Dentist',
      start: DAY + 86_400 + 36_000,
      end: DAY + 86_400 + 39_600,
    },
  ],
  lists: [{ id: 'list-todo', title: 'To do' }],
  reminders: [{ id: 'call-mum', list_id: 'list-todo', title: 'Call mum', due: DAY + 64_800 }],
  ...over,
});

beforeAll(async () => {
  host = await startHost(testConfig(home.root, { clock }));
  mcpToken = await readOrCreateMcpToken(path.join(home.root, 'conduit-host'));
});
afterAll(async () => {
  await host.app.close();
  home.cleanup();
});

/** Every test starts with an empty store, a fresh phone key and fresh rate windows. */
beforeEach(async () => {
  clock.advance(61_000);
  DAY = nowS() - (nowS() % 86_400);
  TOMORROW = dateOf(DAY + 86_400);
  phone = new ExchangingPhone(host.url, 'phone', PHONE_LABEL, `iphone-${++phones}`);
  expect((await phone.call('POST', 'wipe', { all: true })).status).toBe(200);
  expect((await phone.agree()).status).toBe(200);
  expect((await phone.send(batch())).status).toBe(200);
});

/** The hook first (it signs the calling turn into the arguments), then the tool, as Hermes does. */
async function tool(
  name: string,
  args: Record<string, unknown>,
): Promise<{ error: boolean; body: Record<string, unknown>; text: string }> {
  const from = { session: 'chat-changes', turn: 't-changes', toolCall: 'tc-1' };
  const { isError: error, text } = await callToolAsHermes(host, mcpToken, name, args, from);
  return { error, text, body: error ? {} : (JSON.parse(text) as Record<string, unknown>) };
}

type ModelChange = {
  id: string;
  state: string;
  asks_user: boolean;
  item_id?: string;
  note?: string;
  picked_up: boolean;
};

async function write(args: Record<string, unknown>): Promise<ModelChange> {
  const answer = await tool('conduit_calendar', args);
  expect(answer.error, answer.text).toBe(false);
  return answer.body.change as ModelChange;
}

async function pending(id?: string): Promise<ModelChange[]> {
  const answer = await tool('conduit_calendar', { action: 'pending', ...(id ? { id } : {}) });
  expect(answer.error, answer.text).toBe(false);
  return answer.body.changes as ModelChange[];
}

describe('a pending change', () => {
  it('is queued, handed over sealed on every exchange until settled, and Hermes sees it applied', async () => {
    const queued = await tool('conduit_calendar', {
      action: 'add_event',
      calendar: 'cal-home',
      title: 'Pick up the bike',
      start: `${TOMORROW}T15:00`,
      location: 'Shop',
    });
    expect(queued.error, queued.text).toBe(false);
    expect(queued.body).toMatchObject({
      ok: true,
      action: 'add_event',
      change: { state: 'pending', asks_user: true, device_id: phone.deviceId, picked_up: false },
      // Not paired for notifications: the change does not depend on the nudge.
      phone_notified: false,
    });
    const id = (queued.body.change as ModelChange).id;

    const first = await phone.exchange();
    expect(first).toMatchObject({ more: false, settled: 0 });
    expect(first.changes).toHaveLength(1);
    // 15:00 in Paris (summer time, UTC+2) on the phone's tomorrow; an hour long by default.
    const start = Date.parse(`${TOMORROW}T13:00:00Z`) / 1000;
    expect(first.changes[0]).toEqual({
      id,
      ask: true,
      summary: `Add “Pick up the bike” to Home, ${TOMORROW} 15:00`,
      created_at: nowS(),
      expires_at: nowS() + WEEK_S,
      change: {
        kind: 'add_event',
        calendar_id: 'cal-home',
        title: 'Pick up the bike',
        start,
        end: start + 3600,
        all_day: false,
        location: 'Shop',
      },
    });
    // Not settled yet: handed over again (a lost answer costs nothing).
    expect((await phone.exchange()).changes.map((change) => change.id)).toEqual([id]);
    expect((await pending(id))[0]).toMatchObject({ state: 'pending', picked_up: true });

    const settled = await phone.exchange([{ id, outcome: 'applied', item_id: 'ev-bike' }]);
    expect(settled).toMatchObject({ changes: [], settled: 1 });
    // The first outcome wins; a repeat (a retried exchange) or a later one is ignored.
    expect((await phone.exchange([{ id, outcome: 'dismissed' }])).settled).toBe(0);
    expect(await pending()).toEqual([expect.objectContaining({ id, state: 'applied', item_id: 'ev-bike' })]);
  });

  it('that changes what exists always asks, and is refused (dismissed) on the phone', async () => {
    const update = await write({ action: 'update_event', event: 'dentist', start: `${TOMORROW}T11:00` });
    const remove = await write({ action: 'delete_event', event: 'dentist' });
    const done = await write({ action: 'complete_reminder', reminder: 'call-mum' });
    expect([update, remove, done].map((change) => change.asks_user)).toEqual([true, true, true]);
    const handed = await phone.exchange();
    expect(handed.changes.map((change) => [change.change.kind, change.ask])).toEqual([
      ['update_event', true],
      ['delete_event', true],
      ['complete_reminder', true],
    ]);
    expect(handed.changes[0]?.change).toEqual({
      kind: 'update_event',
      event_id: 'dentist',
      start: Date.parse(`${TOMORROW}T09:00:00Z`) / 1000,
    });

    const answered = await phone.exchange([
      { id: update.id, outcome: 'dismissed', note: 'Keep it at 12' },
      { id: remove.id, outcome: 'failed', note: 'The event was already gone' },
      { id: done.id, outcome: 'edited', item_id: 'call-mum' },
    ]);
    expect(answered).toMatchObject({ settled: 3, changes: [] });
    const states = Object.fromEntries((await pending()).map((change) => [change.id, [change.state, change.note]]));
    expect(states).toEqual({
      [update.id]: ['dismissed', 'Keep it at 12'],
      [remove.id]: ['failed', 'The event was already gone'],
      [done.id]: ['edited', undefined],
    });
  });

  it('is refused for what the phone does not let Hermes change', async () => {
    const refusals = [
      [{ action: 'add_event', calendar: 'cal-off', title: 'x', start: TOMORROW }, 'Calendar cal-off is not one'],
      [{ action: 'add_event', calendar: 'nope', title: 'x', start: TOMORROW }, 'Calendar nope is not one'],
      [{ action: 'update_event', event: 'unknown', title: 'x' }, 'Event unknown is not in'],
      [{ action: 'update_event', event: 'dentist' }, 'at least one field'],
      [{ action: 'add_event', calendar: 'cal-home', title: 'x', start: 'soon' }, 'start is missing or invalid'],
      [
        { action: 'add_event', calendar: 'cal-home', title: 'x', start: `${TOMORROW}T10:00`, end: `${TOMORROW}T09:00` },
        'end is before start',
      ],
      [{ action: 'add_reminder', list: 'list-none', title: 'x' }, 'List list-none is not one'],
      [
        { action: 'add_event', calendar: 'cal-home', title: 'x', start: TOMORROW, device: 'ipad-9' },
        'Device ipad-9 does not share',
      ],
    ] as const;
    for (const [args, text] of refusals) {
      const answer = await tool('conduit_calendar', args);
      expect([args, answer.error, answer.text]).toEqual([args, true, expect.stringContaining(text)]);
    }
    // An add-only calendar takes adds (its events are never read here).
    expect((await write({ action: 'add_event', calendar: 'cal-add', title: 'New', start: TOMORROW })).state).toBe(
      'pending',
    );
    expect((await phone.exchange()).changes[0]?.change).toMatchObject({ kind: 'add_event', all_day: true });
  });

  it('expires after 7 days, is no longer handed over, ignores a late outcome, and is forgotten 7 days later', async () => {
    const change = await write({ action: 'add_reminder', list: 'list-todo', title: 'Water the plants', due: TOMORROW });
    clock.advance((WEEK_S - 1) * 1000);
    expect((await phone.exchange()).changes.map((handed) => handed.id)).toEqual([change.id]);
    clock.advance(1000);
    // At 7 days it is expired: not handed over, and the phone's late outcome is ignored.
    expect(await phone.exchange([{ id: change.id, outcome: 'applied' }])).toMatchObject({ changes: [], settled: 0 });
    expect(await pending(change.id)).toEqual([expect.objectContaining({ id: change.id, state: 'expired' })]);
    clock.advance(WEEK_S * 1000);
    expect(await pending()).toEqual([]);
    const gone = await tool('conduit_calendar', { action: 'pending', id: change.id });
    expect(gone).toMatchObject({ error: true, text: expect.stringContaining('kept 7 days') });
  });

  it('queues at most 50 per profile, hands over at most 64 KiB per answer, and makes room once settled', async () => {
    const notes = 'n'.repeat(2000);
    const ids: string[] = [];
    for (let index = 0; index < 50; index += 1) {
      ids.push(
        (await write({ action: 'add_event', calendar: 'cal-home', title: `Event ${index}`, start: TOMORROW, notes }))
          .id,
      );
    }
    const refused = await tool('conduit_calendar', {
      action: 'add_event',
      calendar: 'cal-home',
      title: 'One more',
      start: TOMORROW,
    });
    expect(refused).toMatchObject({ error: true, text: expect.stringContaining('At most 50 changes can wait') });

    const first = await phone.exchange();
    expect(first.more).toBe(true);
    expect(first.changes.length).toBeGreaterThan(10);
    expect(first.changes.length).toBeLessThan(50);
    expect(Buffer.byteLength(JSON.stringify(first))).toBeLessThanOrEqual(64 * 1024);
    const rest = await phone.exchange(first.changes.map((change) => ({ id: change.id, outcome: 'applied' })));
    expect(rest).toMatchObject({ more: false, settled: first.changes.length });
    expect([...first.changes, ...rest.changes].map((change) => change.id)).toEqual(ids);
    expect((await write({ action: 'add_event', calendar: 'cal-home', title: 'One more', start: TOMORROW })).state).toBe(
      'pending',
    );
  });

  it('goes with its device when the device is wiped', async () => {
    await write({ action: 'delete_event', event: 'dentist' });
    const store = () => PhoneDataStore.open(home.root, PHONE_SHAPE, false);
    const count = () => {
      const opened = store();
      try {
        return (opened?.db.prepare('SELECT COUNT(*) AS n FROM phone_changes').get() as { n: number }).n;
      } finally {
        opened?.close();
      }
    };
    expect(count()).toBe(1);
    const wiped = await phone.call('POST', 'wipe', { device_id: phone.deviceId });
    expect(wiped.body).toMatchObject({ ok: true, devices: 1 });
    expect(count()).toBe(0);
  });
});

describe('POST /phone/exchange', () => {
  const padded = (id: string, bytes: number) => {
    const json = JSON.stringify({ exchange_id: id, results: [] });
    // JSON allows trailing white space: the opened body is exactly `bytes` long.
    return json + ' '.repeat(bytes - json.length);
  };

  it('takes an opened exchange of exactly 64 KiB and refuses one a byte over (413)', async () => {
    const fits = await phone.postExchange(phone.sealExchange('changes', 'x-64k', padded('x-64k', 64 * 1024)));
    expect(fits.status).toBe(200);
    expect(phone.openAnswer(fits.body as unknown as ExchangeEnvelope)).toMatchObject({
      exchange_id: 'x-64k',
      changes: [],
    });
    const over = await phone.postExchange(phone.sealExchange('changes', 'x-over', padded('x-over', 64 * 1024 + 1)));
    expect(over).toEqual({ status: 413, body: { detail: 'The exchange is over 64 KiB' } });
  });

  it('answers 60 exchanges a minute per profile, refused ones included, then 429 until the window moves', async () => {
    // One refused (it does not open) and 59 good ones fill the window.
    const bad = phone.sealExchange('changes', 'x-bad', { exchange_id: 'x-bad', results: [] });
    expect((await phone.postExchange({ ...bad, ct: `A${bad.ct.slice(1)}` })).status).toBe(400);
    for (let index = 0; index < 59; index += 1) await phone.exchange();
    await expect(phone.exchange()).rejects.toThrow(/exchange 429.*at most 60 a minute/);
    clock.advance(60_000);
    expect((await phone.exchange()).changes).toEqual([]);
  });

  it('refuses what does not open for this device, op and id, and an unknown key', async () => {
    const sealed = phone.sealExchange('changes', 'x-1', { exchange_id: 'x-1', results: [] });
    const cases: [unknown, number, string][] = [
      [{ ...sealed, exchange_id: 'x-2' }, 400, 'The exchange does not open with this device key'],
      [{ ...sealed, op: 'voice', call_id: 'x-1' }, 400, 'The exchange does not open with this device key'],
      [{ ...sealed, kid: '0'.repeat(32) }, 412, 'This device has no phone key here; set up a new key'],
      [{ ...sealed, device_id: 'ipad-unknown' }, 412, 'This device has no phone key here; set up a new key'],
      [{ ...sealed, op: 'sync' }, 400, 'op is missing or invalid'],
      ['not json', 400, 'Request body is not JSON'],
      [
        phone.sealExchange('changes', 'x-3', { exchange_id: 'x-4', results: [] }),
        400,
        'Exchange field exchange_id is invalid',
      ],
      [
        phone.sealExchange('changes', 'x-5', { exchange_id: 'x-5', results: [{ id: 'chg_1', outcome: 'applied' }] }),
        400,
        'Exchange field results.0.id is invalid',
      ],
      [phone.sealExchange('changes', 'x-6', '{"exchange_id": "x-6", '), 400, 'The opened exchange is not JSON'],
    ];
    for (const [body, status, detail] of cases) {
      expect(await phone.postExchange(body)).toEqual({ status, body: { detail } });
    }
  });

  it('carries op "voice": the phone tools read for the asking device only, never a write', async () => {
    const other = new ExchangingPhone(host.url, 'phone', PHONE_LABEL, `ipad-${phones}`);
    await other.agree();
    await other.send(
      batch({
        sharing: sharing({ status: true, contacts: true }),
        events: [
          { id: 'other-event', calendar_id: 'cal-home', title: 'Not yours', start: DAY + 86_400, end: DAY + 90_000 },
        ],
        status: { at: nowS(), battery_level: 0.5 },
        contacts: [{ id: 'anna', name: 'Anna', relation: 'sister', phones: [{ number: '+44 20 7946 0000' }] }],
      }),
    );
    const events = await phone.voice('conduit_calendar', { action: 'events', start_date: TOMORROW, days: 1 });
    expect(events.status).toBe(200);
    expect(events.body).toMatchObject({ call_id: expect.stringMatching(/^v-/), result: { ok: true } });
    const ids = ((events.body.result as { events: { id: string }[] }).events ?? []).map((event) => event.id);
    expect(ids).toEqual(['dentist']);

    // The other phone reads its own status and contacts; this one shares neither.
    const contacts = await other.voice('conduit_contacts', { action: 'people', query: 'sister' });
    expect(contacts.body.result).toMatchObject({ ok: true, people: [{ id: 'anna', name: 'Anna' }] });
    const status = await other.voice('conduit_phone', { action: 'status' });
    expect(status.body.result).toMatchObject({ ok: true, phones: [{ device_id: other.deviceId }] });
    expect((await phone.voice('conduit_contacts', { action: 'people' })).body.result).toEqual({
      ok: false,
      error: 'No contacts are shared with this profile',
    });

    // No write in a call, no device argument, no tool the phone does not serve.
    expect(
      await phone.voice('conduit_calendar', { action: 'add_event', calendar: 'cal-home', title: 'x', start: TOMORROW }),
    ).toEqual({
      status: 400,
      body: { detail: 'action is missing or invalid' },
    });
    expect(await phone.voice('conduit_calendar', { action: 'overview', device: other.deviceId })).toEqual({
      status: 400,
      body: { detail: 'device is not an argument of a conduit_calendar voice read' },
    });
    expect(await phone.voice('conduit_health', { action: 'overview' })).toEqual({
      status: 404,
      body: { detail: 'conduit_health is not a voice tool of the phone' },
    });
    // The read is logged as the voice mode's, never with what it returned.
    const opened = PhoneDataStore.open(home.root, PHONE_SHAPE, false);
    try {
      const reads = opened?.readsSince(0) ?? [];
      expect(reads).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ deviceId: phone.deviceId, action: 'events', via: 'Gemini Live call' }),
          expect.objectContaining({ deviceId: other.deviceId, action: 'people', via: 'Gemini Live call' }),
        ]),
      );
    } finally {
      opened?.close();
    }
  });
});
