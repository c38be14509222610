import path from 'node:path';
import { z } from 'zod';
import {
  PLACE_RULE_DAYS,
  PLACE_RULE_LIMITS,
  placeRuleDay,
  placeRuleMove,
  placeRuleRepeat,
  type PlaceRule,
} from '@conduit/contracts/dashboard/location';
import { inHours, minuteOfDay, parseHours } from '../../kernel/local-time.js';
import { JsonStateFile } from '../../state/json-state-file.js';

/**
 * A profile's place rules, `<home>/conduit-place-rules.json` (0600, beside conduit-location.sqlite3):
 * what each rule's Hermes cron job is for and when it last fired. Kept out of the location store on
 * purpose: a rule belongs to the profile, not to a device, so re-keying or wiping a phone's location
 * must not drop the user's rules (the rules only read the events the store keeps).
 */
export const PLACE_RULES_FILE = 'conduit-place-rules.json';

export const PLACE_RULE_NAME_PREFIX = 'Place rule: ';

const ruleShape = z.object({
  job_id: z.string(),
  what: z.string(),
  place_id: z.string().nullable(),
  place_name: z.string().nullable(),
  move: placeRuleMove,
  days: z.array(placeRuleDay),
  hours: z.string().nullable(),
  repeat: placeRuleRepeat,
  task: z.string(),
  created_at: z.number(),
  updated_at: z.number(),
  last_fired_at: z.number().nullable(),
});
export type StoredPlaceRule = z.infer<typeof ruleShape>;

const fileShape = z.looseObject({ v: z.literal(1), rules: z.array(ruleShape).default([]) });
export type PlaceRulesFile = z.infer<typeof fileShape>;

export function placeRulesFile(home: string): JsonStateFile<PlaceRulesFile> {
  return new JsonStateFile(path.join(home, PLACE_RULES_FILE), fileShape, () => ({ v: 1 as const, rules: [] }));
}

/** A rule as GET /location/rules and the tool answer it. */
export function ruleView(rule: StoredPlaceRule): PlaceRule {
  return {
    id: rule.job_id,
    what: rule.what,
    place: rule.place_id === null ? null : { id: rule.place_id, name: rule.place_name ?? rule.place_id },
    move: rule.move,
    days: rule.days,
    hours: rule.hours,
    repeat: rule.repeat,
    task: rule.task,
    created_at: rule.created_at,
    updated_at: rule.updated_at,
    last_fired_at: rule.last_fired_at,
  };
}

export function placeRuleJobName(what: string): string {
  return `${PLACE_RULE_NAME_PREFIX}${what}`;
}

/** The same what is the same rule: compared without case and with runs of spaces collapsed. */
export function sameRuleWhat(a: string, b: string): boolean {
  const normal = (what: string) => what.trim().replace(/\s+/g, ' ').toLowerCase();
  return normal(a) === normal(b);
}

/** The rule's fields as set_rule takes them (the place resolved to a saved place, or any). */
export interface PlaceRuleSpec {
  what: string;
  place: { id: string; name: string } | null;
  move: z.infer<typeof placeRuleMove>;
  days: z.infer<typeof placeRuleDay>[];
  hours: string | null;
  repeat: z.infer<typeof placeRuleRepeat>;
  task: string;
}

/** The what, task and hours checked; a clean value or the reason it is refused. */
export function validRuleText(input: {
  what?: string | undefined;
  task?: string | undefined;
  hours?: string | undefined;
}): { what: string; task: string; hours: string | null } | { error: string } {
  const what = input.what?.trim().replace(/\s+/g, ' ') ?? '';
  if (!what) return { error: 'set_rule needs what: a short name for the rule, in the user’s words.' };
  if (what.length > PLACE_RULE_LIMITS.whatMaxChars) {
    return { error: `what must be at most ${PLACE_RULE_LIMITS.whatMaxChars} characters.` };
  }
  const task = input.task?.trim() ?? '';
  if (!task) return { error: 'set_rule needs task: what the run should do when the rule fires.' };
  if (task.length > PLACE_RULE_LIMITS.taskMaxChars) {
    return { error: `task must be at most ${PLACE_RULE_LIMITS.taskMaxChars} characters.` };
  }
  const hours = input.hours?.trim() || null;
  if (hours !== null && parseHours(hours) === null) {
    return { error: 'hours must be HH:MM-HH:MM (24-hour, start and end different), such as 07:00-10:00.' };
  }
  return { what, task, hours };
}

const MOVE_WORDS = { arrive: 'arrives at', leave: 'leaves', either: 'arrives at or leaves' } as const;

/**
 * The job's prompt: the task, framed so a run knows why it runs. The line naming the event that fired
 * it is added at each trigger (`triggeredPrompt`), since Hermes' run route takes no body.
 */
export function placeRulePrompt(spec: PlaceRuleSpec): string {
  const where = spec.place ? spec.place.name : 'any saved place';
  const when = [
    spec.days.length > 0 && spec.days.length < 7 ? `on ${spec.days.join(', ')}` : null,
    spec.hours ? `between ${spec.hours}` : null,
  ]
    .filter((part): part is string => part !== null)
    .join(' ');
  return [
    `This is a Conduit place rule ("${spec.what}"): it runs when the user ${MOVE_WORDS[spec.move]} ${where}` +
      `${when ? ` ${when}` : ''}, as their iPhone shares it. Do the task below now; conduit_location has more if you need it.`,
    '',
    `Task: ${spec.task}`,
  ].join('\n');
}

/** The prompt of one triggered run: the rule's prompt and a line naming the place and the move. */
export function triggeredPrompt(rule: StoredPlaceRule, event: { type: 'arrive' | 'leave'; place: string }): string {
  const spec: PlaceRuleSpec = {
    what: rule.what,
    place: rule.place_id === null ? null : { id: rule.place_id, name: rule.place_name ?? rule.place_id },
    move: rule.move,
    days: rule.days,
    hours: rule.hours,
    repeat: rule.repeat,
    task: rule.task,
  };
  const moved = event.type === 'arrive' ? `arrived at ${event.place}` : `left ${event.place}`;
  return `${placeRulePrompt(spec)}\n\nTriggered now: the user ${moved}.`;
}

/** The weekday and the date (`YYYY-MM-DD`) of `atS` in `timeZone`. */
export function localDay(atS: number, timeZone: string): { day: (typeof PLACE_RULE_DAYS)[number]; date: string } {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone,
    weekday: 'short',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
  }).formatToParts(new Date(atS * 1000));
  const part = (type: string) => parts.find((entry) => entry.type === type)?.value ?? '';
  const day = part('weekday').slice(0, 3).toLowerCase() as (typeof PLACE_RULE_DAYS)[number];
  return { day, date: `${part('year')}-${part('month')}-${part('day')}` };
}

/** An arrive or leave event as a rule reads it. */
export interface RuleEvent {
  type: 'arrive' | 'leave';
  /** Null at a private place. */
  placeId: string | null;
  /** Unix seconds on the phone. */
  at: number;
}

/**
 * Why a rule does not fire for `event` (its move, place, day or hours), or null when it matches. Days
 * and hours are read at the event's own time in the profile's timezone, not when it arrived.
 */
export function ruleMismatch(rule: StoredPlaceRule, event: RuleEvent, timeZone: string): string | null {
  if (rule.move !== 'either' && rule.move !== event.type) return 'move';
  // A specific place never matches a private one: the host keeps no id for it.
  if (rule.place_id !== null && rule.place_id !== event.placeId) return 'place';
  if (rule.days.length > 0 && !rule.days.includes(localDay(event.at, timeZone).day)) return 'day';
  const window = rule.hours === null ? null : parseHours(rule.hours);
  if (window && !inHours(window, minuteOfDay(event.at * 1000, timeZone))) return 'hours';
  return null;
}

/**
 * Whether the rule's repeat lets it fire at `nowS`: `daily` once a local day (in the profile's
 * timezone, so "when I leave home on weekdays" fires once each morning), `every` at least 30 minutes
 * after it last fired (so a phone bouncing at a geofence edge does not run the task again and again).
 */
export function repeatAllows(rule: StoredPlaceRule, nowS: number, timeZone: string): boolean {
  if (rule.last_fired_at === null) return true;
  if (rule.repeat === 'every') return nowS - rule.last_fired_at >= PLACE_RULE_LIMITS.everyMinS;
  return localDay(rule.last_fired_at, timeZone).date !== localDay(nowS, timeZone).date;
}
