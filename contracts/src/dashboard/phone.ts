import { z } from 'zod';
import { defineRoute } from '../route.js';
import { detailAnswer, detailBodyRefusals, detailUnavailable, noStoreAnswer } from './detail-error.js';
import { unauthorized } from './notification-settings.js';
import {
  PHONE_BATCH_ID_PATTERN,
  PHONE_DATA_LIMITS,
  PHONE_DEVICE_ID_PATTERN,
  PHONE_KID_PATTERN,
  phoneDataRoutes,
  voiceCallPlaintext,
} from './phone-data.js';
import { profileQuery } from './profile.js';

/**
 * Calendar and phone status (the seed's "Conduit can share the user's iPhone calendars…"): the phone's
 * sealed batches over the phone-data wire (phone-data.ts) with the label `conduit-phone-v1`, a key of
 * its own (so health, location and phone each go on and off, and are wiped, alone). What is below is
 * the plaintext inside a batch's seal; it never crosses the wire in the clear.
 *
 * Like location's, every batch carries the phone's sharing state, and the host holds the batch (and
 * what it already stores) to it, whatever else the batch carries:
 * - calendars and reminders off: the device's events, calendars, lists and reminders are deleted;
 * - a calendar (or list) whose mode is not `read` (`add_only`, `off`, or not named): none of its events
 *   (reminders) are stored, and those already stored are deleted;
 * - `include_details` off: no notes, links or attendees (so no attendee emails) are kept;
 * - only the shared window is kept: events that end before `past_days` ago or start after
 *   `future_days` ahead, on every ingest;
 * - `focus` or `status` off: the stored value is forgotten and none is taken; on, only the newest
 *   value (by `at`) is kept.
 * - `alarms.on` off: the alarms and timers Hermes set are forgotten here, and no alarm can be set;
 * - `contacts` off: the people the user picked are deleted here and none are taken.
 * Writes are pending changes the phone applies (below, "Pending changes").
 */

export const PHONE_LABEL = 'conduit-phone-v1';

/** The seed's phone-data limits, and the bounds this host adds around them. */
export const PHONE_LIMITS = {
  devicesPerProfile: PHONE_DATA_LIMITS.devicesPerProfile,
  /** The seed's 5,000 items per batch: events, reminders, calendars and lists together (413). */
  itemsPerBatch: 5000,
  /** The seed's 4 MiB per batch, counted on the sealed bytes. */
  sealedBatchMaxBytes: 4 * 1024 * 1024,
  /** The seed's 120 uploads a minute per profile; refused uploads count too. */
  uploadsPerMinute: 120,
  /**
   * The longest window the user can pick either way. Conduit offers up to a year back and ahead; more
   * is a bug, refused (400) rather than silently kept.
   */
  windowMaxDays: 366,
  /** Calendars or lists named in one sharing state: EventKit accounts rarely hold more than a few dozen. */
  sourcesPerKind: 500,
  /** The seed's 50 alarms and timers per device: those the phone reports plus those still pending. */
  alarmsPerDevice: 50,
  /** The seed's 200 contacts per device: the people the user picked, never the address book. */
  contactsPerDevice: 200,
  /** The seed's 50 pending changes per profile: a phone that stopped exchanging cannot grow the queue. */
  pendingChangesPerProfile: 50,
  /**
   * The seed's 7 days: a change not taken by then is about a moment that has passed. Finished changes
   * stay as long again, so Hermes can still read how they went with `pending`.
   */
  changeTtlS: 7 * 86_400,
  /** The seed's 60 exchanges a minute per profile (changes and voice reads together). */
  exchangesPerMinute: 60,
  /** The seed's 64 KiB per exchange: the opened body of a request, and what one answer hands over. */
  exchangeMaxBytes: 64 * 1024,
  /** Outcomes one exchange reports: a full queue of 50, with room for the phone's own expiries. */
  resultsPerExchange: 100,
} as const;

/** What the user lets Hermes do with one calendar or list (Conduit's per-calendar choice). */
export const phoneSourceMode = z.enum(['read', 'add_only', 'off']);
export type PhoneSourceMode = z.output<typeof phoneSourceMode>;

/** Unix seconds. */
const unixS = z.number().min(0).max(32_503_680_000);
/** An EventKit identifier (calendar, event occurrence, reminder), or one the phone makes. */
const phoneItemId = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.:/+=@-]{0,255}$/);
const text = (max: number) => z.string().max(max);
const days = z.int().min(0).max(PHONE_LIMITS.windowMaxDays);

/**
 * What the user chose in Conduit, sent in every batch. `modes` names each calendar (list) by id; one
 * not named counts as `off`.
 */
export const phoneSharing = z.object({
  calendars: z.object({
    on: z.boolean(),
    modes: z.record(phoneItemId, phoneSourceMode).default({}),
    /**
     * "Let Hermes add without asking": an add_event to a calendar of this phone's own (not shared) is
     * applied silently (a background nudge). Off by default; updates and deletes always ask.
     */
    add_without_asking: z.boolean().default(false),
  }),
  reminders: z.object({
    on: z.boolean(),
    modes: z.record(phoneItemId, phoneSourceMode).default({}),
    /** The same for add_reminder to a list that is not shared; updates and completions always ask. */
    add_without_asking: z.boolean().default(false),
  }),
  /**
   * Alarms and timers (plugin 0.30, AlarmKit): `on` lets Hermes set them and shares the ones it set;
   * `add_without_asking` applies set_alarm and set_timer silently. Cancelling always asks.
   */
  alarms: z
    .object({ on: z.boolean(), add_without_asking: z.boolean().default(false) })
    .default({ on: false, add_without_asking: false }),
  /** The people the user picked in Conduit (plugin 0.30); off deletes them here. */
  contacts: z.boolean().default(false),
  /** "Include notes and attendees" (off by default): notes, links and attendees with their emails. */
  include_details: z.boolean().default(false),
  /** How far back and ahead events and reminders are shared, in whole days. */
  past_days: days,
  future_days: days,
  focus: z.boolean(),
  status: z.boolean(),
  /** The phone's IANA time zone (`Europe/London`), for reads that speak of days. */
  time_zone: text(64).optional(),
});
export type PhoneSharing = z.output<typeof phoneSharing>;

/** A calendar's description; when `calendars` is in a batch, the list replaces the stored one. */
export const phoneCalendar = z.object({
  id: phoneItemId,
  title: text(200),
  /** The account it belongs to (iCloud, Google, Exchange…). */
  account: text(200).optional(),
  color: z
    .string()
    .regex(/^#[0-9A-Fa-f]{6}$/)
    .optional(),
  /** A shared or subscribed calendar (adds to it always ask, in the writes slice). */
  shared: z.boolean().default(false),
});

export const phoneAttendee = z.object({
  name: text(200).optional(),
  email: z.email().max(320).optional(),
  status: z.enum(['accepted', 'declined', 'tentative', 'pending', 'unknown']).default('unknown'),
  organizer: z.boolean().default(false),
});

/** One event occurrence (a recurring event's occurrences each have their own id). */
export const phoneEvent = z.object({
  id: phoneItemId,
  calendar_id: phoneItemId,
  title: text(500),
  start: unixS,
  end: unixS,
  all_day: z.boolean().default(false),
  location: text(500).optional(),
  /** Busy unless the event is marked free (free/busy reads leave free events out). */
  availability: z.enum(['busy', 'free', 'tentative', 'unavailable']).default('busy'),
  /** Kept only with `include_details`. */
  notes: text(4000).optional(),
  url: z.url().max(2000).optional(),
  attendees: z.array(phoneAttendee).max(100).optional(),
});

/** A reminders list; when `lists` is in a batch, the list replaces the stored one. */
export const phoneReminderList = z.object({
  id: phoneItemId,
  title: text(200),
  account: text(200).optional(),
  shared: z.boolean().default(false),
});

export const phoneReminder = z.object({
  id: phoneItemId,
  list_id: phoneItemId,
  title: text(500),
  /** Unix seconds of the due date, or absent for an undated reminder. */
  due: unixS.optional(),
  due_all_day: z.boolean().default(false),
  completed: z.boolean().default(false),
  completed_at: unixS.optional(),
  priority: z.int().min(0).max(9).default(0),
  /** Kept only with `include_details`. */
  notes: text(4000).optional(),
  url: z.url().max(2000).optional(),
});

/** Which Focus is on (`name` null: none), as of `at`. */
export const phoneFocus = z.object({
  at: unixS,
  active: z.boolean(),
  /** The Focus' name when iOS tells it (`Work`, `Sleep`); null when it only says one is on. */
  name: text(100).nullable().default(null),
});

/** A snapshot of the phone, as of `at`. */
export const phoneStatusSnapshot = z.object({
  at: unixS,
  /** 0–1. */
  battery_level: z.number().min(0).max(1).optional(),
  charging: z.boolean().optional(),
  low_power: z.boolean().optional(),
  carplay: z.boolean().optional(),
  /** Where audio plays: `speaker`, `receiver`, `headphones`, `bluetooth`, `carplay`, `airplay`. */
  audio_route: z.enum(['speaker', 'receiver', 'headphones', 'bluetooth', 'carplay', 'airplay', 'other']).optional(),
  network: z.enum(['wifi', 'cellular', 'wired', 'none', 'other']).optional(),
  /** CoreMotion's activity. */
  motion: z.enum(['stationary', 'walking', 'running', 'cycling', 'automotive', 'unknown']).optional(),
});

/** `HH:MM`, 24-hour, in the phone's time zone. */
const clockTime = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/);
export const WEEKDAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
const weekday = z.enum(WEEKDAYS);
/** A pending change's id, made by the host: `chg_` and 16 hex digits. */
export const PHONE_CHANGE_ID_PATTERN = /^chg_[0-9a-f]{16}$/;
const changeId = z.string().regex(PHONE_CHANGE_ID_PATTERN);

/**
 * An alarm or timer Hermes set that is still on, as the phone reports it (iOS shows an app only its
 * own). When `alarms` is in a batch, the list replaces the stored one.
 */
export const phoneAlarm = z.object({
  id: phoneItemId,
  kind: z.enum(['alarm', 'timer']),
  label: text(100).optional(),
  /** A one-off alarm: when it rings; a timer: when it ends. Unix seconds. */
  at: unixS.optional(),
  /** A repeating alarm: the local time and the days it rings. */
  time: clockTime.optional(),
  days: z.array(weekday).max(7).optional(),
  /** A timer's length in seconds. */
  seconds: z.int().min(1).max(86_400).optional(),
  /** The pending change that set it. */
  change_id: changeId.optional(),
});

/** One person the user picked in Conduit; when `contacts` is in a batch, the list replaces the stored one. */
export const phoneContact = z.object({
  id: phoneItemId,
  name: text(200).min(1),
  nickname: text(100).optional(),
  /** What the user typed ("wife", "dentist"). */
  relation: text(100).optional(),
  phones: z
    .array(z.object({ label: text(50).optional(), number: z.string().regex(/^[0-9+()*#.\- ]{1,40}$/) }))
    .max(20)
    .default([]),
  emails: z
    .array(z.object({ label: text(50).optional(), address: z.email().max(320) }))
    .max(20)
    .default([]),
  /** `YYYY-MM-DD`, or `--MM-DD` without a year. */
  birthday: z
    .string()
    .regex(/^(\d{4}|-)-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$/)
    .optional(),
  organization: text(200).optional(),
});

/**
 * The plaintext of a sealed phone batch. `events` and `reminders` add or replace items by id; with
 * `full: true` they are the whole shared window, and stored items not in them are deleted (the phone
 * sends a full sync after a change it cannot describe item by item). `deleted_events` and
 * `deleted_reminders` remove items by id.
 */
export const phoneBatch = z.object({
  v: z.literal(1),
  sharing: phoneSharing,
  full: z.boolean().default(false),
  calendars: z.array(phoneCalendar).optional(),
  events: z.array(phoneEvent).default([]),
  deleted_events: z.array(phoneItemId).default([]),
  lists: z.array(phoneReminderList).optional(),
  reminders: z.array(phoneReminder).default([]),
  deleted_reminders: z.array(phoneItemId).default([]),
  focus: phoneFocus.optional(),
  status: phoneStatusSnapshot.optional(),
  /** The alarms and timers Hermes set that are still on (replaces the stored list). */
  alarms: z.array(phoneAlarm).optional(),
  /** The people the user picked (replaces the stored list). */
  contacts: z.array(phoneContact).optional(),
});
export type PhoneBatch = z.output<typeof phoneBatch>;

export const phoneRoutes = phoneDataRoutes({
  feature: 'phone',
  title: 'Phone',
  batchLimitText: 'The sealed batch is over 4 MiB or carries more than 5,000 items; nothing is stored.',
  uploadLimitText: 'More than 120 phone uploads a minute for this profile.',
});

export const postPhoneKey = phoneRoutes.key;
export const postPhoneIngest = phoneRoutes.ingest;
export const getPhoneStatus = phoneRoutes.status;
export const postPhoneWipe = phoneRoutes.wipe;

/** The read actions of `conduit_calendar` (its writes are pending changes, below). */
export const CALENDAR_READ_ACTIONS = ['overview', 'calendars', 'events', 'free_busy', 'next', 'reminders'] as const;

/** At most this many days per events or free_busy read. */
export const CALENDAR_READ_MAX_DAYS = 62;

/**
 * The arguments of `conduit_calendar`'s reads. Days are `YYYY-MM-DD` in the phone's time zone when it
 * sent one, else UTC. A voice read has no `device`: it covers only the asking phone.
 */
export const calendarReadArgs = z.object({
  action: z.enum(CALENDAR_READ_ACTIONS),
  /** events, free_busy: the first day (default today). */
  start_date: z.iso.date().optional(),
  /** events, free_busy: 1–62 days from start_date (default 1 for free_busy, 7 for events). */
  days: z.int().min(1).max(CALENDAR_READ_MAX_DAYS).optional(),
  /** events: only this calendar (its id from calendars). reminders: only this list. */
  calendar: phoneItemId.optional(),
  list: phoneItemId.optional(),
  /** events, reminders: only items whose title (or location) contains this, case-insensitively. */
  query: z.string().min(1).max(100).optional(),
  /** next: how many upcoming events, 1–20 (default 3). */
  count: z.int().min(1).max(20).optional(),
  /** free_busy: the shortest free slot worth naming, in minutes (default 30). */
  min_minutes: z.int().min(5).max(1440).optional(),
  /** reminders: completed ones too (default false). */
  include_completed: z.boolean().optional(),
  device: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/)
    .optional(),
});

/** `conduit_phone`'s read actions: the status snapshot and Focus, and the alarms and timers Hermes set. */
export const PHONE_READ_ACTIONS = ['status', 'alarms'] as const;

export const phoneReadArgs = z.object({
  action: z.enum(PHONE_READ_ACTIONS),
  device: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/)
    .optional(),
});

const deviceArg = z.string().regex(PHONE_DEVICE_ID_PATTERN).optional();

/** `conduit_contacts`: the people the user picked, all or those matching `query`. */
export const contactsReadArgs = z.object({
  action: z.literal('people'),
  /** Only people whose name, nickname, relation, organization, number or email contains this. */
  query: z.string().min(1).max(100).optional(),
  device: deviceArg,
});

/*
 * Pending changes (the seed, "Writes are changes the phone applies"). Hermes cannot touch the phone's
 * calendar, reminders or alarms: each write action of conduit_calendar and conduit_phone keeps a
 * pending change for one device in the profile's conduit-phone.sqlite3 and nudges the phone with a
 * `phone.changes` relay event (event id `phone:<change id>`), sealed like any notification when the
 * pairing has end-to-end encryption:
 * - `mode: "alert"` (the user approves it on the phone) for every update, delete, completion and
 *   cancel, for adds to a shared calendar or list, and for every add the user has not let Hermes make
 *   without asking;
 * - `mode: "background"` (a silent push; the phone applies it) for an add_event, add_reminder,
 *   set_alarm or set_timer the sharing state allows without asking.
 * The nudge carries no change: the phone fetches the queue with POST /phone/exchange and reports how
 * each went there. A relay that refuses the nudge loses nothing; the phone finds the change on its
 * next exchange. A change not settled within 7 days expires; at most 50 wait per profile.
 */

/** What a write asks the phone to do. */
export const PHONE_CHANGE_KINDS = [
  'add_event',
  'update_event',
  'delete_event',
  'add_reminder',
  'update_reminder',
  'complete_reminder',
  'set_alarm',
  'set_timer',
  'cancel_alarm',
] as const;
export type PhoneChangeKind = (typeof PHONE_CHANGE_KINDS)[number];

/**
 * How a change went, as the phone reports it: `applied` as asked, `edited` (the user changed it before
 * applying), `dismissed` (the user said no), `failed` (the phone could not apply it: `note` says why),
 * `expired` (it came too late). The host marks a change it still holds after 7 days `expired` itself.
 */
export const PHONE_CHANGE_OUTCOMES = ['applied', 'edited', 'dismissed', 'failed', 'expired'] as const;
export type PhoneChangeOutcome = (typeof PHONE_CHANGE_OUTCOMES)[number];

/**
 * A time as the model names it: `2026-12-10T15:00` (the phone's local time), the same with seconds, an
 * offset or `Z`, or a date alone (`2026-12-10`) for an all-day event or a reminder due on a day.
 */
export const modelTime = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2})?(Z|[+-]\d{2}:\d{2})?)?$/, 'is not a date or time');

const title = z.string().trim().min(1).max(500);
const notes = z.string().max(2000);

/** The write actions of `conduit_calendar`, and `pending` (how the changes went, or one by `id`). */
export const calendarWriteArgs = z.discriminatedUnion('action', [
  z.object({
    action: z.literal('add_event'),
    calendar: phoneItemId,
    title,
    start: modelTime,
    /** Default: an hour after start, or the same day for all-day. */
    end: modelTime.optional(),
    all_day: z.boolean().optional(),
    location: text(500).optional(),
    notes: notes.optional(),
    device: deviceArg,
  }),
  z.object({
    action: z.literal('update_event'),
    event: phoneItemId,
    title: title.optional(),
    start: modelTime.optional(),
    end: modelTime.optional(),
    all_day: z.boolean().optional(),
    location: text(500).optional(),
    notes: notes.optional(),
    device: deviceArg,
  }),
  z.object({ action: z.literal('delete_event'), event: phoneItemId, device: deviceArg }),
  z.object({
    action: z.literal('add_reminder'),
    list: phoneItemId,
    title,
    due: modelTime.optional(),
    priority: z.int().min(0).max(9).optional(),
    notes: notes.optional(),
    device: deviceArg,
  }),
  z.object({
    action: z.literal('update_reminder'),
    reminder: phoneItemId,
    title: title.optional(),
    due: modelTime.optional(),
    priority: z.int().min(0).max(9).optional(),
    notes: notes.optional(),
    device: deviceArg,
  }),
  z.object({ action: z.literal('complete_reminder'), reminder: phoneItemId, device: deviceArg }),
  z.object({ action: z.literal('pending'), id: changeId.optional() }),
]);
export type CalendarWriteArgs = z.output<typeof calendarWriteArgs>;
export const CALENDAR_WRITE_ACTIONS = [
  'add_event',
  'update_event',
  'delete_event',
  'add_reminder',
  'update_reminder',
  'complete_reminder',
  'pending',
] as const;

/** The write actions of `conduit_phone` (plugin 0.30): alarms and timers, as pending changes. */
export const phoneWriteArgs = z.discriminatedUnion('action', [
  z.object({
    action: z.literal('set_alarm'),
    /** A one-off alarm: when it rings (`modelTime` with a time). */
    at: modelTime.optional(),
    /** A repeating (or next-occurrence) alarm: `HH:MM` in the phone's time zone, with `days`. */
    time: clockTime.optional(),
    days: z.array(weekday).min(1).max(7).optional(),
    label: text(100).optional(),
    device: deviceArg,
  }),
  z.object({
    action: z.literal('set_timer'),
    seconds: z.int().min(1).max(86_400),
    label: text(100).optional(),
    device: deviceArg,
  }),
  z.object({ action: z.literal('cancel_alarm'), alarm: phoneItemId, device: deviceArg }),
]);
export type PhoneWriteArgs = z.output<typeof phoneWriteArgs>;
export const PHONE_WRITE_ACTIONS = ['set_alarm', 'set_timer', 'cancel_alarm'] as const;

/** What the phone is asked to do, in Unix seconds; `event_id` and the like are the phone's own ids. */
export const phoneChangeAction = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('add_event'),
    calendar_id: phoneItemId,
    title,
    start: unixS,
    end: unixS,
    all_day: z.boolean(),
    location: text(500).optional(),
    notes: notes.optional(),
  }),
  z.object({
    kind: z.literal('update_event'),
    event_id: phoneItemId,
    /** The fields to change; absent ones stay as they are. */
    title: title.optional(),
    start: unixS.optional(),
    end: unixS.optional(),
    all_day: z.boolean().optional(),
    location: text(500).optional(),
    notes: notes.optional(),
  }),
  z.object({ kind: z.literal('delete_event'), event_id: phoneItemId }),
  z.object({
    kind: z.literal('add_reminder'),
    list_id: phoneItemId,
    title,
    due: unixS.optional(),
    due_all_day: z.boolean(),
    priority: z.int().min(0).max(9).optional(),
    notes: notes.optional(),
  }),
  z.object({
    kind: z.literal('update_reminder'),
    reminder_id: phoneItemId,
    title: title.optional(),
    due: unixS.optional(),
    due_all_day: z.boolean().optional(),
    priority: z.int().min(0).max(9).optional(),
    notes: notes.optional(),
  }),
  z.object({ kind: z.literal('complete_reminder'), reminder_id: phoneItemId }),
  z.object({
    kind: z.literal('set_alarm'),
    label: text(100).optional(),
    /** A one-off alarm (Unix seconds), or `time` with `days` (a repeating one) — exactly one of them. */
    at: unixS.optional(),
    time: clockTime.optional(),
    days: z.array(weekday).max(7).optional(),
  }),
  z.object({ kind: z.literal('set_timer'), seconds: z.int().min(1).max(86_400), label: text(100).optional() }),
  z.object({ kind: z.literal('cancel_alarm'), alarm_id: phoneItemId }),
]);
export type PhoneChangeAction = z.output<typeof phoneChangeAction>;

/** A pending change as the phone receives it. */
export const phoneChange = z.object({
  id: changeId,
  /** True: show it for the user to approve; false: the user lets Hermes do this without asking. */
  ask: z.boolean(),
  /** One plain line the phone can show ("Add “Dentist” to Home, Thu 10 Dec 15:00"). */
  summary: text(300),
  created_at: unixS,
  expires_at: unixS,
  change: phoneChangeAction,
});
export type PhoneChange = z.output<typeof phoneChange>;

/** One outcome the phone reports; the first outcome for a change wins, later ones are ignored. */
export const phoneChangeResult = z.object({
  id: changeId,
  outcome: z.enum(PHONE_CHANGE_OUTCOMES),
  /** The id of the event, reminder or alarm the change made or touched, when there is one. */
  item_id: phoneItemId.optional(),
  /** Why it failed, or what the user changed; plain words for Hermes. */
  note: text(500).optional(),
});

/**
 * POST /phone/exchange (the seed's "one sealed POST /phone/exchange"). The envelope is in the clear;
 * its `ct` is sealed with ChaCha20-Poly1305 under the phone key's own exchange directions,
 * `conduit-phone-v1 exchange device-to-host` for the request and `conduit-phone-v1 exchange
 * host-to-device` for the answer (HKDF-SHA256 as in phone-data.ts), with the associated data
 * `conduit-phone-v1 exchange <op>\n<kid>\n<device_id>\n<exchange_id or call_id>` both ways, so an
 * answer opens only on the device that asked, for that exchange, and a body sealed for one op never
 * opens as the other (nor as an ingest or a /voice-tools call).
 *
 * `op: "changes"`: inside the request, `{exchange_id, results}` (outcomes of changes the phone
 * settled); inside the answer, `{exchange_id, changes, more, settled}`: the device's changes still
 * pending (handed over again on every exchange until the phone reports an outcome; `ask` says whether
 * to ask the user), `more` when others did not fit in the 64 KiB answer (exchange again after settling
 * these), and how many results were taken.
 *
 * `op: "voice"` (plugin 0.29+): a voice mode's read, `{call_id, tool, args, provider}` in and
 * `{call_id, result}` out, answered by the same handlers as POST /voice-tools/call for the phone's
 * tools (conduit_calendar reads, conduit_phone status and alarms, conduit_contacts) and for the asking
 * device only. No write is offered in a call: those are the phone's own tools.
 */
const exchangeId = z.string().regex(PHONE_BATCH_ID_PATTERN);
const exchangeEnvelope = {
  v: z.literal(1),
  device_id: z.string().regex(PHONE_DEVICE_ID_PATTERN),
  kid: z.string().regex(PHONE_KID_PATTERN),
  /** 12 random bytes, base64url. */
  nonce: z.string().regex(/^[A-Za-z0-9_-]{16}$/),
  /** Ciphertext and tag, base64url. */
  ct: z.string().regex(/^[A-Za-z0-9_-]+$/),
};
export const sealedPhoneExchange = z.discriminatedUnion('op', [
  z.object({ ...exchangeEnvelope, op: z.literal('changes'), exchange_id: exchangeId }),
  z.object({ ...exchangeEnvelope, op: z.literal('voice'), call_id: exchangeId }),
]);
export type SealedPhoneExchange = z.output<typeof sealedPhoneExchange>;

/** Inside a changes request's seal. */
export const phoneChangesRequest = z.object({
  exchange_id: exchangeId,
  results: z.array(phoneChangeResult).max(PHONE_LIMITS.resultsPerExchange).default([]),
});
/** Inside a changes answer's seal. */
export const phoneChangesAnswer = z.object({
  exchange_id: exchangeId,
  changes: z.array(phoneChange),
  more: z.boolean(),
  /** Results that settled a change (the rest named unknown or finished changes, and are ignored). */
  settled: z.int(),
});
/** Inside a voice request's seal (the same as a /voice-tools call's). */
export const phoneVoiceRequest = voiceCallPlaintext;
/** Inside a voice answer's seal: the tool's result, `{ok, …}` as the MCP tool answers. */
export const phoneVoiceAnswer = z.object({ call_id: exchangeId, result: z.unknown() });

export const postPhoneExchange = defineRoute({
  method: 'POST',
  path: '/api/plugins/conduit_push/phone/exchange',
  operationId: 'postPhoneExchange',
  summary: 'Hand the phone its pending changes and take their outcomes, or answer a voice read (sealed)',
  description:
    'Sealed both ways with the device’s phone key. `op: "changes"` reports outcomes and fetches the changes ' +
    'still pending for this device; `op: "voice"` runs one read of the phone’s voice tools for this device.',
  tags: ['phone'],
  auth: 'bearer',
  query: profileQuery,
  body: sealedPhoneExchange,
  bodyContentType: 'application/json',
  responses: {
    200: noStoreAnswer('The answer, sealed for the asking device.', sealedPhoneExchange),
    401: unauthorized,
    ...detailBodyRefusals,
    400: detailAnswer('The body or the opened request is refused (its message), or the seal does not open.'),
    404: detailAnswer('op voice: the tool is not one of the phone’s voice tools.'),
    412: detailAnswer('The device id or kid has no phone key here (never agreed, wiped or replaced).'),
    413: detailAnswer('The opened request is over 64 KiB.'),
    429: detailAnswer('More than 60 exchanges a minute for this profile.'),
    500: detailAnswer('An unexpected failure, named by its type only.'),
    503: detailUnavailable('The profile cannot be resolved.'),
  },
});
