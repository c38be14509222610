import {
  calendarReadArgs,
  contactsReadArgs,
  phoneAlarm,
  phoneContact,
  phoneReadArgs,
  type PhoneSharing,
} from '@conduit/contracts/dashboard/phone';
import type { z } from 'zod';
import { PhoneDataStore } from '../../kernel/phone-data/store.js';
import { applySharing, PHONE_SHAPE, storedSharing } from './phone-store.js';

/**
 * The read handlers of `conduit_calendar` (overview, calendars, events, free_busy, next, reminders)
 * and `conduit_phone` (status): plain functions the MCP tools and the voice reads both call. Each read
 * first holds the store to the devices' sharing state (the window moves with time), says how fresh the
 * copy is ("as of" the device's last sync), and is logged (action, device, who; never what it returned).
 */

export type CalendarReadArgs = z.output<typeof calendarReadArgs>;
export type PhoneReadArgs = z.output<typeof phoneReadArgs>;

export interface PhoneReadContext {
  nowS: number;
  /** `tool`, or the voice mode that read (`Gemini Live call`). */
  via: string;
  /** A voice read: only this device's data, whatever the arguments say. */
  onlyDevice?: string;
}

export type PhoneReadResult = { ok: true; [key: string]: unknown } | { ok: false; error: string };

/** Rows one answer carries at most: two months of a busy calendar still fit in a model's context. */
const ROWS_PER_READ = 500;
const DAY_S = 86_400;

export const iso = (unixS: number) => new Date(unixS * 1000).toISOString().replace('.000Z', 'Z');

/** `YYYY-MM-DD HH:MM` in `timeZone` (the phone's), or null without one or for one Intl does not know. */
export function localTime(unixS: number, timeZone: string | undefined): string | null {
  if (!timeZone) return null;
  try {
    return new Date(unixS * 1000).toLocaleString('sv-SE', { timeZone, hour12: false }).slice(0, 16);
  } catch {
    return null;
  }
}

/** Seconds `timeZone` is ahead of UTC at `unixS` (0 for none or an unknown zone). */
export function offsetS(unixS: number, timeZone: string | undefined): number {
  const local = localTime(unixS, timeZone);
  return local === null ? 0 : Date.parse(`${local.replace(' ', 'T')}:00Z`) / 1000 - (unixS - (unixS % 60));
}

/** The Unix seconds a local day starts in `timeZone` (UTC without one). */
export function dayStart(date: string, timeZone: string | undefined): number {
  const utc = Date.parse(`${date}T00:00:00Z`) / 1000;
  return utc - offsetS(utc, timeZone);
}

const todayIn = (nowS: number, timeZone: string | undefined) =>
  new Date((nowS + offsetS(nowS, timeZone)) * 1000).toISOString().slice(0, 10);

interface SharingDevice {
  deviceId: string;
  sharing: PhoneSharing;
  lastBatchAt: number | null;
}

/** The devices that share (per `shares`) with their sharing state, held to it as of now. */
function sharingDevices(
  store: PhoneDataStore,
  nowS: number,
  shares: (sharing: PhoneSharing) => boolean,
  only: string | null,
): SharingDevice[] {
  return store.devices().flatMap((device) => {
    if (only !== null && device.device_id !== only) return [];
    const sharing = storedSharing(store, device.device_id);
    if (!sharing || !shares(sharing)) return [];
    applySharing(store, device.device_id, sharing, nowS);
    return [{ deviceId: device.device_id, sharing, lastBatchAt: device.last_batch_at }];
  });
}

export const sharesCalendar = (sharing: PhoneSharing) => sharing.calendars.on || sharing.reminders.on;
export const sharesStatus = (sharing: PhoneSharing) => sharing.status || sharing.focus;
export const sharesAlarms = (sharing: PhoneSharing) => sharing.alarms.on;
/** conduit_phone reads status and Focus, and alarms: offered when a phone shares either. */
export const sharesPhone = (sharing: PhoneSharing) => sharesStatus(sharing) || sharesAlarms(sharing);
export const sharesContacts = (sharing: PhoneSharing) => sharing.contacts;

/** Whether any device (or `deviceId`) of the profile shares what `shares` asks; false on an unreadable store. */
export function phoneShares(home: string, shares: (sharing: PhoneSharing) => boolean, deviceId?: string): boolean {
  let store: PhoneDataStore | null = null;
  try {
    store = PhoneDataStore.open(home, PHONE_SHAPE, false);
    if (store === null) return false;
    const opened = store;
    return opened
      .devices()
      .some(
        (device) =>
          (deviceId === undefined || device.device_id === deviceId) && sharesWith(opened, device.device_id, shares),
      );
  } catch {
    return false;
  } finally {
    store?.close();
  }
}

function sharesWith(store: PhoneDataStore, deviceId: string, shares: (sharing: PhoneSharing) => boolean): boolean {
  const sharing = storedSharing(store, deviceId);
  return sharing !== null && shares(sharing);
}

/** An argument refusal as the tools answer it. */
function refusal(error: z.ZodError): PhoneReadResult {
  const field = error.issues[0]?.path[0];
  return { ok: false, error: `${typeof field === 'string' ? field : 'arguments'} is missing or invalid` };
}

const asOf = (devices: SharingDevice[]) => {
  const last = Math.max(...devices.map((device) => device.lastBatchAt ?? 0));
  return last > 0 ? iso(last) : null;
};

interface EventRow {
  device_id: string;
  id: string;
  calendar_id: string;
  calendar: string | null;
  title: string;
  start: number;
  end: number;
  all_day: number;
  location: string | null;
  availability: string;
  notes: string | null;
  url: string | null;
  attendees: string | null;
}

/** An event as the model reads it: ISO times (and the phone's local time), details only where kept. */
function eventOut(row: EventRow, timeZone: string | undefined) {
  return {
    device_id: row.device_id,
    id: row.id,
    calendar: row.calendar,
    calendar_id: row.calendar_id,
    title: row.title,
    start: iso(row.start),
    end: iso(row.end),
    ...(timeZone ? { start_local: localTime(row.start, timeZone), end_local: localTime(row.end, timeZone) } : {}),
    all_day: row.all_day === 1,
    ...(row.location ? { location: row.location } : {}),
    availability: row.availability,
    ...(row.notes ? { notes: row.notes } : {}),
    ...(row.url ? { url: row.url } : {}),
    ...(row.attendees ? { attendees: JSON.parse(row.attendees) as unknown } : {}),
  };
}

interface ReminderRow {
  device_id: string;
  id: string;
  list_id: string;
  list: string | null;
  title: string;
  due: number | null;
  due_all_day: number;
  completed: number;
  completed_at: number | null;
  priority: number;
  notes: string | null;
  url: string | null;
}

function reminderOut(row: ReminderRow, timeZone: string | undefined) {
  return {
    device_id: row.device_id,
    id: row.id,
    list: row.list,
    list_id: row.list_id,
    title: row.title,
    due: row.due === null ? null : iso(row.due),
    ...(row.due !== null && timeZone ? { due_local: localTime(row.due, timeZone) } : {}),
    due_all_day: row.due_all_day === 1,
    completed: row.completed === 1,
    ...(row.completed_at !== null ? { completed_at: iso(row.completed_at) } : {}),
    priority: row.priority,
    ...(row.notes ? { notes: row.notes } : {}),
    ...(row.url ? { url: row.url } : {}),
  };
}

const EVENT_SELECT = `SELECT e.device_id, e.id, e.calendar_id, c.title AS calendar, e.title, e.start, e.end, e.all_day,
  e.location, e.availability, e.notes, e.url, e.attendees FROM phone_events e
  LEFT JOIN phone_calendars c ON c.device_id = e.device_id AND c.id = e.calendar_id`;
const REMINDER_SELECT = `SELECT r.device_id, r.id, r.list_id, l.title AS list, r.title, r.due, r.due_all_day, r.completed,
  r.completed_at, r.priority, r.notes, r.url FROM phone_reminders r
  LEFT JOIN phone_reminder_lists l ON l.device_id = r.device_id AND l.id = r.list_id`;

/** A `LIKE` pattern matching `query` anywhere, with its own wildcards taken literally. */
const containing = (query: string | undefined) =>
  query === undefined ? null : `%${query.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** Busy intervals merged, and the free gaps of at least `minS` between them within [fromS, toS). */
function freeBusy(busy: { start: number; end: number }[], fromS: number, toS: number, minS: number) {
  const merged: { start: number; end: number }[] = [];
  for (const interval of busy) {
    const start = Math.max(interval.start, fromS);
    const end = Math.min(interval.end, toS);
    if (end <= start) continue;
    const last = merged.at(-1);
    if (last && start <= last.end) last.end = Math.max(last.end, end);
    else merged.push({ start, end });
  }
  const free: { start: number; end: number }[] = [];
  let cursor = fromS;
  for (const interval of [...merged, { start: toS, end: toS }]) {
    if (interval.start - cursor >= minS) free.push({ start: cursor, end: interval.start });
    cursor = Math.max(cursor, interval.end);
  }
  return { busy: merged, free };
}

/** Reads the calendars and reminders the profile's phones share; `{ok: false, error}` for refused arguments or none. */
export function readCalendar(home: string, rawArgs: unknown, context: PhoneReadContext): PhoneReadResult {
  const parsed = calendarReadArgs.safeParse(rawArgs);
  if (!parsed.success) return refusal(parsed.error);
  const args = parsed.data;
  const store = PhoneDataStore.open(home, PHONE_SHAPE, false);
  if (store === null) return { ok: false, error: 'No calendars or reminders have been shared with this profile' };
  try {
    const { nowS } = context;
    const devices = sharingDevices(store, nowS, sharesCalendar, context.onlyDevice ?? args.device ?? null);
    if (devices.length === 0)
      return { ok: false, error: 'No calendars or reminders have been shared with this profile' };
    store.logRead({
      at: nowS,
      deviceId: context.onlyDevice ?? args.device ?? null,
      action: args.action,
      via: context.via,
    });
    const ids = JSON.stringify(devices.map((device) => device.deviceId));
    const timeZone = devices[0]?.sharing.time_zone;
    const base = {
      ok: true as const,
      action: args.action,
      as_of: asOf(devices),
      ...(timeZone ? { time_zone: timeZone } : {}),
    };
    const inDevices = `device_id IN (SELECT value FROM json_each(@ids))`;
    const events = (where: string, params: Record<string, unknown>, order = 'e.start', limit = ROWS_PER_READ) =>
      (
        store.db
          .prepare(`${EVENT_SELECT} WHERE e.${inDevices} AND ${where} ORDER BY ${order}, e.id LIMIT ${limit + 1}`)
          .all({ ids, ...params }) as EventRow[]
      ).map((row) => eventOut(row, timeZone));
    const clipped = <T>(rows: T[], limit = ROWS_PER_READ) => ({
      rows: rows.slice(0, limit),
      truncated: rows.length > limit,
    });
    const span = (defaultDays: number) => {
      const from = dayStart(args.start_date ?? todayIn(nowS, timeZone), timeZone);
      return { fromS: from, toS: from + (args.days ?? defaultDays) * DAY_S };
    };
    switch (args.action) {
      case 'overview': {
        const today = span(1);
        const eventsToday = (
          store.db
            .prepare(`SELECT COUNT(*) AS n FROM phone_events WHERE ${inDevices} AND start < @to AND end > @from`)
            .get({ ids, from: today.fromS, to: today.toS }) as { n: number }
        ).n;
        const [next] = events('e.end > @now', { now: nowS }, 'e.start', 1);
        const open = store.db
          .prepare(
            `SELECT COUNT(*) AS open, SUM(CASE WHEN due IS NOT NULL AND due < @now THEN 1 ELSE 0 END) AS overdue
             FROM phone_reminders WHERE ${inDevices} AND completed = 0`,
          )
          .get({ ids, now: nowS }) as { open: number; overdue: number | null };
        const sources = (table: string) =>
          (store.db.prepare(`SELECT COUNT(*) AS n FROM ${table} WHERE ${inDevices}`).get({ ids }) as { n: number }).n;
        return {
          ...base,
          devices: devices.map((device) => ({
            device_id: device.deviceId,
            as_of: device.lastBatchAt === null ? null : iso(device.lastBatchAt),
            calendars: device.sharing.calendars.on,
            reminders: device.sharing.reminders.on,
            past_days: device.sharing.past_days,
            future_days: device.sharing.future_days,
          })),
          calendars: sources('phone_calendars'),
          reminder_lists: sources('phone_reminder_lists'),
          events_today: eventsToday,
          next_event: next ?? null,
          reminders_open: open.open,
          reminders_overdue: open.overdue ?? 0,
        };
      }
      case 'calendars': {
        const calendars = store.db
          .prepare(
            `SELECT device_id, id, title, account, color, shared, mode FROM phone_calendars WHERE ${inDevices} ORDER BY title`,
          )
          .all({ ids }) as { shared: number }[];
        const lists = store.db
          .prepare(
            `SELECT device_id, id, title, account, shared, mode FROM phone_reminder_lists WHERE ${inDevices} ORDER BY title`,
          )
          .all({ ids }) as { shared: number }[];
        const bool = <T extends { shared: number }>(row: T) => ({ ...row, shared: row.shared === 1 });
        return { ...base, calendars: calendars.map(bool), lists: lists.map(bool) };
      }
      case 'events': {
        const { fromS, toS } = span(7);
        const { rows, truncated } = clipped(
          events(
            `e.start < @to AND e.end > @from AND (@calendar IS NULL OR e.calendar_id = @calendar)
             AND (@query IS NULL OR e.title LIKE @query ESCAPE '\\' OR e.location LIKE @query ESCAPE '\\')`,
            { from: fromS, to: toS, calendar: args.calendar ?? null, query: containing(args.query) },
          ),
        );
        return { ...base, from: iso(fromS), to: iso(toS), events: rows, truncated };
      }
      case 'free_busy': {
        const { fromS, toS } = span(1);
        const busy = store.db
          .prepare(
            `SELECT start, end FROM phone_events WHERE ${inDevices} AND start < @to AND end > @from AND all_day = 0
             AND availability != 'free' ORDER BY start`,
          )
          .all({ ids, from: fromS, to: toS }) as { start: number; end: number }[];
        const answer = freeBusy(busy, fromS, toS, (args.min_minutes ?? 30) * 60);
        const out = (interval: { start: number; end: number }) => ({
          start: iso(interval.start),
          end: iso(interval.end),
          ...(timeZone
            ? { start_local: localTime(interval.start, timeZone), end_local: localTime(interval.end, timeZone) }
            : {}),
        });
        return { ...base, from: iso(fromS), to: iso(toS), busy: answer.busy.map(out), free: answer.free.map(out) };
      }
      case 'next': {
        const upcoming = events('e.end > @now AND e.all_day = 0', { now: nowS }, 'e.start', args.count ?? 3);
        return { ...base, now: iso(nowS), events: upcoming.slice(0, args.count ?? 3) };
      }
      case 'reminders': {
        const rows = store.db
          .prepare(
            `${REMINDER_SELECT} WHERE r.${inDevices} AND (@completed = 1 OR r.completed = 0)
             AND (@list IS NULL OR r.list_id = @list) AND (@query IS NULL OR r.title LIKE @query ESCAPE '\\')
             ORDER BY r.completed, r.due IS NULL, r.due, r.priority DESC, r.id LIMIT ${ROWS_PER_READ + 1}`,
          )
          .all({
            ids,
            completed: args.include_completed ? 1 : 0,
            list: args.list ?? null,
            query: containing(args.query),
          }) as ReminderRow[];
        const { rows: reminders, truncated } = clipped(rows.map((row) => reminderOut(row, timeZone)));
        return { ...base, reminders, truncated };
      }
    }
  } finally {
    store.close();
  }
}

/**
 * conduit_phone's reads: `status` (the phone status and Focus, latest only) and `alarms` (the alarms
 * and timers Hermes set that are still on, as the phone last reported them).
 */
export function readPhone(home: string, rawArgs: unknown, context: PhoneReadContext): PhoneReadResult {
  const parsed = phoneReadArgs.safeParse(rawArgs);
  if (!parsed.success) return refusal(parsed.error);
  const args = parsed.data;
  const what = args.action === 'alarms' ? 'No alarms are shared' : 'No phone status has been shared';
  const store = PhoneDataStore.open(home, PHONE_SHAPE, false);
  if (store === null) return { ok: false, error: `${what} with this profile` };
  try {
    const shares = args.action === 'alarms' ? sharesAlarms : sharesStatus;
    const devices = sharingDevices(store, context.nowS, shares, context.onlyDevice ?? args.device ?? null);
    if (devices.length === 0) return { ok: false, error: `${what} with this profile` };
    store.logRead({
      at: context.nowS,
      deviceId: context.onlyDevice ?? args.device ?? null,
      action: args.action,
      via: context.via,
    });
    if (args.action === 'alarms') {
      const alarms = devices.flatMap((device) =>
        (
          store.db.prepare('SELECT alarm FROM phone_alarms WHERE device_id = ? ORDER BY id').all(device.deviceId) as {
            alarm: string;
          }[]
        ).map((row) => alarmOut(device.deviceId, phoneAlarm.parse(JSON.parse(row.alarm)), device.sharing.time_zone)),
      );
      return { ok: true, action: args.action, as_of: asOf(devices), alarms };
    }
    const phones = devices.map((device) => {
      const status = store.db.prepare('SELECT * FROM phone_status WHERE device_id = ?').get(device.deviceId) as
        Record<string, number | string | null> | undefined;
      const focus = store.db
        .prepare('SELECT at, active, name FROM phone_focus WHERE device_id = ?')
        .get(device.deviceId) as { at: number; active: number; name: string | null } | undefined;
      const flag = (value: number | string | null | undefined) =>
        value === null || value === undefined ? null : value === 1;
      return {
        device_id: device.deviceId,
        as_of: device.lastBatchAt === null ? null : iso(device.lastBatchAt),
        status: status
          ? {
              at: iso(Number(status.at)),
              battery_level: status.battery_level,
              charging: flag(status.charging),
              low_power: flag(status.low_power),
              carplay: flag(status.carplay),
              audio_route: status.audio_route,
              network: status.network,
              motion: status.motion,
            }
          : device.sharing.status
            ? null
            : 'not shared',
        focus: focus
          ? { at: iso(focus.at), active: focus.active === 1, name: focus.name }
          : device.sharing.focus
            ? null
            : 'not shared',
      };
    });
    return { ok: true, action: args.action, as_of: asOf(devices), phones };
  } finally {
    store.close();
  }
}

/** An alarm or timer as the model reads it: ISO and local times, never the phone's internals. */
function alarmOut(deviceId: string, alarm: ReturnType<typeof phoneAlarm.parse>, timeZone: string | undefined) {
  return {
    device_id: deviceId,
    id: alarm.id,
    kind: alarm.kind,
    label: alarm.label ?? null,
    ...(alarm.at !== undefined ? { at: iso(alarm.at), at_local: localTime(alarm.at, timeZone) } : {}),
    ...(alarm.time !== undefined ? { time: alarm.time, days: alarm.days ?? [] } : {}),
    ...(alarm.seconds !== undefined ? { seconds: alarm.seconds } : {}),
    change_id: alarm.change_id ?? null,
  };
}

/** conduit_contacts' `people`: the people the user picked, all or those matching `query`. */
export function readContacts(home: string, rawArgs: unknown, context: PhoneReadContext): PhoneReadResult {
  const parsed = contactsReadArgs.safeParse(rawArgs);
  if (!parsed.success) return refusal(parsed.error);
  const args = parsed.data;
  const store = PhoneDataStore.open(home, PHONE_SHAPE, false);
  if (store === null) return { ok: false, error: 'No contacts are shared with this profile' };
  try {
    const devices = sharingDevices(store, context.nowS, sharesContacts, context.onlyDevice ?? args.device ?? null);
    if (devices.length === 0) return { ok: false, error: 'No contacts are shared with this profile' };
    store.logRead({
      at: context.nowS,
      deviceId: context.onlyDevice ?? args.device ?? null,
      action: args.action,
      via: context.via,
    });
    const needle = args.query?.toLowerCase();
    const people = devices.flatMap((device) =>
      (
        store.db
          .prepare('SELECT contact FROM phone_contacts WHERE device_id = ? ORDER BY name COLLATE NOCASE, id')
          .all(device.deviceId) as { contact: string }[]
      ).flatMap((row) => {
        const contact = phoneContact.parse(JSON.parse(row.contact));
        const haystack = [
          contact.name,
          contact.nickname,
          contact.relation,
          contact.organization,
          ...contact.phones.map((phone) => phone.number),
          ...contact.emails.map((email) => email.address),
        ]
          .filter((value): value is string => value !== undefined)
          .join('\n')
          .toLowerCase();
        if (needle !== undefined && !haystack.includes(needle)) return [];
        return [{ device_id: device.deviceId, ...contact }];
      }),
    );
    return { ok: true, action: args.action, as_of: asOf(devices), count: people.length, people };
  } finally {
    store.close();
  }
}
