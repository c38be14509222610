import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PHONE_LABEL } from '@conduit/contracts/dashboard/phone';
import type { Host } from '../../src/app.js';
import { readOrCreateMcpToken } from '../../src/mcp/mcp-token.js';
import { ManualClock, tempHermesHome, testConfig } from '../support/config.js';
import { callHook } from '../support/hook-call.js';
import { startHost } from '../support/host.js';
import { callToolAsHermes, listToolNames } from '../support/mcp-client.js';
import { ExchangingPhone } from '../support/phone-exchange-stand-in.js';

/**
 * Contacts and alarms (plugin 0.30) on the phone feature: the people the user picked (200 per device)
 * read with conduit_contacts and deleted here when turned off; the alarms and timers Hermes set (50 per
 * device, pending ones counted) read, set and cancelled through conduit_phone; the sharing rules held
 * even when the phone sends what they forbid; and the "Conduit first" line naming exactly what is shared.
 */
const home = tempHermesHome();
const START_S = 1_780_000_000 - (1_780_000_000 % 86_400) + 8 * 3600;
const clock = new ManualClock(START_S * 1000);
const nowS = () => Math.floor(clock.now() / 1000);
let host: Host & { url: string };
let mcpToken: string;
let phone: ExchangingPhone;
let phones = 0;

const sharing = (over: Record<string, unknown> = {}) => ({
  calendars: { on: false },
  reminders: { on: false },
  past_days: 1,
  future_days: 14,
  focus: false,
  status: false,
  contacts: true,
  alarms: { on: true, add_without_asking: false },
  time_zone: 'Europe/London',
  ...over,
});

const person = (index: number, over: Record<string, unknown> = {}) => ({
  id: `person-${index}`,
  name: `Person ${String(index).padStart(3, '0')}`,
  ...over,
});
const alarm = (index: number) => ({
  id: `alarm-${index}`,
  kind: 'alarm',
  time: '07:00',
  days: ['mon'],
  label: `A${index}`,
});

beforeAll(async () => {
  host = await startHost(testConfig(home.root, { clock }));
  mcpToken = await readOrCreateMcpToken(path.join(home.root, 'conduit-host'));
});
afterAll(async () => {
  await host.app.close();
  home.cleanup();
});
beforeEach(async () => {
  // Fresh rate windows and a fresh store (the "Conduit first" lookup is cached a minute).
  clock.advance(61_000);
  phone = new ExchangingPhone(host.url, 'phone', PHONE_LABEL, `iphone-${++phones}`);
  expect((await phone.call('POST', 'wipe', { all: true })).status).toBe(200);
  expect((await phone.agree()).status).toBe(200);
});

const tools = () => listToolNames(host.url, mcpToken);

async function tool(name: string, args: Record<string, unknown>) {
  const from = { session: 'chat-contacts', turn: 't-contacts', toolCall: 'tc-1' };
  const { isError: error, text } = await callToolAsHermes(host, mcpToken, name, args, from);
  return { error, text, body: error ? {} : (JSON.parse(text) as Record<string, unknown>) };
}

async function conduitFirst(): Promise<unknown> {
  clock.advance(61_000);
  const hooked = await callHook(host.url, host.hookToken, {
    hook_event_name: 'pre_llm_call',
    profile: 'default',
    session_id: 'chat-first',
    extra: { turn_id: `t-first-${nowS()}` },
  });
  return hooked.answer;
}

describe('contacts', () => {
  it('keeps up to 200 per device, refuses 201 (413), and reads them with conduit_contacts', async () => {
    const over = await phone.send({
      v: 1,
      sharing: sharing(),
      contacts: Array.from({ length: 201 }, (_, i) => person(i)),
    });
    expect(over).toEqual({ status: 413, body: { detail: 'A device shares at most 200 contacts' } });
    expect(await tools()).not.toContain('conduit_contacts');

    const people = Array.from({ length: 198 }, (_, i) => person(i));
    const anna = {
      name: 'Anna Berg',
      nickname: 'Annie',
      relation: 'wife',
      phones: [{ label: 'mobile', number: '+46 70 123 45 67' }],
      emails: [{ address: 'anna@example.com' }],
      birthday: '--04-12',
      organization: 'Berg AB',
    };
    people.push(person(900, anna), person(901, { name: 'Dr Lee', relation: 'dentist', birthday: '1970-01-02' }));
    const stored = await phone.send({ v: 1, sharing: sharing(), contacts: people });
    expect(stored).toMatchObject({ status: 200, body: { stored: 200, ignored: 0 } });
    expect(await tools()).toContain('conduit_contacts');

    const all = await tool('conduit_contacts', { action: 'people' });
    expect(all.body).toMatchObject({ ok: true, count: 200 });
    const wife = await tool('conduit_contacts', { action: 'people', query: 'WIFE' });
    // Every field the phone sent comes back, with the device it came from.
    expect(wife.body.people).toEqual([{ device_id: phone.deviceId, id: 'person-900', ...anna }]);
    expect(
      ((await tool('conduit_contacts', { action: 'people', query: '123 45' })).body.people as { id: string }[]).map(
        (p) => p.id,
      ),
    ).toEqual(['person-900']);
    expect((await tool('conduit_contacts', { action: 'people', query: 'nobody' })).body).toMatchObject({
      count: 0,
      people: [],
    });

    const status = await phone.call('GET', 'status');
    expect((status.body.devices as { counts: Record<string, number> }[])[0]?.counts).toMatchObject({ contacts: 200 });
    expect(await conduitFirst()).toEqual({
      context:
        "Conduit: the user's phone shares alarms and timers, contacts with this profile. For that data use the Conduit tool (conduit_phone, conduit_contacts) before other tools, skills or CLIs.",
    });
  });

  it('turned off, are deleted here and never taken, even when the phone sends them', async () => {
    await phone.send({ v: 1, sharing: sharing(), contacts: [person(1), person(2)] });
    const off = await phone.send({
      v: 1,
      sharing: sharing({ contacts: false, alarms: { on: false } }),
      contacts: [person(3)],
    });
    expect(off).toMatchObject({ status: 200, body: { stored: 0, ignored: 1 } });
    const status = await phone.call('GET', 'status');
    expect((status.body.devices as { counts: Record<string, number> }[])[0]?.counts).toMatchObject({ contacts: 0 });
    // No longer offered (MCP lists and serves only what is shared), and no longer named.
    expect(await tools()).not.toContain('conduit_contacts');
    expect(await conduitFirst()).toBeNull();
  });
});

describe('alarms and timers', () => {
  it('keep up to 50 per device, counting those on their way, and refuse the 51st', async () => {
    const over = await phone.send({ v: 1, sharing: sharing(), alarms: Array.from({ length: 51 }, (_, i) => alarm(i)) });
    expect(over).toEqual({ status: 413, body: { detail: 'A device has at most 50 alarms and timers' } });
    expect(
      (await phone.send({ v: 1, sharing: sharing(), alarms: Array.from({ length: 49 }, (_, i) => alarm(i)) })).status,
    ).toBe(200);

    const read = await tool('conduit_phone', { action: 'alarms' });
    expect(read.body).toMatchObject({ ok: true, action: 'alarms' });
    expect(read.body.alarms).toHaveLength(49);
    expect((read.body.alarms as unknown[])[0]).toEqual({
      device_id: phone.deviceId,
      id: 'alarm-0',
      kind: 'alarm',
      label: 'A0',
      time: '07:00',
      days: ['mon'],
      change_id: null,
    });

    // The 50th is a pending timer; the 51st (stored 49 + pending 1) is refused, cancelling still works.
    const timer = await tool('conduit_phone', { action: 'set_timer', seconds: 300, label: 'Tea' });
    expect(timer.body).toMatchObject({
      ok: true,
      change: { kind: 'set_timer', asks_user: true, summary: 'Timer “Tea” for 5 min' },
    });
    const refused = await tool('conduit_phone', { action: 'set_alarm', time: '06:00' });
    expect(refused).toMatchObject({
      error: true,
      text: 'This phone already has 50 alarms and timers from Hermes; cancel one first',
    });
    const cancel = await tool('conduit_phone', { action: 'cancel_alarm', alarm: 'alarm-3' });
    expect(cancel.body).toMatchObject({
      ok: true,
      change: { kind: 'cancel_alarm', asks_user: true, summary: 'Cancel alarm “A3”' },
    });

    // The phone sets the timer (now reported as on) and cancels the alarm: still 49 + the timer = 50.
    const handed = await phone.exchange();
    expect(handed.changes.map((change) => change.change)).toEqual([
      { kind: 'set_timer', seconds: 300, label: 'Tea' },
      { kind: 'cancel_alarm', alarm_id: 'alarm-3' },
    ]);
    const [setTimer, cancelled] = handed.changes;
    await phone.exchange([
      { id: setTimer?.id ?? '', outcome: 'applied', item_id: 'timer-1' },
      { id: cancelled?.id ?? '', outcome: 'applied' },
    ]);
    const left = Array.from({ length: 49 }, (_, i) => alarm(i)).filter((a) => a.id !== 'alarm-3');
    await phone.send({
      v: 1,
      sharing: sharing(),
      alarms: [
        ...left,
        { id: 'timer-1', kind: 'timer', at: nowS() + 300, seconds: 300, label: 'Tea', change_id: setTimer?.id },
      ],
    });
    const now = await tool('conduit_phone', { action: 'alarms' });
    expect(now.body.alarms).toHaveLength(49);
    expect(
      (await tool('conduit_phone', { action: 'set_alarm', time: '06:00', days: ['sat', 'sun'] })).body,
    ).toMatchObject({
      ok: true,
      change: { summary: 'Alarm at 06:00 on sat, sun' },
    });
    expect((await tool('conduit_phone', { action: 'set_timer', seconds: 60 })).error).toBe(true);
    // A timer that has rung is no longer on.
    clock.advance(301_000);
    expect((await tool('conduit_phone', { action: 'alarms' })).body.alarms).toHaveLength(48);
  });

  it('take a batch of exactly 50, after which only cancelling is taken', async () => {
    const full = await phone.send({ v: 1, sharing: sharing(), alarms: Array.from({ length: 50 }, (_, i) => alarm(i)) });
    expect(full).toMatchObject({ status: 200, body: { stored: 50, ignored: 0 } });
    expect(await tool('conduit_phone', { action: 'set_timer', seconds: 60 })).toMatchObject({
      error: true,
      text: 'This phone already has 50 alarms and timers from Hermes; cancel one first',
    });
    expect((await tool('conduit_phone', { action: 'cancel_alarm', alarm: 'alarm-49' })).error).toBe(false);
  });

  it('check what a set_alarm names, and go away with the switch', async () => {
    await phone.send({ v: 1, sharing: sharing(), alarms: [alarm(1)] });
    const refusals: [Record<string, unknown>, string][] = [
      [{ action: 'set_alarm' }, 'set_alarm needs either at or time (HH:MM)'],
      [{ action: 'set_alarm', at: '2030-01-01T07:00', time: '07:00' }, 'set_alarm needs either at or time (HH:MM)'],
      [{ action: 'set_alarm', at: '2020-01-01T07:00' }, 'at is in the past'],
      [{ action: 'set_alarm', time: '25:00' }, 'time is missing or invalid'],
      [{ action: 'set_alarm', time: '07:00', days: ['someday'] }, 'days'],
      [
        { action: 'cancel_alarm', alarm: 'alarm-9' },
        'Alarm alarm-9 is not one Hermes set on this phone; read alarms for ids',
      ],
    ];
    for (const [args, text] of refusals) {
      expect([args, await tool('conduit_phone', args)]).toEqual([
        args,
        expect.objectContaining({ error: true, text: expect.stringContaining(text) }),
      ]);
    }
    // A one-off alarm in the phone's local time (London, summer: UTC+1).
    const date = new Date((nowS() + 86_400) * 1000).toISOString().slice(0, 10);
    const oneOff = await tool('conduit_phone', { action: 'set_alarm', at: `${date}T06:30`, label: 'Train' });
    expect(oneOff.body).toMatchObject({ change: { summary: `Alarm “Train” at ${date} 06:30` } });
    expect((await phone.exchange()).changes[0]?.change).toEqual({
      kind: 'set_alarm',
      at: Date.parse(`${date}T05:30:00Z`) / 1000,
      label: 'Train',
    });

    // Off: the alarms go, none can be set, and conduit_phone (nothing else shared) is no longer offered.
    expect(await tools()).toContain('conduit_phone');
    await phone.send({ v: 1, sharing: sharing({ alarms: { on: false }, contacts: false }), alarms: [alarm(2)] });
    expect(await tools()).not.toContain('conduit_phone');
    expect(await tool('conduit_phone', { action: 'set_timer', seconds: 60 })).toMatchObject({ error: true });
    const status = await phone.call('GET', 'status');
    expect((status.body.devices as { counts: Record<string, number> }[])[0]?.counts).toMatchObject({ alarms: 0 });
  });

  it('are named with the status in the "Conduit first" line when both are shared', async () => {
    await phone.send({
      v: 1,
      sharing: sharing({ status: true, contacts: false }),
      status: { at: nowS(), battery_level: 0.4 },
    });
    expect(await conduitFirst()).toEqual({
      context:
        "Conduit: the user's phone shares phone status, Focus, alarms and timers with this profile. For that data use the Conduit tool (conduit_phone) before other tools, skills or CLIs.",
    });
  });
});

describe('sharing rules', () => {
  it('that forbid calendars hold even when the phone sends them, for the copy and for writes', async () => {
    const forbidden = await phone.send({
      v: 1,
      sharing: sharing({
        calendars: { on: true, modes: { 'cal-home': 'read', 'cal-off': 'off' }, add_without_asking: true },
        reminders: { on: false },
        contacts: false,
      }),
      calendars: [
        { id: 'cal-home', title: 'Home' },
        { id: 'cal-off', title: 'Private' },
      ],
      events: [
        { id: 'mine', calendar_id: 'cal-home', title: 'Mine', start: nowS() + 3600, end: nowS() + 7200 },
        { id: 'private', calendar_id: 'cal-off', title: 'Private', start: nowS() + 3600, end: nowS() + 7200 },
      ],
      lists: [{ id: 'list-x', title: 'X' }],
      reminders: [{ id: 'r1', list_id: 'list-x', title: 'Hidden reminder' }],
    });
    // Kept: Home and its event. Not: the off calendar, its event, and the list and reminder (reminders off).
    expect(forbidden).toMatchObject({ status: 200, body: { stored: 2, ignored: 4 } });
    const events = await tool('conduit_calendar', { action: 'events' });
    expect((events.body.events as { id: string }[]).map((event) => event.id)).toEqual(['mine']);
    for (const args of [
      { action: 'add_event', calendar: 'cal-off', title: 'x', start: '2030-01-01' },
      { action: 'delete_event', event: 'private' },
      { action: 'add_reminder', list: 'list-x', title: 'x' },
    ]) {
      expect([args, (await tool('conduit_calendar', args)).error]).toEqual([args, true]);
    }
    // Calendars off (reminders still on, so the tool stays): the events the phone still sends are not
    // kept, what was kept goes, and nothing can be added.
    const off = await phone.send({
      v: 1,
      sharing: sharing({ calendars: { on: false }, reminders: { on: true, modes: {} }, contacts: false }),
      events: [{ id: 'mine', calendar_id: 'cal-home', title: 'Mine', start: nowS() + 3600, end: nowS() + 7200 }],
    });
    expect(off).toMatchObject({ status: 200, body: { stored: 0, ignored: 1 } });
    const status = await phone.call('GET', 'status');
    expect((status.body.devices as { counts: Record<string, number> }[])[0]?.counts).toMatchObject({
      calendars: 0,
      events: 0,
    });
    expect(
      await tool('conduit_calendar', { action: 'add_event', calendar: 'cal-home', title: 'x', start: '2030-01-01' }),
    ).toMatchObject({
      error: true,
      text: 'No phone shares calendars with this profile',
    });
  });
});
