import {
  PHONE_LIMITS,
  phoneBatch,
  phoneSharing,
  type PhoneBatch,
  type PhoneSharing,
} from '@conduit/contracts/dashboard/phone';
import { DetailError } from '../../kernel/detail-errors.js';
import type { BatchOutcome, DeviceSummary, PhoneDataStore } from '../../kernel/phone-data/index.js';
import type { StoreShape } from '../../kernel/phone-data/store.js';

/**
 * The phone feature's tables in the profile's conduit-phone.sqlite3 and how a batch lands in them. The
 * store holds every batch to the sharing state the batch declares (contracts/dashboard/phone.ts lists
 * the rules), and applies that state to what it already keeps, so turning something off on the phone
 * deletes it here with the next batch even when the phone keeps sending it.
 */

export const PHONE_SCHEMA = `
CREATE TABLE IF NOT EXISTS phone_sharing (
  device_id TEXT PRIMARY KEY, sharing TEXT NOT NULL, at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS phone_calendars (
  device_id TEXT NOT NULL, id TEXT NOT NULL, title TEXT NOT NULL, account TEXT, color TEXT, shared INTEGER NOT NULL,
  mode TEXT NOT NULL, PRIMARY KEY (device_id, id)
);
CREATE TABLE IF NOT EXISTS phone_events (
  device_id TEXT NOT NULL, id TEXT NOT NULL, calendar_id TEXT NOT NULL, title TEXT NOT NULL, start REAL NOT NULL,
  end REAL NOT NULL, all_day INTEGER NOT NULL, location TEXT, availability TEXT NOT NULL, notes TEXT, url TEXT,
  attendees TEXT, PRIMARY KEY (device_id, id)
);
CREATE INDEX IF NOT EXISTS phone_events_by_time ON phone_events (device_id, start);
CREATE TABLE IF NOT EXISTS phone_reminder_lists (
  device_id TEXT NOT NULL, id TEXT NOT NULL, title TEXT NOT NULL, account TEXT, shared INTEGER NOT NULL,
  mode TEXT NOT NULL, PRIMARY KEY (device_id, id)
);
CREATE TABLE IF NOT EXISTS phone_reminders (
  device_id TEXT NOT NULL, id TEXT NOT NULL, list_id TEXT NOT NULL, title TEXT NOT NULL, due REAL,
  due_all_day INTEGER NOT NULL, completed INTEGER NOT NULL, completed_at REAL, priority INTEGER NOT NULL, notes TEXT,
  url TEXT, PRIMARY KEY (device_id, id)
);
CREATE TABLE IF NOT EXISTS phone_focus (
  device_id TEXT PRIMARY KEY, at REAL NOT NULL, active INTEGER NOT NULL, name TEXT
);
CREATE TABLE IF NOT EXISTS phone_status (
  device_id TEXT PRIMARY KEY, at REAL NOT NULL, battery_level REAL, charging INTEGER, low_power INTEGER,
  carplay INTEGER, audio_route TEXT, network TEXT, motion TEXT
);
CREATE TABLE IF NOT EXISTS phone_alarms (
  device_id TEXT NOT NULL, id TEXT NOT NULL, alarm TEXT NOT NULL, PRIMARY KEY (device_id, id)
);
CREATE TABLE IF NOT EXISTS phone_contacts (
  device_id TEXT NOT NULL, id TEXT NOT NULL, name TEXT NOT NULL, contact TEXT NOT NULL, PRIMARY KEY (device_id, id)
);
CREATE TABLE IF NOT EXISTS phone_changes (
  id TEXT PRIMARY KEY, device_id TEXT NOT NULL, kind TEXT NOT NULL, ask INTEGER NOT NULL, summary TEXT NOT NULL,
  change TEXT NOT NULL, created_at REAL NOT NULL, expires_at REAL NOT NULL, state TEXT NOT NULL,
  delivered_at REAL, settled_at REAL, item_id TEXT, note TEXT
);
CREATE INDEX IF NOT EXISTS phone_changes_by_device ON phone_changes (device_id, state, created_at);
`;

export const PHONE_DEVICE_TABLES = [
  'phone_sharing',
  'phone_calendars',
  'phone_events',
  'phone_reminder_lists',
  'phone_reminders',
  'phone_focus',
  'phone_status',
  'phone_alarms',
  'phone_contacts',
  // A device's pending changes go with its data: a wipe or a new key leaves nothing for another key.
  'phone_changes',
] as const;

export const PHONE_SHAPE: StoreShape = { feature: 'phone', schema: PHONE_SCHEMA, deviceTables: PHONE_DEVICE_TABLES };

const DAY_S = 86_400;
/**
 * The window is counted in the phone's days, but the host keeps UTC: a day's margin-worth of the
 * largest UTC offset (+14 h) either way, so an event on the window's first or last local day is never
 * trimmed for being a few hours off the UTC date. It widens the window by at most 14 hours.
 */
const TIME_ZONE_MARGIN_S = 14 * 3600;

/** The shared window in Unix seconds: `past_days` back from today's start to the end of `future_days` ahead. */
export function sharedWindow(sharing: PhoneSharing, nowS: number): { fromS: number; toS: number } {
  const today = nowS - (nowS % DAY_S);
  return {
    fromS: today - sharing.past_days * DAY_S - TIME_ZONE_MARGIN_S,
    toS: today + (sharing.future_days + 1) * DAY_S + TIME_ZONE_MARGIN_S,
  };
}

/**
 * The opened batch as a clean value: 400 for a refused field, 413 past 5,000 items, 50 alarms or 200
 * contacts (counted before the schema runs, so an oversized list costs no validation).
 */
export function parsePhoneBatch(plain: unknown): PhoneBatch {
  const raw = (plain ?? {}) as Record<string, unknown>;
  const counted = ['calendars', 'events', 'deleted_events', 'lists', 'reminders', 'deleted_reminders', 'alarms'];
  const sizeOf = (key: string) => (Array.isArray(raw[key]) ? raw[key].length : 0);
  const items = [...counted, 'contacts'].reduce((sum, key) => sum + sizeOf(key), 0);
  if (items > PHONE_LIMITS.itemsPerBatch) {
    throw new DetailError(413, `A batch carries at most ${PHONE_LIMITS.itemsPerBatch} items`);
  }
  if (sizeOf('alarms') > PHONE_LIMITS.alarmsPerDevice) {
    throw new DetailError(413, `A device has at most ${PHONE_LIMITS.alarmsPerDevice} alarms and timers`);
  }
  if (sizeOf('contacts') > PHONE_LIMITS.contactsPerDevice) {
    throw new DetailError(413, `A device shares at most ${PHONE_LIMITS.contactsPerDevice} contacts`);
  }
  const parsed = phoneBatch.safeParse(plain);
  if (!parsed.success) {
    const where = parsed.error.issues[0]?.path.join('.') ?? '';
    throw new DetailError(400, where ? `Batch field ${where} is invalid` : 'The batch is invalid');
  }
  const batch = parsed.data;
  const { calendars, reminders } = batch.sharing;
  if (
    Object.keys(calendars.modes).length > PHONE_LIMITS.sourcesPerKind ||
    Object.keys(reminders.modes).length > PHONE_LIMITS.sourcesPerKind
  ) {
    throw new DetailError(400, `A sharing state names at most ${PHONE_LIMITS.sourcesPerKind} calendars or lists`);
  }
  for (const [index, event] of batch.events.entries()) {
    if (event.end < event.start) throw new DetailError(400, `Batch field events.${index} ends before it starts`);
  }
  return batch;
}

/**
 * The sharing state a device last declared, or null before its first batch. Read through the schema,
 * so a state kept before a field existed gets that field's default (off) rather than a missing value.
 */
export function storedSharing(store: PhoneDataStore, deviceId: string): PhoneSharing | null {
  const row = store.db.prepare('SELECT sharing FROM phone_sharing WHERE device_id = ?').get(deviceId) as
    { sharing: string } | undefined;
  if (!row) return null;
  const parsed = phoneSharing.safeParse(JSON.parse(row.sharing));
  return parsed.success ? parsed.data : null;
}

/**
 * Holds what the device already stores to `sharing`: off kinds deleted, items of calendars and lists
 * no longer readable deleted, details dropped without "include notes and attendees", and everything
 * outside the shared window deleted. Runs on every batch and before every read, so the rules hold
 * even when no batch came since time moved the window.
 */
export function applySharing(store: PhoneDataStore, deviceId: string, sharing: PhoneSharing, nowS: number): void {
  const db = store.db;
  const { fromS, toS } = sharedWindow(sharing, nowS);
  const id = deviceId;
  const kinds = [
    {
      on: sharing.calendars.on,
      modes: sharing.calendars.modes,
      sources: 'phone_calendars',
      items: 'phone_events',
      of: 'calendar_id',
    },
    {
      on: sharing.reminders.on,
      modes: sharing.reminders.modes,
      sources: 'phone_reminder_lists',
      items: 'phone_reminders',
      of: 'list_id',
    },
  ] as const;
  for (const kind of kinds) {
    if (!kind.on) {
      db.prepare(`DELETE FROM ${kind.items} WHERE device_id = ?`).run(id);
      db.prepare(`DELETE FROM ${kind.sources} WHERE device_id = ?`).run(id);
      continue;
    }
    const modes = JSON.stringify(kind.modes);
    db.prepare(
      `DELETE FROM ${kind.items} WHERE device_id = @id AND ${kind.of} NOT IN
         (SELECT key FROM json_each(@modes) WHERE value = 'read')`,
    ).run({ id, modes });
    db.prepare(
      `DELETE FROM ${kind.sources} WHERE device_id = @id AND id NOT IN
         (SELECT key FROM json_each(@modes) WHERE value != 'off')`,
    ).run({ id, modes });
    db.prepare(
      `UPDATE ${kind.sources} SET mode = (SELECT value FROM json_each(@modes) WHERE key = ${kind.sources}.id)
       WHERE device_id = @id`,
    ).run({ id, modes });
  }
  db.prepare('DELETE FROM phone_events WHERE device_id = @id AND (end < @fromS OR start > @toS)').run({
    id,
    fromS,
    toS,
  });
  // Undated open reminders stay whatever the window; a reminder due past it, or done before it, goes.
  db.prepare(
    `DELETE FROM phone_reminders WHERE device_id = @id
       AND (due > @toS OR (completed = 1 AND COALESCE(completed_at, due) < @fromS))`,
  ).run({ id, fromS, toS });
  if (!sharing.include_details) {
    db.prepare('UPDATE phone_events SET notes = NULL, url = NULL, attendees = NULL WHERE device_id = ?').run(id);
    db.prepare('UPDATE phone_reminders SET notes = NULL, url = NULL WHERE device_id = ?').run(id);
  }
  if (!sharing.focus) db.prepare('DELETE FROM phone_focus WHERE device_id = ?').run(id);
  if (!sharing.status) db.prepare('DELETE FROM phone_status WHERE device_id = ?').run(id);
  if (!sharing.alarms.on) db.prepare('DELETE FROM phone_alarms WHERE device_id = ?').run(id);
  if (!sharing.contacts) db.prepare('DELETE FROM phone_contacts WHERE device_id = ?').run(id);
  // A timer or one-off alarm that has rung is no longer on; the phone's next list says so too.
  db.prepare(
    `DELETE FROM phone_alarms WHERE device_id = ? AND json_extract(alarm, '$.at') IS NOT NULL
       AND json_extract(alarm, '$.time') IS NULL AND json_extract(alarm, '$.at') < ?`,
  ).run(id, nowS);
}

const bit = (value: boolean | undefined) => (value === undefined ? null : value ? 1 : 0);

/**
 * Stores a batch for what its sharing state allows; everything else is counted as ignored, never
 * kept. Deletions count as stored. The sharing state itself is kept for reads and the tools' visibility.
 */
export function storePhoneBatch(
  store: PhoneDataStore,
  deviceId: string,
  batch: PhoneBatch,
  nowS: number,
): BatchOutcome {
  const db = store.db;
  const sharing = batch.sharing;
  const { fromS, toS } = sharedWindow(sharing, nowS);
  const details = sharing.include_details;
  let stored = 0;
  let ignored = 0;
  const count = (kept: boolean) => (kept ? (stored += 1) : (ignored += 1));
  db.prepare(
    'INSERT INTO phone_sharing (device_id, sharing, at) VALUES (?, ?, ?) ON CONFLICT (device_id) DO UPDATE SET sharing = excluded.sharing, at = excluded.at',
  ).run(deviceId, JSON.stringify(sharing), nowS);

  const calendarMode = (id: string) => (sharing.calendars.on ? (sharing.calendars.modes[id] ?? 'off') : 'off');
  if (batch.calendars) {
    if (sharing.calendars.on) db.prepare('DELETE FROM phone_calendars WHERE device_id = ?').run(deviceId);
    const put = db.prepare(
      'INSERT OR REPLACE INTO phone_calendars (device_id, id, title, account, color, shared, mode) VALUES (?, ?, ?, ?, ?, ?, ?)',
    );
    for (const calendar of batch.calendars) {
      const mode = calendarMode(calendar.id);
      // An add-only calendar is listed (the writes slice adds to it), but none of its events are kept.
      if (mode !== 'off')
        put.run(
          deviceId,
          calendar.id,
          calendar.title,
          calendar.account ?? null,
          calendar.color ?? null,
          bit(calendar.shared),
          mode,
        );
      count(mode !== 'off');
    }
  }
  if (sharing.calendars.on && batch.full) {
    db.prepare('DELETE FROM phone_events WHERE device_id = ? AND id NOT IN (SELECT value FROM json_each(?))').run(
      deviceId,
      JSON.stringify(batch.events.map((event) => event.id)),
    );
  }
  const putEvent = db.prepare(
    `INSERT OR REPLACE INTO phone_events (device_id, id, calendar_id, title, start, end, all_day, location, availability,
       notes, url, attendees) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  for (const event of batch.events) {
    const kept = calendarMode(event.calendar_id) === 'read' && event.end >= fromS && event.start <= toS;
    if (kept) {
      putEvent.run(
        deviceId,
        event.id,
        event.calendar_id,
        event.title,
        event.start,
        event.end,
        bit(event.all_day),
        event.location ?? null,
        event.availability,
        details ? (event.notes ?? null) : null,
        details ? (event.url ?? null) : null,
        details && event.attendees ? JSON.stringify(event.attendees) : null,
      );
    }
    count(kept);
  }
  const dropEvent = db.prepare('DELETE FROM phone_events WHERE device_id = ? AND id = ?');
  // A deletion counts as stored whether or not the item was here: the phone's word is kept either way.
  for (const id of batch.deleted_events) {
    dropEvent.run(deviceId, id);
    count(true);
  }

  const listMode = (id: string) => (sharing.reminders.on ? (sharing.reminders.modes[id] ?? 'off') : 'off');
  if (batch.lists) {
    if (sharing.reminders.on) db.prepare('DELETE FROM phone_reminder_lists WHERE device_id = ?').run(deviceId);
    const put = db.prepare(
      'INSERT OR REPLACE INTO phone_reminder_lists (device_id, id, title, account, shared, mode) VALUES (?, ?, ?, ?, ?, ?)',
    );
    for (const list of batch.lists) {
      const mode = listMode(list.id);
      if (mode !== 'off') put.run(deviceId, list.id, list.title, list.account ?? null, bit(list.shared), mode);
      count(mode !== 'off');
    }
  }
  if (sharing.reminders.on && batch.full) {
    db.prepare('DELETE FROM phone_reminders WHERE device_id = ? AND id NOT IN (SELECT value FROM json_each(?))').run(
      deviceId,
      JSON.stringify(batch.reminders.map((reminder) => reminder.id)),
    );
  }
  const putReminder = db.prepare(
    `INSERT OR REPLACE INTO phone_reminders (device_id, id, list_id, title, due, due_all_day, completed, completed_at,
       priority, notes, url) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  for (const reminder of batch.reminders) {
    const doneAt = reminder.completed_at ?? reminder.due;
    const inWindow =
      (reminder.due === undefined || reminder.due <= toS) &&
      !(reminder.completed && doneAt !== undefined && doneAt < fromS);
    const kept = listMode(reminder.list_id) === 'read' && inWindow;
    if (kept) {
      putReminder.run(
        deviceId,
        reminder.id,
        reminder.list_id,
        reminder.title,
        reminder.due ?? null,
        bit(reminder.due_all_day),
        bit(reminder.completed),
        reminder.completed_at ?? null,
        reminder.priority,
        details ? (reminder.notes ?? null) : null,
        details ? (reminder.url ?? null) : null,
      );
    }
    count(kept);
  }
  const dropReminder = db.prepare('DELETE FROM phone_reminders WHERE device_id = ? AND id = ?');
  for (const id of batch.deleted_reminders) {
    dropReminder.run(deviceId, id);
    count(true);
  }

  // Latest value only: an older snapshot than the stored one (batches can arrive out of order) is ignored.
  if (batch.focus) {
    const kept =
      sharing.focus &&
      db
        .prepare(
          `INSERT INTO phone_focus (device_id, at, active, name) VALUES (?, ?, ?, ?)
           ON CONFLICT (device_id) DO UPDATE SET at = excluded.at, active = excluded.active, name = excluded.name
           WHERE excluded.at >= phone_focus.at`,
        )
        .run(deviceId, batch.focus.at, bit(batch.focus.active), batch.focus.active ? batch.focus.name : null).changes >
        0;
    count(kept);
  }
  if (batch.status) {
    const s = batch.status;
    const kept =
      sharing.status &&
      db
        .prepare(
          `INSERT INTO phone_status (device_id, at, battery_level, charging, low_power, carplay, audio_route, network, motion)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (device_id) DO UPDATE SET at = excluded.at, battery_level = excluded.battery_level,
             charging = excluded.charging, low_power = excluded.low_power, carplay = excluded.carplay,
             audio_route = excluded.audio_route, network = excluded.network, motion = excluded.motion
           WHERE excluded.at >= phone_status.at`,
        )
        .run(
          deviceId,
          s.at,
          s.battery_level ?? null,
          bit(s.charging),
          bit(s.low_power),
          bit(s.carplay),
          s.audio_route ?? null,
          s.network ?? null,
          s.motion ?? null,
        ).changes > 0;
    count(kept);
  }
  if (batch.alarms) {
    // The whole list of what Hermes set that is still on: it replaces the stored one.
    db.prepare('DELETE FROM phone_alarms WHERE device_id = ?').run(deviceId);
    const put = db.prepare('INSERT OR REPLACE INTO phone_alarms (device_id, id, alarm) VALUES (?, ?, ?)');
    for (const alarm of batch.alarms) {
      if (sharing.alarms.on) put.run(deviceId, alarm.id, JSON.stringify(alarm));
      count(sharing.alarms.on);
    }
  }
  if (batch.contacts) {
    db.prepare('DELETE FROM phone_contacts WHERE device_id = ?').run(deviceId);
    const put = db.prepare('INSERT OR REPLACE INTO phone_contacts (device_id, id, name, contact) VALUES (?, ?, ?, ?)');
    for (const contact of batch.contacts) {
      if (sharing.contacts) put.run(deviceId, contact.id, contact.name, JSON.stringify(contact));
      count(sharing.contacts);
    }
  }
  // Last, so the rules also hold for what was stored before this batch.
  applySharing(store, deviceId, sharing, nowS);
  return { stored, ignored };
}

const COUNTED = {
  calendars: 'phone_calendars',
  events: 'phone_events',
  reminder_lists: 'phone_reminder_lists',
  reminders: 'phone_reminders',
  focus: 'phone_focus',
  status: 'phone_status',
  alarms: 'phone_alarms',
  contacts: 'phone_contacts',
  changes: 'phone_changes',
} as const;

/** Counts per kind and the days events and reminders cover; never a title or a value. */
export function summarizePhone(store: PhoneDataStore, deviceId: string): DeviceSummary {
  const counts: Record<string, number> = {};
  for (const [name, table] of Object.entries(COUNTED)) {
    counts[name] = (
      store.db.prepare(`SELECT COUNT(*) AS n FROM ${table} WHERE device_id = ?`).get(deviceId) as { n: number }
    ).n;
  }
  const span = store.db
    .prepare(
      `SELECT date(MIN(t), 'unixepoch') AS first, date(MAX(t), 'unixepoch') AS last FROM (
         SELECT start AS t FROM phone_events WHERE device_id = @id UNION ALL
         SELECT due AS t FROM phone_reminders WHERE device_id = @id AND due IS NOT NULL)`,
    )
    .get({ id: deviceId }) as { first: string | null; last: string | null };
  return { counts, firstDay: span.first, lastDay: span.last };
}
