import { z } from 'zod';
import { PHONE_DATA_LIMITS, phoneDataRoutes } from './phone-data.js';

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
 * Writes (pending changes), alarms and contacts are later slices with their own fields.
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
  }),
  reminders: z.object({
    on: z.boolean(),
    modes: z.record(phoneItemId, phoneSourceMode).default({}),
  }),
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

/** The read actions of `conduit_calendar` (the writes are the pending-changes slice). */
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

/** `conduit_phone`'s actions in this slice (alarms join with plugin 0.30). */
export const phoneReadArgs = z.object({
  action: z.enum(['status']),
  device: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/)
    .optional(),
});
