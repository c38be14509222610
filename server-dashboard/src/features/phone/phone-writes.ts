import {
  calendarWriteArgs,
  PHONE_LIMITS,
  phoneAlarm,
  phoneWriteArgs,
  type CalendarWriteArgs,
  type PhoneChangeAction,
  type PhoneSharing,
  type PhoneWriteArgs,
} from '@conduit/contracts/dashboard/phone';
import type { z } from 'zod';
import { PhoneDataStore } from '../../kernel/phone-data/store.js';
import {
  expireChanges,
  listChanges,
  pendingCount,
  pendingOfKinds,
  queueChange,
  type StoredChange,
} from './phone-changes.js';
import { dayStart, iso, localTime, offsetS } from './phone-reads.js';
import { applySharing, PHONE_SHAPE, storedSharing } from './phone-store.js';

/**
 * The write actions of conduit_calendar and conduit_phone: each is checked against what the target
 * phone shares and lets Hermes do, then kept as a pending change (phone-changes.ts). Whether the phone
 * asks the user follows the seed: updates, deletes, completions and cancels always ask; an add asks
 * unless the user lets Hermes add without asking for that kind, and an add to a shared calendar or
 * list always asks. Nothing here writes the stored copy: the phone's next batch shows what it applied.
 */

export type WriteOutcome = { ok: true; change: StoredChange } | { ok: false; error: string };

const refuse = (error: string): WriteOutcome => ({ ok: false, error });

function firstIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  const field = issue?.path.join('.');
  if (issue?.code === 'invalid_union' && field === '') return 'action is missing or invalid';
  return `${field || 'arguments'} is missing or invalid`;
}

/** A model's time in Unix seconds: local times are the phone's (`timeZone`), or UTC without one. */
export function unixOf(value: string, timeZone: string | undefined): number | null {
  if (value.length === 10) {
    const start = dayStart(value, timeZone);
    return Number.isFinite(start) ? start : null;
  }
  if (/(Z|[+-]\d{2}:\d{2})$/.test(value)) {
    const ms = Date.parse(value);
    return Number.isFinite(ms) ? Math.floor(ms / 1000) : null;
  }
  const asUtc = Date.parse(`${value}Z`) / 1000;
  if (!Number.isFinite(asUtc)) return null;
  // The offset at the guessed instant, then again at the corrected one (a DST change between them).
  const first = asUtc - offsetS(asUtc, timeZone);
  return Math.floor(asUtc - offsetS(first, timeZone));
}

/** `YYYY-MM-DD HH:MM` in the phone's time zone, or in UTC (said so) when the phone sent none. */
const when = (unixS: number, timeZone: string | undefined) =>
  localTime(unixS, timeZone) ?? `${iso(unixS).slice(0, 16).replace('T', ' ')} UTC`;
const quoted = (text: string) => `“${text.length > 80 ? `${text.slice(0, 79)}…` : text}”`;
const line = (text: string) => (text.length > 300 ? `${text.slice(0, 299)}…` : text);

function duration(seconds: number): string {
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  return [h ? `${h} h` : '', m ? `${m} min` : '', s ? `${s} s` : ''].filter(Boolean).join(' ');
}

interface Target {
  deviceId: string;
  sharing: PhoneSharing;
}

/**
 * The device a change is for: the one named, or the most recently synced device that shares what the
 * change touches (held to its sharing state as of now), or a refusal naming why there is none.
 */
function targetDevice(
  store: PhoneDataStore,
  named: string | undefined,
  shares: (sharing: PhoneSharing) => boolean,
  what: string,
  nowS: number,
): Target | string {
  const candidates = store
    .devices()
    .filter((device) => named === undefined || device.device_id === named)
    .flatMap((device) => {
      const sharing = storedSharing(store, device.device_id);
      if (!sharing || !shares(sharing)) return [];
      applySharing(store, device.device_id, sharing, nowS);
      return [{ deviceId: device.device_id, sharing, last: device.last_batch_at ?? 0 }];
    })
    .sort((a, b) => b.last - a.last);
  const chosen = candidates[0];
  if (!chosen) {
    return named === undefined
      ? `No phone shares ${what} with this profile`
      : `Device ${named} does not share ${what} with this profile`;
  }
  return { deviceId: chosen.deviceId, sharing: chosen.sharing };
}

interface SourceRow {
  title: string;
  shared: number;
  mode: string;
}

interface CalendarWrite {
  deviceId: string;
  ask: boolean;
  summary: string;
  change: PhoneChangeAction;
}

/** An event or reminder change for `target`, or a refusal. */
function calendarChange(
  store: PhoneDataStore,
  args: Exclude<CalendarWriteArgs, { action: 'pending' }>,
  nowS: number,
): CalendarWrite | string {
  const isEvent = args.action.endsWith('_event');
  const target = targetDevice(
    store,
    args.device,
    isEvent ? (sharing) => sharing.calendars.on : (sharing) => sharing.reminders.on,
    isEvent ? 'calendars' : 'reminders',
    nowS,
  );
  if (typeof target === 'string') return target;
  const { deviceId, sharing } = target;
  const tz = sharing.time_zone;
  const source = (table: 'phone_calendars' | 'phone_reminder_lists', id: string) =>
    store.db
      .prepare(`SELECT title, shared, mode FROM ${table} WHERE device_id = ? AND id = ? AND mode != 'off'`)
      .get(deviceId, id) as SourceRow | undefined;
  const stored = (table: 'phone_events' | 'phone_reminders', id: string) =>
    store.db.prepare(`SELECT * FROM ${table} WHERE device_id = ? AND id = ?`).get(deviceId, id) as
      { title: string; start?: number; all_day?: number } | undefined;
  const time = (value: string | undefined, name: string): number | null | string => {
    if (value === undefined) return null;
    return unixOf(value, tz) ?? `${name} is not a date or time`;
  };

  switch (args.action) {
    case 'add_event': {
      const calendar = source('phone_calendars', args.calendar);
      if (!calendar)
        return `Calendar ${args.calendar} is not one this phone lets Hermes add to; read calendars for ids`;
      const allDay = args.all_day ?? args.start.length === 10;
      const start = time(allDay ? args.start.slice(0, 10) : args.start, 'start');
      const end = time(args.end !== undefined && allDay ? args.end.slice(0, 10) : args.end, 'end');
      if (typeof start === 'string') return start;
      if (typeof end === 'string') return end;
      if (start === null) return 'start is missing or invalid';
      // An all-day event's end is the day after its last day; a timed one lasts an hour by default.
      const endS = allDay ? (end ?? start) + 86_400 : (end ?? start + 3600);
      if (endS < start) return 'end is before start';
      return {
        deviceId,
        // A shared calendar's other members see the event at once, so the user always says yes to it.
        ask: !sharing.calendars.add_without_asking || calendar.shared === 1,
        summary: line(
          `Add ${quoted(args.title)} to ${calendar.title}, ${allDay ? when(start, tz).slice(0, 10) : when(start, tz)}`,
        ),
        change: {
          kind: 'add_event',
          calendar_id: args.calendar,
          title: args.title,
          start,
          end: endS,
          all_day: allDay,
          ...(args.location !== undefined ? { location: args.location } : {}),
          ...(args.notes !== undefined ? { notes: args.notes } : {}),
        },
      };
    }
    case 'update_event': {
      const event = stored('phone_events', args.event);
      if (!event) return `Event ${args.event} is not in this phone's shared calendars; read events for ids`;
      const start = time(args.start, 'start');
      const end = time(args.end, 'end');
      if (typeof start === 'string') return start;
      if (typeof end === 'string') return end;
      const fields = {
        ...(args.title !== undefined ? { title: args.title } : {}),
        ...(start !== null ? { start } : {}),
        ...(end !== null ? { end } : {}),
        ...(args.all_day !== undefined ? { all_day: args.all_day } : {}),
        ...(args.location !== undefined ? { location: args.location } : {}),
        ...(args.notes !== undefined ? { notes: args.notes } : {}),
      };
      if (Object.keys(fields).length === 0) return 'update_event needs at least one field to change';
      return {
        deviceId,
        ask: true,
        summary: line(
          `Change ${quoted(event.title)}: ${Object.keys(fields).join(', ')}` +
            (start !== null ? ` (starts ${when(start, tz)})` : ''),
        ),
        change: { kind: 'update_event', event_id: args.event, ...fields },
      };
    }
    case 'delete_event': {
      const event = stored('phone_events', args.event);
      if (!event) return `Event ${args.event} is not in this phone's shared calendars; read events for ids`;
      return {
        deviceId,
        ask: true,
        summary: line(`Delete ${quoted(event.title)}, ${when(event.start ?? nowS, tz)}`),
        change: { kind: 'delete_event', event_id: args.event },
      };
    }
    case 'add_reminder': {
      const list = source('phone_reminder_lists', args.list);
      if (!list) return `List ${args.list} is not one this phone lets Hermes add to; read calendars for ids`;
      const due = time(args.due, 'due');
      if (typeof due === 'string') return due;
      const dueAllDay = args.due !== undefined && args.due.length === 10;
      return {
        deviceId,
        ask: !sharing.reminders.add_without_asking || list.shared === 1,
        summary: line(
          `Remind: ${quoted(args.title)} in ${list.title}` +
            (due !== null ? `, due ${dueAllDay ? when(due, tz).slice(0, 10) : when(due, tz)}` : ''),
        ),
        change: {
          kind: 'add_reminder',
          list_id: args.list,
          title: args.title,
          ...(due !== null ? { due } : {}),
          due_all_day: dueAllDay,
          ...(args.priority !== undefined ? { priority: args.priority } : {}),
          ...(args.notes !== undefined ? { notes: args.notes } : {}),
        },
      };
    }
    case 'update_reminder': {
      const reminder = stored('phone_reminders', args.reminder);
      if (!reminder) return `Reminder ${args.reminder} is not in this phone's shared lists; read reminders for ids`;
      const due = time(args.due, 'due');
      if (typeof due === 'string') return due;
      const fields = {
        ...(args.title !== undefined ? { title: args.title } : {}),
        ...(due !== null ? { due, due_all_day: args.due?.length === 10 } : {}),
        ...(args.priority !== undefined ? { priority: args.priority } : {}),
        ...(args.notes !== undefined ? { notes: args.notes } : {}),
      };
      if (Object.keys(fields).length === 0) return 'update_reminder needs at least one field to change';
      return {
        deviceId,
        ask: true,
        summary: line(`Change reminder ${quoted(reminder.title)}: ${Object.keys(fields).join(', ')}`),
        change: { kind: 'update_reminder', reminder_id: args.reminder, ...fields },
      };
    }
    case 'complete_reminder': {
      const reminder = stored('phone_reminders', args.reminder);
      if (!reminder) return `Reminder ${args.reminder} is not in this phone's shared lists; read reminders for ids`;
      return {
        deviceId,
        ask: true,
        summary: line(`Mark ${quoted(reminder.title)} done`),
        change: { kind: 'complete_reminder', reminder_id: args.reminder },
      };
    }
  }
}

/** An alarm or timer change, or a refusal. */
function alarmChange(store: PhoneDataStore, args: PhoneWriteArgs, nowS: number): CalendarWrite | string {
  const target = targetDevice(store, args.device, (sharing) => sharing.alarms.on, 'alarms and timers', nowS);
  if (typeof target === 'string') return target;
  const { deviceId, sharing } = target;
  const tz = sharing.time_zone;
  const label = 'label' in args && args.label !== undefined ? ` ${quoted(args.label)}` : '';
  const storedAlarms = () =>
    (store.db.prepare('SELECT COUNT(*) AS n FROM phone_alarms WHERE device_id = ?').get(deviceId) as { n: number }).n;
  if (args.action !== 'cancel_alarm') {
    // The seed's 50 per device counts those the phone reports on and those still on their way.
    if (storedAlarms() + pendingOfKinds(store, deviceId, ['set_alarm', 'set_timer']) >= PHONE_LIMITS.alarmsPerDevice) {
      return `This phone already has ${PHONE_LIMITS.alarmsPerDevice} alarms and timers from Hermes; cancel one first`;
    }
  }
  const ask = !sharing.alarms.add_without_asking;
  switch (args.action) {
    case 'set_alarm': {
      if ((args.at === undefined) === (args.time === undefined)) return 'set_alarm needs either at or time (HH:MM)';
      if (args.days !== undefined && args.time === undefined) return 'days go with time (HH:MM), not with at';
      if (args.at !== undefined) {
        const at = args.at.length === 10 ? null : unixOf(args.at, tz);
        if (at === null) return 'at is not a date and time';
        if (at <= nowS) return 'at is in the past';
        return {
          deviceId,
          ask,
          summary: line(`Alarm${label} at ${when(at, tz)}`),
          change: { kind: 'set_alarm', at, ...(args.label !== undefined ? { label: args.label } : {}) },
        };
      }
      const days = args.days ? [...new Set(args.days)] : undefined;
      return {
        deviceId,
        ask,
        summary: line(`Alarm${label} at ${args.time ?? ''}${days ? ` on ${days.join(', ')}` : ''}`),
        change: {
          kind: 'set_alarm',
          ...(args.time !== undefined ? { time: args.time } : {}),
          ...(days ? { days } : {}),
          ...(args.label !== undefined ? { label: args.label } : {}),
        },
      };
    }
    case 'set_timer':
      return {
        deviceId,
        ask,
        summary: line(`Timer${label} for ${duration(args.seconds)}`),
        change: {
          kind: 'set_timer',
          seconds: args.seconds,
          ...(args.label !== undefined ? { label: args.label } : {}),
        },
      };
    case 'cancel_alarm': {
      const row = store.db
        .prepare('SELECT alarm FROM phone_alarms WHERE device_id = ? AND id = ?')
        .get(deviceId, args.alarm) as { alarm: string } | undefined;
      if (!row) return `Alarm ${args.alarm} is not one Hermes set on this phone; read alarms for ids`;
      const alarm = phoneAlarm.parse(JSON.parse(row.alarm));
      const named = alarm.label !== undefined ? ` ${quoted(alarm.label)}` : '';
      return {
        deviceId,
        ask: true,
        summary: line(`Cancel ${alarm.kind}${named}`),
        change: { kind: 'cancel_alarm', alarm_id: args.alarm },
      };
    }
  }
}

/** Keeps `write` when the profile's queue has room; runs in one transaction with the checks. */
function keep(store: PhoneDataStore, write: CalendarWrite | string, nowS: number): WriteOutcome {
  if (typeof write === 'string') return refuse(write);
  if (pendingCount(store) >= PHONE_LIMITS.pendingChangesPerProfile) {
    return refuse(
      `At most ${PHONE_LIMITS.pendingChangesPerProfile} changes can wait for the phone; ` +
        'check pending and try again once the phone has taken some',
    );
  }
  return { ok: true, change: queueChange(store, write, nowS) };
}

function withChanges<T>(home: string, work: (store: PhoneDataStore) => T, none: T): T {
  const store = PhoneDataStore.open(home, PHONE_SHAPE, false);
  if (store === null) return none;
  try {
    return store.db.transaction(() => work(store))();
  } finally {
    store.close();
  }
}

/** A conduit_calendar write (not `pending`) as a queued change, or why not. */
export function proposeCalendarChange(home: string, rawArgs: unknown, nowS: number): WriteOutcome {
  const parsed = calendarWriteArgs.safeParse(rawArgs);
  if (!parsed.success) return refuse(firstIssue(parsed.error));
  const args = parsed.data;
  if (args.action === 'pending') return refuse('pending is a read of the changes, not a change');
  return withChanges(
    home,
    (store) => {
      expireChanges(store, nowS);
      return keep(store, calendarChange(store, args, nowS), nowS);
    },
    refuse('No phone shares calendars or reminders with this profile'),
  );
}

/** A conduit_phone set_alarm, set_timer or cancel_alarm as a queued change, or why not. */
export function proposeAlarmChange(home: string, rawArgs: unknown, nowS: number): WriteOutcome {
  const parsed = phoneWriteArgs.safeParse(rawArgs);
  if (!parsed.success) return refuse(firstIssue(parsed.error));
  return withChanges(
    home,
    (store) => {
      expireChanges(store, nowS);
      return keep(store, alarmChange(store, parsed.data, nowS), nowS);
    },
    refuse('No phone shares alarms and timers with this profile'),
  );
}

/** A change as Hermes reads it: what, for which device, and how it went. */
export function changeForModel(change: StoredChange) {
  return {
    id: change.id,
    kind: change.kind,
    summary: change.summary,
    device_id: change.deviceId,
    state: change.state,
    asks_user: change.ask,
    created_at: iso(change.createdAt),
    expires_at: iso(change.expiresAt),
    picked_up: change.deliveredAt !== null,
    ...(change.settledAt !== null ? { settled_at: iso(change.settledAt) } : {}),
    ...(change.itemId !== null ? { item_id: change.itemId } : {}),
    ...(change.note !== null ? { note: change.note } : {}),
  };
}

/** conduit_calendar `pending`: the changes of the last 7 days (any kind), or the one named. */
export function readPending(
  home: string,
  rawArgs: unknown,
  nowS: number,
): { ok: true; [key: string]: unknown } | { ok: false; error: string } {
  const parsed = calendarWriteArgs.safeParse(rawArgs);
  if (!parsed.success || parsed.data.action !== 'pending') {
    return { ok: false, error: parsed.success ? 'action is missing or invalid' : firstIssue(parsed.error) };
  }
  const id = parsed.data.id;
  const changes = withChanges(
    home,
    (store) => {
      expireChanges(store, nowS);
      return listChanges(store, id);
    },
    [],
  );
  if (id !== undefined && changes.length === 0)
    return { ok: false, error: `No change ${id} (changes are kept 7 days)` };
  return {
    ok: true,
    action: 'pending',
    waiting: changes.filter((change) => change.state === 'pending').length,
    changes: changes.map(changeForModel),
  };
}
