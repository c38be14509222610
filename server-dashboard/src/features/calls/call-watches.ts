import path from 'node:path';
import { z } from 'zod';
import { inHours, minuteOfDay, parseHours } from '../../kernel/local-time.js';
import { JsonStateFile } from '../../state/json-state-file.js';
import { CALL_LIMITS, newWatchId, type CallsFile, type CallsState, type CallWatch } from './calls-state.js';

/**
 * Call watches ("call me if the homelab is down for more than 10 minutes"): each is a Hermes cron job
 * named "Call watch: <what>" whose runs check the condition and report it with conduit_watch_report.
 * This module owns `<home>/conduit-call-watches.json` — what each watch job is (its what, for_minutes,
 * hours and unless) and the incident each job is in — and the rules a report is judged by. The file
 * shares conduit-calls.json's lock (calls-state.ts), because a report that decides to call writes both.
 */
export const CALL_WATCHES_FILE = 'conduit-call-watches.json';

export const WATCH_LIMITS = {
  /** Watch jobs a profile holds; each is an agent run every few minutes, so a few are plenty. */
  jobs: 20,
  /** The name Hermes shows is "Call watch: " plus this, within Hermes' 200-character job name. */
  whatMaxChars: 120,
  checkMaxChars: 1000,
  unlessMaxChars: 300,
  /** A day: longer conditions are not "call me when it lasts", they are a report. */
  forMinutesMax: 1440,
  /** Watches one sync may describe (the note's whole list), the same as a profile may hold. */
  syncMax: 20,
  /** The run's sentence, said first on the call: conduit_call_user's reason bound (CALL_LIMITS). */
  sentenceMaxChars: 200,
  /** Bounds on how often a watch runs (minutes): an agent run costs a model call each time. */
  intervalMinMinutes: 2,
  intervalMaxMinutes: 30,
  /**
   * Runs missed before an incident is treated as over: a gateway that was down for that long may have
   * missed the recovery, so what a later run sees is a new incident (and waits for_minutes again).
   */
  missedRunsEndIncident: 3,
} as const;

/**
 * How often a watch checks, from how long the condition must last: about three looks within
 * for_minutes, so a blip shorter than that seldom passes for lasting, but never more often than every
 * 2 minutes (each look is an agent run) nor less often than every 30.
 */
export function checkIntervalMinutes(forMinutes: number): number {
  return Math.min(
    WATCH_LIMITS.intervalMaxMinutes,
    Math.max(WATCH_LIMITS.intervalMinMinutes, Math.ceil(forMinutes / 3)),
  );
}

/** Hermes' schedule grammar for an interval (cron/jobs.py `parse_schedule`: "every 5m"). */
export function scheduleFor(intervalMinutes: number): string {
  return `every ${intervalMinutes}m`;
}

export const WATCH_NAME_PREFIX = 'Call watch: ';

export function watchJobName(what: string): string {
  return `${WATCH_NAME_PREFIX}${what}`;
}

/** The same what is the same watch: compared without case and with runs of spaces collapsed. */
export function sameWhat(a: string, b: string): boolean {
  return normalWhat(a) === normalWhat(b);
}

export function normalWhat(what: string): string {
  return what.trim().replace(/\s+/g, ' ').toLowerCase();
}

/** The what of a job named "Call watch: …" (a watch this or an older plugin wrote), else null. */
export function whatOfJobName(name: string | undefined): string | null {
  if (!name || !name.toLowerCase().startsWith(WATCH_NAME_PREFIX.toLowerCase())) return null;
  const what = name.slice(WATCH_NAME_PREFIX.length).trim();
  return what === '' ? null : what;
}

// The local-time helpers live in the kernel (place rules read days and hours the same way); they are
// re-exported here for the watch code and its tests.
export {
  inHours,
  isTimeZone,
  minuteOfDay,
  parseHours,
  profileTimeZone,
  type HoursWindow,
} from '../../kernel/local-time.js';

/** A watch as Hermes describes it (validated: see `validWatch`). */
export interface WatchSpec {
  what: string;
  check: string;
  for_minutes: number;
  hours: string | null;
  unless: string | null;
}

/** The watch's input as the tool takes it: every field optional, so a sync can describe many. */
export interface WatchInput {
  what?: string | undefined;
  check?: string | undefined;
  for_minutes?: number | undefined;
  hours?: string | undefined;
  unless?: string | undefined;
}

/** A clean watch, or why not (in words the model can act on). */
export function validWatch(input: WatchInput): WatchSpec | { error: string } {
  const what = input.what?.trim().replace(/\s+/g, ' ') ?? '';
  if (!what || what.length > WATCH_LIMITS.whatMaxChars) {
    return { error: `what must name the condition in up to ${WATCH_LIMITS.whatMaxChars} characters` };
  }
  const check = input.check?.trim() ?? '';
  if (!check || check.length > WATCH_LIMITS.checkMaxChars) {
    return { error: `check must say how a run checks it, in up to ${WATCH_LIMITS.checkMaxChars} characters` };
  }
  const forMinutes = input.for_minutes;
  if (
    forMinutes === undefined ||
    !Number.isInteger(forMinutes) ||
    forMinutes < 0 ||
    forMinutes > WATCH_LIMITS.forMinutesMax
  ) {
    return { error: `for_minutes must be a whole number from 0 to ${WATCH_LIMITS.forMinutesMax}` };
  }
  const hours = input.hours?.trim() || null;
  if (hours !== null && !parseHours(hours)) {
    return { error: 'hours must be HH:MM-HH:MM (24-hour, start and end different), e.g. 08:00-22:00' };
  }
  const unless = input.unless?.trim() || null;
  if (unless !== null && unless.length > WATCH_LIMITS.unlessMaxChars) {
    return { error: `unless must be up to ${WATCH_LIMITS.unlessMaxChars} characters` };
  }
  return { what, check, for_minutes: forMinutes, hours, unless };
}

/**
 * The fixed prompt every run of the watch gets. The host, not the run, keeps the incident and decides
 * whether to call, so the run only checks and reports, then replies what the report tells it.
 */
export function watchRunPrompt(spec: WatchSpec): string {
  const lines = [
    `This is a Conduit call watch. The user asked to be phoned if this happens: ${spec.what}.`,
    `How to check: ${spec.check}`,
  ];
  if (spec.unless) lines.push(`It does not count as happening if: ${spec.unless}`);
  lines.push(
    '',
    'Check it now. Then call conduit_watch_report once, with happening (true or false) and sentence: one ' +
      'short spoken sentence saying what you found (the user hears it first if they are called).',
    'Finally reply with exactly the text conduit_watch_report gives you in reply, and nothing else; it is ' +
      '[SILENT] while there is nothing to tell the user.',
    'Do not call conduit_call_user in this run: the watch decides when to call.',
  );
  return lines.join('\n');
}

const jobShape = z.object({
  job_id: z.string(),
  what: z.string(),
  check: z.string(),
  for_minutes: z.number(),
  hours: z.string().nullable(),
  unless: z.string().nullable(),
  interval_min: z.number(),
  created_at: z.number(),
  updated_at: z.number(),
});
export type WatchJob = z.infer<typeof jobShape>;

const incidentShape = z.object({
  /** The first run that saw it happening (UNIX seconds). */
  started_at: z.number(),
  /** The last run that reported (happening). */
  last_seen: z.number(),
  /** When this incident called (at most once); null until then. */
  called_at: z.number().nullable(),
});
export type Incident = z.infer<typeof incidentShape>;

/** The file; fields this version does not know are kept as they are. */
const watchesFileShape = z.looseObject({
  v: z.literal(1),
  jobs: z.array(jobShape).default([]),
  /** By job id: the incident the job is in, absent while nothing is happening. */
  incidents: z.record(z.string(), incidentShape).default({}),
});
export type CallWatchesFile = z.infer<typeof watchesFileShape>;
export const callWatchesFileShape = watchesFileShape;

export function emptyWatchesFile(): CallWatchesFile {
  return { v: 1, jobs: [], incidents: {} };
}

/** The file with `job` recorded (replacing any record of the same job or the same what). */
export function withJob(file: CallWatchesFile, job: WatchJob): CallWatchesFile {
  const others = file.jobs.filter((known) => known.job_id !== job.job_id && !sameWhat(known.what, job.what));
  const dropped = file.jobs.filter((known) => !others.includes(known) && known.job_id !== job.job_id);
  const incidents = { ...file.incidents };
  for (const gone of dropped) delete incidents[gone.job_id];
  return { ...file, jobs: [...others, job], incidents };
}

export function withoutJob(file: CallWatchesFile, jobId: string): CallWatchesFile {
  const incidents = { ...file.incidents };
  delete incidents[jobId];
  return { ...file, jobs: file.jobs.filter((job) => job.job_id !== jobId), incidents };
}

/** What conduit_watch_report tells the run, and whether its turn end rings. */
export type ReportAnswer =
  { status: 'reported'; reply: string; calling: boolean; note: string } | { status: 'refused'; message: string };

/** What a run replies when there is nothing to tell the user (Hermes' cron silence marker). */
export const SILENT = '[SILENT]';

export interface ReportInput {
  happening: boolean;
  sentence: string;
}

/**
 * Judges one run's report against the job's incident, pure: returns both files changed and the answer.
 * - not happening: the incident (if any) is over; a run after a call tells the user it is over;
 * - happening, first seen (or after runs were missed): a new incident starts, and waits;
 * - happening for for_minutes, within the hours, not yet called: it calls once, when this run's turn
 *   ends, through the same watch path as conduit_call_user (so limits, presence, calls off and a relay
 *   refusal send the run's reply as the usual push instead);
 * - otherwise it waits: [SILENT].
 */
export function judgeReport(
  calls: CallsFile,
  watches: CallWatchesFile,
  job: WatchJob,
  report: ReportInput,
  run: { sessionId: string; nowS: number; inHours: boolean },
): { calls: CallsFile; watches: CallWatchesFile; answer: ReportAnswer } {
  const { nowS } = run;
  const current = watches.incidents[job.job_id];
  const missedAfterS = (job.interval_min * WATCH_LIMITS.missedRunsEndIncident + 5) * 60;
  const ongoing = current !== undefined && nowS - current.last_seen <= missedAfterS ? current : undefined;
  const incidents = { ...watches.incidents };

  if (!report.happening) {
    delete incidents[job.job_id];
    const next = { ...watches, incidents };
    if (ongoing !== undefined && ongoing.called_at !== null) {
      return {
        calls,
        watches: next,
        answer: {
          status: 'reported',
          reply: report.sentence,
          calling: false,
          note: 'The incident is over; your reply tells the user, who was called about it.',
        },
      };
    }
    return {
      calls,
      watches: current === undefined ? watches : next,
      answer: { status: 'reported', reply: SILENT, calling: false, note: 'Nothing is happening.' },
    };
  }

  const incident: Incident = ongoing
    ? { ...ongoing, last_seen: nowS }
    : { started_at: nowS, last_seen: nowS, called_at: null };
  incidents[job.job_id] = incident;
  const waiting = (note: string) => ({
    calls,
    watches: { ...watches, incidents },
    answer: { status: 'reported' as const, reply: SILENT, calling: false, note },
  });
  if (incident.called_at !== null) return waiting('Already called about this incident; it calls once.');
  const lastedS = nowS - incident.started_at;
  if (lastedS < job.for_minutes * 60) {
    return waiting(`Happening for ${Math.floor(lastedS / 60)} of the ${job.for_minutes} minutes it must last.`);
  }
  if (!run.inHours) return waiting(`Outside the hours it may call (${job.hours ?? ''}); it calls once they begin.`);

  incidents[job.job_id] = { ...incident, called_at: nowS };
  const reason = report.sentence;
  const existing = calls.watches.find((watch) => watch.session_ids.includes(run.sessionId));
  let nextCalls: CallsFile;
  let note = 'The user is called when this run ends, with your sentence said first.';
  if (existing) {
    const updated: CallWatch = { ...existing, reason, asked: true };
    nextCalls = { ...calls, watches: calls.watches.map((watch) => (watch === existing ? updated : watch)) };
  } else if (calls.watches.length >= CALL_LIMITS.watches) {
    // No room for the call: the reply still goes out as the usual notification.
    nextCalls = calls;
    note = 'Too many jobs are already waiting to call; the user gets your reply as a notification.';
  } else {
    const watch: CallWatch = {
      id: newWatchId(),
      session_ids: [run.sessionId],
      title: job.what.slice(0, CALL_LIMITS.titleMaxChars),
      created_at: nowS,
      expires_at: nowS + CALL_LIMITS.watchTtlS,
      hold_until: null,
      pending: null,
      origin: 'tool',
      reason,
      // The user asked for the watch: it rings under "call when I ask", without the rules.
      asked: true,
    };
    nextCalls = { ...calls, watches: [...calls.watches, watch] };
  }
  return {
    calls: nextCalls,
    watches: { ...watches, incidents },
    answer: { status: 'reported', reply: reason, calling: true, note },
  };
}

/**
 * One profile's conduit-call-watches.json (mode 0600, replaced whole), changed under conduit-calls.json's
 * lock so a report that calls writes the incident and the call's watch in one step.
 */
export class CallWatchesState {
  private readonly json: JsonStateFile<CallWatchesFile>;

  constructor(private readonly calls: CallsState) {
    this.json = new JsonStateFile(path.join(calls.home, CALL_WATCHES_FILE), watchesFileShape, emptyWatchesFile);
  }

  read(): Promise<CallWatchesFile> {
    return this.json.read();
  }

  update<T>(
    nowS: number,
    change: (calls: CallsFile, watches: CallWatchesFile) => { calls: CallsFile; watches: CallWatchesFile; result: T },
  ): Promise<T> {
    return this.calls.updateWith(nowS, this.json, (calls, watches) => {
      const next = change(calls, watches);
      return { calls: next.calls, other: next.watches, result: next.result };
    });
  }

  /** Whether `jobId` is one of this profile's call watches (its runs report instead of calling). */
  async isWatchJob(jobId: string): Promise<boolean> {
    return (await this.read()).jobs.some((job) => job.job_id === jobId);
  }
}

/**
 * conduit_watch_report for the run of job `jobId` in `sessionId`: judged against the job's incident
 * under the lock. A job that is not one of this profile's call watches is refused (a watch set up by an
 * older plugin keeps its own state and calls conduit_call_user itself).
 */
export async function reportWatch(
  state: CallWatchesState,
  run: { jobId: string; sessionId: string; nowMs: number; timeZone: string },
  report: ReportInput,
): Promise<ReportAnswer> {
  const nowS = run.nowMs / 1000;
  return state.update<ReportAnswer>(nowS, (calls, watches) => {
    const job = watches.jobs.find((candidate) => candidate.job_id === run.jobId);
    if (!job) {
      return {
        calls,
        watches,
        result: {
          status: 'refused',
          message:
            "This run is not one of this profile's Conduit call watches, so there is nothing to report to. Follow the job's own instructions.",
        },
      };
    }
    const window = job.hours ? parseHours(job.hours) : null;
    const inside = window === null || inHours(window, minuteOfDay(run.nowMs, run.timeZone));
    const judged = judgeReport(calls, watches, job, report, { sessionId: run.sessionId, nowS, inHours: inside });
    return { calls: judged.calls, watches: judged.watches, result: judged.answer };
  });
}
