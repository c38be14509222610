import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { z } from 'zod';
import {
  CALL_AVOID_PLACES_MAX,
  CALL_RULES_MAX,
  CALL_SETTING_BOUNDS,
  callSettings,
} from '@conduit/contracts/dashboard/calls';
import { withFileLock } from '../../credentials/file-lock.js';
import { JsonStateFile } from '../../state/json-state-file.js';

/**
 * A profile's Calls from Hermes state, `<home>/conduit-calls.json` (mode 0600, written whole to a
 * temporary file and renamed), in the reference's shape (EVENTS.md, "Call requests"):
 * `{v:1, settings, watches, history, ends, seeded, presence_until, outcomes, told}`. The routes and the
 * turn-end path change it under one lock file, so a watch is consumed once however many processes
 * see the same turn end. Times are UNIX seconds, as the reference writes them.
 */
export const CALLS_FILE = 'conduit-calls.json';

export const CALL_LIMITS = {
  /** Watches a profile may hold at once. */
  watches: 20,
  watchTtlS: 24 * 3600,
  holdMaxS: 600,
  sessionIdsPerWatch: 4,
  titleMaxChars: 120,
  reasonMaxChars: 200,
  /** Turn ends remembered (while calls are on) for `ended_within_s`. */
  endsTtlS: 30 * 60,
  endsKept: 200,
  /** Declined and missed calls waiting for the next turn of their sessions. */
  outcomesKept: 20,
  outcomeTtlS: 24 * 3600,
  /** Call ids already told to Hermes, so a late retry of the report is not told twice. */
  toldKept: 100,
} as const;

export type CallSettings = z.infer<typeof callSettings>;

export const DEFAULT_CALL_SETTINGS: CallSettings = {
  enabled: false,
  when_asked: true,
  decides: false,
  alerts: false,
  min_gap_s: 120,
  per_hour: 6,
  per_day: 20,
  rules: '',
  avoid_places: [],
  avoid_unknown_place: false,
};

export type TurnOutcome = 'done' | 'failed' | 'stopped';

const watchShape = z.object({
  id: z.string(),
  session_ids: z.array(z.string()),
  title: z.string().nullable(),
  created_at: z.number(),
  expires_at: z.number(),
  /** Held until then (a Live Voice call goes on); null when not held. */
  hold_until: z.number().nullable(),
  /** The outcome of a turn that ended while the watch was held. */
  pending: z.enum(['done', 'failed', 'stopped']).nullable(),
  origin: z.enum(['conduit', 'tool', 'alert']),
  reason: z.string().nullable(),
  asked: z.boolean(),
});
export type CallWatch = z.infer<typeof watchShape>;

const endShape = z.object({ session_id: z.string(), at: z.number(), outcome: z.enum(['done', 'failed', 'stopped']) });

const outcomeShape = z.object({
  call_id: z.string(),
  session_ids: z.array(z.string()),
  outcome: z.enum(['declined', 'missed']),
  kind: z.string().nullable(),
  title: z.string().nullable(),
  reason: z.string().nullable(),
  /** When the call was declined or missed (now − age_s when reported). */
  at: z.number(),
  received_at: z.number(),
});
export type CallOutcomeRecord = z.infer<typeof outcomeShape>;

/** The file; fields this version does not know are kept as they are. */
const callsFileShape = z.looseObject({
  v: z.literal(1),
  settings: callSettings.partial().default({}),
  watches: z.array(watchShape).default([]),
  /** When calls went out, for the gap, hour and day limits. */
  history: z.array(z.number()).default([]),
  ends: z.array(endShape).default([]),
  seeded: z.array(z.unknown()).default([]),
  presence_until: z.number().nullable().default(null),
  outcomes: z.array(outcomeShape).default([]),
  told: z.array(z.string()).default([]),
});
export type CallsFile = z.infer<typeof callsFileShape>;

function emptyFile(): CallsFile {
  return {
    v: 1,
    settings: {},
    watches: [],
    history: [],
    ends: [],
    seeded: [],
    presence_until: null,
    outcomes: [],
    told: [],
  };
}

/** The settings in force: the file's, with the defaults for what it leaves out or holds out of range. */
export function settingsOf(file: CallsFile): CallSettings {
  const merged = { ...DEFAULT_CALL_SETTINGS, ...file.settings };
  for (const [key, range] of Object.entries(CALL_SETTING_BOUNDS) as [
    keyof typeof CALL_SETTING_BOUNDS,
    { min: number; max: number },
  ][]) {
    if (merged[key] < range.min || merged[key] > range.max) merged[key] = DEFAULT_CALL_SETTINGS[key];
  }
  if (merged.rules.length > CALL_RULES_MAX) merged.rules = merged.rules.slice(0, CALL_RULES_MAX);
  if (merged.avoid_places.length > CALL_AVOID_PLACES_MAX) {
    merged.avoid_places = merged.avoid_places.slice(0, CALL_AVOID_PLACES_MAX);
  }
  return merged;
}

/** A new watch id: 24 lowercase hex digits. */
export function newWatchId(): string {
  return randomBytes(12).toString('hex');
}

/** Drops what has expired: watches past their 24 h, old turn ends, outcomes past a day, extra told ids. */
export function prune(file: CallsFile, nowS: number): CallsFile {
  return {
    ...file,
    watches: file.watches.filter((watch) => watch.expires_at > nowS),
    history: file.history.filter((at) => at > nowS - 24 * 3600),
    ends: file.ends.filter((end) => end.at > nowS - CALL_LIMITS.endsTtlS).slice(-CALL_LIMITS.endsKept),
    outcomes: file.outcomes
      .filter((outcome) => outcome.received_at > nowS - CALL_LIMITS.outcomeTtlS)
      .slice(-CALL_LIMITS.outcomesKept),
    told: file.told.slice(-CALL_LIMITS.toldKept),
    presence_until: file.presence_until !== null && file.presence_until > nowS ? file.presence_until : null,
  };
}

/**
 * One profile's conduit-calls.json. Reads take no lock (the file is replaced whole by rename, so a
 * reader sees one version or the other); changes hold `.conduit-calls.json.wlock`, an O_EXCL lock
 * file every writer on this host takes (kernel's file-lock.ts), so the routes and the turn-end path
 * never lose each other's change.
 */
export class CallsState {
  readonly file: string;
  private readonly lock: string;
  private readonly json: JsonStateFile<CallsFile>;

  constructor(readonly home: string) {
    this.file = path.join(home, CALLS_FILE);
    this.lock = path.join(home, `.${CALLS_FILE}.wlock`);
    this.json = new JsonStateFile(this.file, callsFileShape, emptyFile);
  }

  async read(nowS: number): Promise<CallsFile> {
    return prune(await this.readRaw(), nowS);
  }

  /**
   * Reads, changes and writes under the lock; `change` returns the new file (the one it was given when
   * nothing changed, and then nothing is written) and what to answer.
   */
  async update<T>(nowS: number, change: (current: CallsFile) => { file: CallsFile; result: T }): Promise<T> {
    return withFileLock(this.lock, async () => {
      const current = prune(await this.readRaw(), nowS);
      const { file, result } = change(current);
      // Unchanged (a turn end of an unwatched chat, a sweep with nothing due): nothing is written.
      if (file !== current) await this.write(file);
      return result;
    });
  }

  /**
   * Changes this file and `other` (a state file of the same profile that shares this lock, such as
   * conduit-call-watches.json) together under the lock, so a decision that writes both is one step.
   * Each is written only when `change` returns a new value for it.
   */
  async updateWith<S, T>(
    nowS: number,
    other: JsonStateFile<S>,
    change: (calls: CallsFile, other: S) => { calls: CallsFile; other: S; result: T },
  ): Promise<T> {
    return withFileLock(this.lock, async () => {
      const current = prune(await this.readRaw(), nowS);
      const otherCurrent = await other.read();
      const next = change(current, otherCurrent);
      if (next.other !== otherCurrent) await other.write(next.other);
      if (next.calls !== current) await this.write(next.calls);
      return next.result;
    });
  }

  private readRaw(): Promise<CallsFile> {
    return this.json.read();
  }

  private write(file: CallsFile): Promise<void> {
    return this.json.write(file);
  }
}

/**
 * Records that a turn of `sessionId` ended (the turn-end path calls this while calls are on), so a
 * watch asked for just after (`ended_within_s`) answers `ended`. Pure: returns the changed file.
 */
export function withTurnEnd(file: CallsFile, sessionId: string, outcome: TurnOutcome, nowS: number): CallsFile {
  if (!settingsOf(file).enabled) return file;
  return { ...file, ends: [...file.ends, { session_id: sessionId, at: nowS, outcome }].slice(-CALL_LIMITS.endsKept) };
}
