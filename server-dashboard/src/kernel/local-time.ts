import { readProfileFiles } from './profile-files.js';
import type { ProfileScope } from '../notifier/notifier.js';

/**
 * Local time as a profile's Hermes keeps it: the timezone its schedules run in, and the `HH:MM-HH:MM`
 * windows call watches and place rules keep to. One home, so a watch's hours and a rule's hours can
 * never read the clock differently.
 */

/** `HH:MM-HH:MM`, hours a call watch or a place rule keeps to; the end may be past midnight ("22:00-07:00"). */
const HOURS = /^([01]\d|2[0-3]):([0-5]\d)-([01]\d|2[0-3]):([0-5]\d)$/;

export interface HoursWindow {
  /** Minutes after midnight, local time of the profile's timezone. */
  startMin: number;
  endMin: number;
}

export function parseHours(hours: string): HoursWindow | null {
  const m = HOURS.exec(hours.trim());
  if (!m) return null;
  const startMin = Number(m[1]) * 60 + Number(m[2]);
  const endMin = Number(m[3]) * 60 + Number(m[4]);
  // An empty window would mean "never call": refused rather than silently never ringing.
  if (startMin === endMin) return null;
  return { startMin, endMin };
}

/** Whether `minuteOfDay` falls in the window (start inclusive, end exclusive; wrapping past midnight). */
export function inHours(window: HoursWindow, minuteOfDay: number): boolean {
  return window.startMin < window.endMin
    ? minuteOfDay >= window.startMin && minuteOfDay < window.endMin
    : minuteOfDay >= window.startMin || minuteOfDay < window.endMin;
}

/** The minute of the day at `atMs` in `timeZone` (an IANA name Hermes uses for its own schedules). */
export function minuteOfDay(atMs: number, timeZone: string): number {
  const parts = new Intl.DateTimeFormat('en-GB', {
    timeZone,
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
  }).formatToParts(new Date(atMs));
  const hour = Number(parts.find((part) => part.type === 'hour')?.value ?? 0);
  const minute = Number(parts.find((part) => part.type === 'minute')?.value ?? 0);
  return hour * 60 + minute;
}

/**
 * The timezone a profile's hours are read in (call watches, place rules): Hermes' own for its schedules (HERMES_TIMEZONE, then
 * config.yaml `timezone`), else this machine's, as Hermes falls back to server-local time.
 */
export async function profileTimeZone(profile: ProfileScope): Promise<string> {
  const files = await readProfileFiles(profile, {});
  const configured = typeof files.config.timezone === 'string' ? files.config.timezone.trim() : '';
  for (const name of [files.env('HERMES_TIMEZONE'), process.env.HERMES_TIMEZONE?.trim(), configured]) {
    if (name && isTimeZone(name)) return name;
  }
  return Intl.DateTimeFormat().resolvedOptions().timeZone;
}

export function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en-GB', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}
