import { z } from 'zod';
import type { HermesApi } from '@conduit/contracts/hermes/api-client';
import type { HermesJob, HermesJobResult } from '@conduit/contracts/hermes/jobs';
import type { Clock } from '../../clock.js';
import type { ProfileScope } from '../../notifier/notifier.js';
import {
  WATCH_LIMITS,
  checkIntervalMinutes,
  normalWhat,
  sameWhat,
  scheduleFor,
  validWatch,
  watchJobName,
  watchRunPrompt,
  whatOfJobName,
  withJob,
  withoutJob,
  type CallWatchesState,
  type WatchInput,
  type WatchJob,
  type WatchSpec,
} from './call-watches.js';

/**
 * conduit_call_watch: Hermes describes a watch and the host writes its cron job through Hermes' own
 * scheduling surface (the API server's `/api/jobs`), named "Call watch: <what>", checked every few
 * minutes with the fixed run prompt (call-watches.ts). The same what is the same watch, so asking
 * again changes the job instead of adding one; a job of that name an older plugin wrote is taken over
 * (its runs move onto conduit_watch_report). `sync` takes every watch the user's "What's worth a call"
 * note describes, changes and adds jobs to match, and lists the watches the note no longer mentions
 * without removing them: Hermes asks the user first, then removes one with `remove`.
 */
export const CALL_WATCH_TOOL = 'conduit_call_watch';
export const WATCH_REPORT_TOOL = 'conduit_watch_report';

/** The jobs methods this tool uses, so a test or another Hermes surface can stand in. */
export type HermesJobsApi = Pick<HermesApi, 'listJobs' | 'createJob' | 'updateJob' | 'deleteJob'>;

/** How long a "this Hermes has scheduled jobs" answer is trusted before asking again (tool listing). */
const JOBS_PROBE_TTL_MS = 60_000;

const watchFields = {
  what: z
    .string()
    .max(WATCH_LIMITS.whatMaxChars)
    .describe('What to call about, as the user put it: "the homelab is down". The same what is the same watch.'),
  check: z
    .string()
    .max(WATCH_LIMITS.checkMaxChars)
    .describe('How a run checks it: the command, URL, file or tool to look at, and what counts as happening.'),
  for_minutes: z
    .number()
    .int()
    .min(0)
    .max(WATCH_LIMITS.forMinutesMax)
    .describe('How many minutes it must go on before the user is called; 0 calls as soon as a run sees it.'),
  hours: z
    .string()
    .max(11)
    .optional()
    .describe(
      'Only call between these local times, HH:MM-HH:MM (may pass midnight: 22:00-07:00). Leave out for any time.',
    ),
  unless: z
    .string()
    .max(WATCH_LIMITS.unlessMaxChars)
    .optional()
    .describe('When it does not count even though it happens, in the user\u2019s words: "during the Sunday backup".'),
};

export const callWatchInput = {
  what: watchFields.what.optional(),
  check: watchFields.check.optional(),
  for_minutes: watchFields.for_minutes.optional(),
  hours: watchFields.hours,
  unless: watchFields.unless,
  id: z
    .string()
    .max(64)
    .optional()
    .describe('A Hermes cron job id: set this job up as the watch (a watch made earlier, by id).'),
  sync: z
    .array(z.object(watchFields).partial({ hours: true, unless: true }))
    .max(WATCH_LIMITS.syncMax)
    .optional()
    .describe(
      'Instead of one watch: every watch the user\u2019s "What\u2019s worth a call" note describes. Changes and adds watches to match, and lists the ones the note no longer mentions without removing them.',
    ),
  remove: z.boolean().optional().describe('Remove the watch named by what (or id). Only after the user said to.'),
};

export const CALL_WATCH_DESCRIPTION =
  'Set up a call watch: when the user asks to be phoned if something happens ("call me if the homelab is down for more than 10 minutes"), describe it here and Conduit writes a Hermes cron job that checks it every few minutes and phones the user once per incident. Only describe the watch (what, check, for_minutes, optional hours and unless); do not write the cron job yourself. Asking again with the same what changes the watch. With sync, pass every watch the user\u2019s "What\u2019s worth a call" note describes; watches the note no longer mentions come back in not_in_note: ask the user before removing one with remove: true. Read the skill calling-the-user for how watches work.';

export const watchReportInput = {
  happening: z.boolean().describe('Whether what the watch looks for is happening now.'),
  sentence: z
    .string()
    .min(1)
    .max(WATCH_LIMITS.sentenceMaxChars)
    .describe('One short spoken sentence saying what you found: "The homelab has not answered for 12 minutes."'),
  _conduit_context: z.string().optional().describe('Filled in by the Conduit host for each call; leave it out.'),
};

export const WATCH_REPORT_DESCRIPTION =
  'Only in a run of a Conduit call watch (a cron job named "Call watch: …"): report whether what it watches is happening, with one spoken sentence about what you found. Conduit keeps the incident, waits out how long it must last and the allowed hours, and phones the user once per incident. Reply with exactly the reply text this tool answers ([SILENT] while there is nothing to tell the user).';

export interface WatchSummary {
  id: string;
  name: string;
  what: string;
  checks_every_minutes: number;
  for_minutes: number;
  hours: string | null;
  unless: string | null;
}

export type CallWatchAnswer =
  | ({ status: 'watching'; action: 'created' | 'updated' } & WatchSummary)
  | { status: 'synced'; watches: WatchSummary[]; not_in_note: { id: string; what: string }[]; next?: string }
  | { status: 'removed'; id: string; what: string | null }
  | { status: 'refused'; message: string }
  | { status: 'failed'; message: string };

function failure(result: Exclude<HermesJobResult<unknown>, { outcome: 'ok' }>, doing: string): CallWatchAnswer {
  const why =
    result.outcome === 'refused' && result.error
      ? `Hermes answered: ${result.error}`
      : result.outcome === 'unavailable'
        ? 'This Hermes has no scheduled jobs.'
        : result.outcome === 'unreachable'
          ? "Hermes' API server could not be reached."
          : `Hermes answered ${result.outcome === 'refused' ? result.status : result.outcome}.`;
  return { status: 'failed', message: `Could not ${doing}. ${why} Nothing was changed for this watch.` };
}

/** The profile the configured API server serves: `…/p/<name>` is that profile's, anything else the default. */
export function apiProfileOf(url: string | undefined): string {
  if (!url) return 'default';
  try {
    const match = /\/p\/([^/]+)\/*$/.exec(new URL(url).pathname);
    return match?.[1] ? decodeURIComponent(match[1]) : 'default';
  } catch {
    return 'default';
  }
}

function summary(job: WatchJob, name: string): WatchSummary {
  return {
    id: job.job_id,
    name,
    what: job.what,
    checks_every_minutes: job.interval_min,
    for_minutes: job.for_minutes,
    hours: job.hours,
    unless: job.unless,
  };
}

/** What the call-watch tool works with: Hermes' jobs for the profile the API server serves, and time. */
export interface CallWatchJobsPorts {
  /** Hermes' API server; null when none is configured (the tool is then not offered). */
  api: HermesJobsApi | null;
  /** The profile that API server's jobs belong to (apiProfileOf). */
  apiProfile: string;
  clock: Clock;
}

export class CallWatchJobs {
  private probe: { at: number; available: Promise<boolean> } | null = null;

  constructor(private readonly ports: CallWatchJobsPorts) {}

  /**
   * Whether this profile's Hermes has scheduled jobs the host can write: its API server is configured
   * and `GET /api/jobs` answers. Asked at most once a minute (each MCP request lists the tools).
   */
  async available(profile: ProfileScope): Promise<boolean> {
    const api = this.ports.api;
    if (!api || profile.name !== this.ports.apiProfile) return false;
    const now = this.ports.clock.now();
    if (!this.probe || now - this.probe.at >= JOBS_PROBE_TTL_MS) {
      this.probe = { at: now, available: api.listJobs().then((result) => result.outcome === 'ok') };
    }
    return this.probe.available;
  }

  private nowS(): number {
    return this.ports.clock.now() / 1000;
  }

  async handle(
    state: CallWatchesState,
    input: WatchInput & { id?: string | undefined; sync?: WatchInput[] | undefined; remove?: boolean | undefined },
  ): Promise<CallWatchAnswer> {
    const api = this.ports.api;
    if (!api) return { status: 'refused', message: "This Hermes' scheduled jobs are not reachable from Conduit." };
    if (input.sync !== undefined) {
      if (input.what !== undefined || input.id !== undefined || input.remove) {
        return { status: 'refused', message: 'Pass either sync (every watch of the note) or one watch, not both.' };
      }
      return this.sync(api, state, input.sync);
    }
    if (input.remove) return this.remove(api, state, input);
    const spec = validWatch(input);
    if ('error' in spec) return { status: 'refused', message: spec.error };
    return this.set(api, state, spec, input.id);
  }

  /** Jobs Hermes has, paused ones included (a paused watch is still the same watch). */
  private async jobs(api: HermesJobsApi): Promise<HermesJobResult<HermesJob[]>> {
    return api.listJobs({ includeDisabled: true });
  }

  private async set(
    api: HermesJobsApi,
    state: CallWatchesState,
    spec: WatchSpec,
    givenId: string | undefined,
    listed?: HermesJob[],
  ): Promise<CallWatchAnswer> {
    const recorded = await state.read();
    let target = givenId ?? recorded.jobs.find((job) => sameWhat(job.what, spec.what))?.job_id;
    if (target === undefined) {
      // A job of this name an older plugin (or a lost record) left: taken over rather than doubled.
      let jobs = listed;
      if (!jobs) {
        const result = await this.jobs(api);
        if (result.outcome !== 'ok') return failure(result, 'read the scheduled jobs');
        jobs = result.value;
      }
      target = jobs.find((job) => {
        const what = whatOfJobName(job.name);
        return what !== null && sameWhat(what, spec.what);
      })?.id;
    }
    const interval = checkIntervalMinutes(spec.for_minutes);
    const body = { name: watchJobName(spec.what), schedule: scheduleFor(interval), prompt: watchRunPrompt(spec) };
    let action: 'created' | 'updated' = 'updated';
    let jobId = target;
    if (jobId !== undefined) {
      // skills: [] — a job an older plugin wrote loaded the calling skill and kept its own state.
      const updated = await api.updateJob(jobId, { ...body, skills: [] });
      if (updated.outcome === 'not_found' && givenId === undefined) jobId = undefined;
      else if (updated.outcome !== 'ok') return failure(updated, `change the watch's job ${jobId}`);
    }
    if (jobId === undefined) {
      if (recorded.jobs.filter((job) => !sameWhat(job.what, spec.what)).length >= WATCH_LIMITS.jobs) {
        return {
          status: 'refused',
          message: `This profile already has ${WATCH_LIMITS.jobs} call watches; remove one first.`,
        };
      }
      const created = await api.createJob({ ...body, deliver: 'local' });
      if (created.outcome !== 'ok') return failure(created, 'create the watch\u2019s job');
      jobId = created.value.id;
      action = 'created';
    }
    const nowS = this.nowS();
    const existing = recorded.jobs.find((job) => job.job_id === jobId);
    const job: WatchJob = {
      job_id: jobId,
      what: spec.what,
      check: spec.check,
      for_minutes: spec.for_minutes,
      hours: spec.hours,
      unless: spec.unless,
      interval_min: interval,
      created_at: existing?.created_at ?? nowS,
      updated_at: nowS,
    };
    await state.update(nowS, (calls, watches) => ({ calls, watches: withJob(watches, job), result: undefined }));
    return { status: 'watching', action, ...summary(job, body.name) };
  }

  private async sync(api: HermesJobsApi, state: CallWatchesState, inputs: WatchInput[]): Promise<CallWatchAnswer> {
    // Every watch is checked before any job changes, so a bad entry changes nothing.
    const specs: WatchSpec[] = [];
    for (const [index, input] of inputs.entries()) {
      const spec = validWatch(input);
      if ('error' in spec) return { status: 'refused', message: `sync[${index}]: ${spec.error}` };
      if (specs.some((other) => sameWhat(other.what, spec.what))) {
        return { status: 'refused', message: `sync[${index}]: the note describes "${spec.what}" twice` };
      }
      specs.push(spec);
    }
    const listed = await this.jobs(api);
    if (listed.outcome !== 'ok') return failure(listed, 'read the scheduled jobs');
    const hermesIds = new Set(listed.value.map((job) => job.id));
    // Records of jobs deleted in Hermes since (by hand, or `hermes cron remove`) are forgotten.
    await state.update(this.nowS(), (calls, watches) => {
      const gone = watches.jobs.filter((job) => !hermesIds.has(job.job_id));
      return {
        calls,
        watches: gone.reduce((file, job) => withoutJob(file, job.job_id), watches),
        result: undefined,
      };
    });
    const watches: WatchSummary[] = [];
    for (const spec of specs) {
      const answer = await this.set(api, state, spec, undefined, listed.value);
      if (answer.status !== 'watching') return answer;
      watches.push({
        id: answer.id,
        name: answer.name,
        what: answer.what,
        checks_every_minutes: answer.checks_every_minutes,
        for_minutes: answer.for_minutes,
        hours: answer.hours,
        unless: answer.unless,
      });
    }
    const kept = new Set(watches.map((watch) => watch.id));
    const mentioned = new Set(specs.map((spec) => normalWhat(spec.what)));
    const notInNote = new Map<string, string>();
    for (const job of (await state.read()).jobs) {
      if (!kept.has(job.job_id) && !mentioned.has(normalWhat(job.what))) notInNote.set(job.job_id, job.what);
    }
    for (const job of listed.value) {
      const what = whatOfJobName(job.name);
      if (what !== null && !kept.has(job.id) && !mentioned.has(normalWhat(what))) notInNote.set(job.id, what);
    }
    const not_in_note = [...notInNote].map(([id, what]) => ({ id, what }));
    return {
      status: 'synced',
      watches,
      not_in_note,
      ...(not_in_note.length > 0
        ? {
            next: 'The note no longer mentions these watches. Ask the user whether to remove them; remove one with conduit_call_watch remove: true and its id.',
          }
        : {}),
    };
  }

  private async remove(
    api: HermesJobsApi,
    state: CallWatchesState,
    input: { what?: string | undefined; id?: string | undefined },
  ): Promise<CallWatchAnswer> {
    const recorded = await state.read();
    let jobId = input.id;
    let what: string | null = recorded.jobs.find((job) => job.job_id === jobId)?.what ?? null;
    if (jobId === undefined) {
      const wanted = input.what?.trim();
      if (!wanted) return { status: 'refused', message: 'Name the watch to remove by what or id.' };
      const record = recorded.jobs.find((job) => sameWhat(job.what, wanted));
      jobId = record?.job_id;
      what = record?.what ?? null;
      if (jobId === undefined) {
        const listed = await this.jobs(api);
        if (listed.outcome !== 'ok') return failure(listed, 'read the scheduled jobs');
        const found = listed.value.find((job) => {
          const named = whatOfJobName(job.name);
          return named !== null && sameWhat(named, wanted);
        });
        if (!found) return { status: 'refused', message: `There is no call watch for "${wanted}".` };
        jobId = found.id;
        what = whatOfJobName(found.name);
      }
    }
    const deleted = await api.deleteJob(jobId);
    if (deleted.outcome !== 'ok' && deleted.outcome !== 'not_found') return failure(deleted, `remove job ${jobId}`);
    const removedId = jobId;
    await state.update(this.nowS(), (calls, watches) => ({
      calls,
      watches: withoutJob(watches, removedId),
      result: undefined,
    }));
    return { status: 'removed', id: removedId, what };
  }
}
