import { z } from 'zod';
import { HERMES_JOB_ID, type HermesJob, type HermesJobResult } from '@conduit/contracts/hermes/jobs';
import {
  PLACE_RULE_DAYS,
  PLACE_RULE_LIMITS,
  placeRuleDay,
  placeRuleMove,
  placeRuleRepeat,
  type PlaceRule,
} from '@conduit/contracts/dashboard/location';
import type { Clock } from '../../clock.js';
import type { HermesJobsPort } from '../../kernel/feature.js';
import type { Logger } from '../../log.js';
import type { ProfileScope } from '../../notifier/notifier.js';
import type { JsonStateFile } from '../../state/json-state-file.js';
import { PhoneDataStore } from '../../kernel/phone-data/store.js';
import { LOCATION_SHAPE, placesOf, stateOf, storedSharing } from './location-store.js';
import {
  placeRuleJobName,
  placeRulePrompt,
  placeRulesFile,
  repeatAllows,
  ruleMismatch,
  ruleView,
  sameRuleWhat,
  triggeredPrompt,
  validRuleText,
  type PlaceRuleSpec,
  type PlaceRulesFile,
  type StoredPlaceRule,
} from './place-rules-state.js';

/**
 * Place rules ("call me with my brief when I leave home on weekdays"): set_rule keeps a Hermes cron
 * job named "Place rule: <what>" whose prompt is the task, and an arrive or leave event that matches
 * the rule runs that job now through Hermes' jobs API, with a line naming the place and the move.
 *
 * Hermes has no schedule that never fires (cron/jobs.py knows intervals, cron expressions and
 * one-shots), and neither of the usual stand-ins holds: `POST /api/jobs/{id}/run` on a paused job
 * resumes it in most Hermes versions (trigger_job sets enabled, so it would then run on its schedule),
 * and a one-shot gets repeat 1, so the first triggered run completes and removes it. So the job is an
 * ordinary enabled interval job whose interval is a century: it never comes round on its own, a run
 * triggered through the API runs once and re-anchors the next run another century away, and `hermes
 * cron list` still shows it, pausable and removable like any other job.
 */
export const NEVER_SCHEDULE = 'every 36525d';

export const PLACE_RULE_ACTIONS = ['rules', 'set_rule', 'remove_rule'] as const;

/** conduit_location's arguments for place rules, described for the model (checked again by setRuleArgs). */
export const placeRuleToolInput = {
  what: z
    .string()
    .max(PLACE_RULE_LIMITS.whatMaxChars)
    .optional()
    .describe(
      'set_rule, remove_rule: the rule in the user’s words ("brief when I leave home"); the same what is the same rule.',
    ),
  task: z
    .string()
    .max(PLACE_RULE_LIMITS.taskMaxChars)
    .optional()
    .describe(
      'set_rule: what the run does when the rule fires, as a self-contained instruction (anything a cron run can do).',
    ),
  move: placeRuleMove.optional().describe('set_rule: arrive, leave or either.'),
  days: z
    .array(placeRuleDay)
    .max(7)
    .optional()
    .describe('set_rule: local days it fires on (mon…sun); every day when left out.'),
  rule_hours: z
    .string()
    .max(11)
    .optional()
    .describe('set_rule: only between these local times, HH:MM-HH:MM (may pass midnight); any time when left out.'),
  repeat: placeRuleRepeat
    .optional()
    .describe(
      'set_rule: daily (at most once a local day, the default) or every (each match, at least 30 minutes apart).',
    ),
  id: z.string().max(64).optional().describe('remove_rule: the rule’s id (from rules).'),
};

/** set_rule's arguments (the tool's schema is looser for the model; these are checked again here). */
export const setRuleArgs = z.object({
  what: z.string().optional(),
  task: z.string().optional(),
  place: z.string().optional(),
  move: placeRuleMove.optional(),
  days: z.array(placeRuleDay).max(7).optional(),
  rule_hours: z.string().optional(),
  repeat: placeRuleRepeat.optional(),
});
export type SetRuleArgs = z.infer<typeof setRuleArgs>;

export type PlaceRuleAnswer =
  | { ok: true; action: 'rules'; rules: PlaceRule[] }
  | { ok: true; action: 'set_rule'; status: 'created' | 'updated'; job_name: string; rule: PlaceRule }
  | { ok: true; action: 'remove_rule'; removed: boolean; id: string; what: string | null }
  | { ok: false; error: string };

/** Why an event did or did not run a rule's job (tests and the log read it; never a place or a task). */
export type FireOutcome = 'fired' | 'stale' | 'not_sharing' | 'mismatch' | 'repeat' | 'job_paused' | 'failed';

export interface PlaceRulesPorts {
  /** Hermes' jobs for the profile its API server serves; null when none is configured. */
  jobs: HermesJobsPort | null;
  clock: Clock;
  log: Logger;
  /** The timezone days and hours are read in (Hermes' own, as call watches read theirs). */
  timeZone(profile: ProfileScope): Promise<string>;
}

/** An arrive or leave event as place rules hear it (index.ts's PlaceEvent). */
export interface PlaceRuleEvent {
  profile: string;
  home: string;
  deviceId: string;
  type: 'arrive' | 'leave';
  placeId: string | null;
  placeName: string | null;
  private: boolean;
  at: number;
  receivedAt: number;
}

function jobFailure(result: Exclude<HermesJobResult<unknown>, { outcome: 'ok' }>, doing: string): string {
  const why =
    result.outcome === 'refused' && result.error
      ? `Hermes answered: ${result.error}`
      : result.outcome === 'unavailable'
        ? 'This Hermes has no scheduled jobs.'
        : result.outcome === 'unreachable'
          ? "Hermes' API server could not be reached."
          : result.outcome === 'not_found'
            ? 'Hermes has no such job.'
            : `Hermes answered ${result.outcome === 'refused' ? result.status : result.outcome}.`;
  return `Could not ${doing}. ${why}`;
}

/** The saved places the sharing phones list, without private ones (a rule can't name what the host can't). */
function savedPlaces(home: string): { id: string; name: string }[] {
  const store = PhoneDataStore.open(home, LOCATION_SHAPE, false);
  if (!store) return [];
  try {
    const seen = new Map<string, string>();
    for (const sharing of storedSharing(store)) {
      for (const [id, place] of placesOf(store, sharing.deviceId)) {
        if (!place.private && place.name !== null && !seen.has(id)) seen.set(id, place.name);
      }
    }
    return [...seen].map(([id, name]) => ({ id, name }));
  } finally {
    store.close();
  }
}

/**
 * Whether the event's phone shares now and nobody paused: the seed's "never while sharing is paused".
 * Read when the rule is about to fire, not when the batch landed, since the work in between is async.
 */
function sharingOn(home: string, deviceId: string): boolean {
  const store = PhoneDataStore.open(home, LOCATION_SHAPE, false);
  if (!store) return false;
  try {
    const all = storedSharing(store);
    const device = all.find((entry) => entry.deviceId === deviceId);
    return stateOf(device) === 'on' && !all.some((entry) => stateOf(entry) === 'paused');
  } finally {
    store.close();
  }
}

/** The rules of every profile this host serves, and the jobs they keep in Hermes. */
export class PlaceRules {
  private readonly files = new Map<string, JsonStateFile<PlaceRulesFile>>();
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(private readonly ports: PlaceRulesPorts) {}

  private nowS(): number {
    return this.ports.clock.now() / 1000;
  }

  /** One file object per home, so its in-process write chain orders every change to it. */
  private fileOf(home: string): JsonStateFile<PlaceRulesFile> {
    let file = this.files.get(home);
    if (!file) this.files.set(home, (file = placeRulesFile(home)));
    return file;
  }

  /** The jobs API when it serves `profile`, else why rules can't be kept for it. */
  private jobsFor(profile: ProfileScope): HermesJobsPort['api'] | string {
    const jobs = this.ports.jobs;
    if (!jobs) return "This Hermes' scheduled jobs are not reachable from Conduit (no API server is configured).";
    if (jobs.apiProfile !== profile.name) {
      return `Hermes' API server here serves the ${jobs.apiProfile} profile, so place rules can only be kept there.`;
    }
    return jobs.api;
  }

  async list(home: string): Promise<PlaceRule[]> {
    return (await this.fileOf(home).read()).rules.map(ruleView);
  }

  /** The tool's three rule actions. */
  async act(
    profile: ProfileScope,
    action: 'rules' | 'set_rule' | 'remove_rule',
    args: unknown,
  ): Promise<PlaceRuleAnswer> {
    if (action === 'rules') return { ok: true, action, rules: await this.list(profile.home) };
    if (action === 'remove_rule') {
      const parsed = z.object({ id: z.string().optional(), what: z.string().optional() }).safeParse(args);
      if (!parsed.success) return { ok: false, error: 'remove_rule takes the rule’s id or its what.' };
      return this.remove(profile, parsed.data);
    }
    const parsed = setRuleArgs.safeParse(args);
    if (!parsed.success) {
      const field = parsed.error.issues[0]?.path[0];
      return { ok: false, error: `${typeof field === 'string' ? field : 'arguments'} is missing or invalid` };
    }
    return this.set(profile, parsed.data);
  }

  /** Validates first, then writes the job, then the rule: a refused rule changes nothing. */
  async set(profile: ProfileScope, args: SetRuleArgs): Promise<PlaceRuleAnswer> {
    const api = this.jobsFor(profile);
    if (typeof api === 'string') return { ok: false, error: api };
    const text = validRuleText({ what: args.what, task: args.task, hours: args.rule_hours });
    if ('error' in text) return { ok: false, error: text.error };
    if (!args.move) return { ok: false, error: 'set_rule needs move: arrive, leave or either.' };
    let place: PlaceRuleSpec['place'] = null;
    const wanted = args.place?.trim() ?? '';
    if (wanted !== '' && wanted.toLowerCase() !== 'any') {
      const places = savedPlaces(profile.home);
      place =
        places.find((candidate) => candidate.id === wanted) ??
        places.find((candidate) => candidate.name.toLowerCase() === wanted.toLowerCase()) ??
        null;
      if (!place) {
        const names = places.map((candidate) => candidate.name).join(', ');
        return {
          ok: false,
          error: `No saved place "${wanted}"${names ? ` (saved places: ${names})` : ''}; use one of them, or any.`,
        };
      }
    }
    // Every day when all seven are named, so the stored rule says so once.
    const days = PLACE_RULE_DAYS.filter((day) => args.days?.includes(day));
    const spec: PlaceRuleSpec = {
      what: text.what,
      place,
      move: args.move,
      days: days.length === 7 ? [] : days,
      hours: text.hours,
      repeat: args.repeat ?? 'daily',
      task: text.task,
    };
    const recorded = await this.fileOf(profile.home).read();
    const existing = recorded.rules.find((rule) => sameRuleWhat(rule.what, spec.what));
    if (!existing && recorded.rules.length >= PLACE_RULE_LIMITS.rules) {
      return { ok: false, error: `This profile already has ${PLACE_RULE_LIMITS.rules} place rules; remove one first.` };
    }
    const body = { name: placeRuleJobName(spec.what), schedule: NEVER_SCHEDULE, prompt: placeRulePrompt(spec) };
    let jobId: string | undefined = existing?.job_id;
    let status: 'created' | 'updated' = 'updated';
    if (jobId !== undefined) {
      const updated = await api.updateJob(jobId, body);
      // A job deleted in Hermes since (by hand, `hermes cron remove`) is made again.
      if (updated.outcome === 'not_found') jobId = undefined;
      else if (updated.outcome !== 'ok') return { ok: false, error: jobFailure(updated, "change the rule's job") };
    }
    if (jobId === undefined) {
      const created: HermesJobResult<HermesJob> = await api.createJob({ ...body, deliver: 'local' });
      if (created.outcome !== 'ok') return { ok: false, error: jobFailure(created, "create the rule's job") };
      jobId = created.value.id;
      status = 'created';
    }
    const nowS = this.nowS();
    const rule: StoredPlaceRule = {
      job_id: jobId,
      what: spec.what,
      place_id: spec.place?.id ?? null,
      place_name: spec.place?.name ?? null,
      move: spec.move,
      days: spec.days,
      hours: spec.hours,
      repeat: spec.repeat,
      task: spec.task,
      created_at: existing?.created_at ?? nowS,
      updated_at: nowS,
      last_fired_at: existing?.job_id === jobId ? existing.last_fired_at : null,
    };
    await this.fileOf(profile.home).update((file) => ({
      ...file,
      rules: [...file.rules.filter((other) => !sameRuleWhat(other.what, spec.what) && other.job_id !== jobId), rule],
    }));
    return { ok: true, action: 'set_rule', status, job_name: body.name, rule: ruleView(rule) };
  }

  /** Deletes the job, then the rule; a job already gone from Hermes still removes the rule. */
  async remove(
    profile: ProfileScope,
    which: { id?: string | undefined; what?: string | undefined },
  ): Promise<PlaceRuleAnswer> {
    const what = which.what?.trim() ?? '';
    if (which.id === undefined && what === '') {
      return { ok: false, error: 'Name the rule to remove by id or what (see the rules action).' };
    }
    const recorded = await this.fileOf(profile.home).read();
    const rule =
      which.id !== undefined
        ? recorded.rules.find((candidate) => candidate.job_id === which.id)
        : recorded.rules.find((candidate) => sameRuleWhat(candidate.what, what));
    if (!rule) return { ok: true, action: 'remove_rule', removed: false, id: which.id ?? '', what: which.what ?? null };
    const outcome = await this.removeJobAndRule(profile, rule.job_id);
    if (typeof outcome !== 'boolean') return { ok: false, error: outcome.message };
    return { ok: true, action: 'remove_rule', removed: outcome, id: rule.job_id, what: rule.what };
  }

  /**
   * Removes the rule whose job is `jobId` and the job: true when a rule was removed, or why nothing
   * changed (502: Hermes refused; 503: Hermes can't be reached). `DELETE /location/rules/<id>` answers
   * with it.
   */
  async removeJobAndRule(
    profile: ProfileScope,
    jobId: string,
  ): Promise<boolean | { status: 502 | 503; message: string }> {
    if (!HERMES_JOB_ID.test(jobId)) return false;
    const recorded = await this.fileOf(profile.home).read();
    if (!recorded.rules.some((rule) => rule.job_id === jobId)) return false;
    const api = this.jobsFor(profile);
    if (typeof api === 'string') return { status: 503, message: `${api} The rule is kept.` };
    const deleted = await api.deleteJob(jobId);
    if (deleted.outcome !== 'ok' && deleted.outcome !== 'not_found') {
      const status = deleted.outcome === 'refused' || deleted.outcome === 'malformed' ? 502 : 503;
      return { status, message: `${jobFailure(deleted, `remove job ${jobId}`)} The rule is kept.` };
    }
    let removed = false;
    await this.fileOf(profile.home).update((file) => {
      const rules = file.rules.filter((rule) => rule.job_id !== jobId);
      removed = rules.length !== file.rules.length;
      return { ...file, rules };
    });
    return removed;
  }

  /** An event from the location feature: handled in the background (settled() waits for it). */
  heard(profile: ProfileScope, event: PlaceRuleEvent): void {
    const work = this.handle(profile, event).catch((error: unknown) => {
      this.ports.log.warn('place rules failed', { error: error instanceof Error ? error.name : 'error' });
      return [] as FireOutcome[];
    });
    const tracked = work.finally(() => this.inFlight.delete(tracked));
    this.inFlight.add(tracked);
  }

  /** Resolves when every event heard so far has been handled. */
  async settled(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
  }

  /**
   * Runs the job of each rule `event` matches, at most once a day or every 30 minutes as set: one
   * outcome per rule of the profile (none when it has no rules). The repeat is claimed under the
   * file's write chain before Hermes is asked, so two events in quick succession fire a rule once; a
   * run Hermes refuses (or a job the user paused there) gives the claim back, so the next matching
   * event can still fire it.
   */
  async handle(profile: ProfileScope, event: PlaceRuleEvent): Promise<FireOutcome[]> {
    const file = this.fileOf(profile.home);
    const { rules } = await file.read();
    if (rules.length === 0) return [];
    const nowS = this.nowS();
    // The seed: never for an event over 15 minutes old, by the host's clock when it arrived.
    if (Math.max(nowS, event.receivedAt) - event.at > PLACE_RULE_LIMITS.eventMaxAgeS) return rules.map(() => 'stale');
    if (!sharingOn(profile.home, event.deviceId)) return rules.map(() => 'not_sharing');
    const timeZone = await this.ports.timeZone(profile);
    const outcomes: FireOutcome[] = [];
    for (const rule of rules) {
      if (ruleMismatch(rule, event, timeZone) !== null) {
        outcomes.push('mismatch');
        continue;
      }
      // Cast, not annotated: the claim is set inside the callback, which control flow can't see.
      let claim = null as { previous: number | null } | null;
      await file.update((current) => {
        const now = current.rules.find((candidate) => candidate.job_id === rule.job_id);
        if (!now || !repeatAllows(now, nowS, timeZone)) return current;
        claim = { previous: now.last_fired_at };
        return {
          ...current,
          rules: current.rules.map((candidate) => (candidate === now ? { ...now, last_fired_at: nowS } : candidate)),
        };
      });
      if (!claim) {
        outcomes.push('repeat');
        continue;
      }
      const ran = await this.run(profile, rule, event);
      if (ran !== 'fired') {
        const previous = claim.previous;
        await file.update((current) => ({
          ...current,
          rules: current.rules.map((candidate) =>
            candidate.job_id === rule.job_id && candidate.last_fired_at === nowS
              ? { ...candidate, last_fired_at: previous }
              : candidate,
          ),
        }));
      }
      outcomes.push(ran);
    }
    return outcomes;
  }

  /**
   * The run route takes no body, so the line naming the event goes into the prompt first. A job the
   * user paused in Hermes (`hermes cron pause`) is left paused: most Hermes versions' run route would
   * resume it.
   */
  private async run(
    profile: ProfileScope,
    rule: StoredPlaceRule,
    event: PlaceRuleEvent,
  ): Promise<'fired' | 'job_paused' | 'failed'> {
    const api = this.jobsFor(profile);
    if (typeof api === 'string') {
      this.ports.log.warn('place rule not run', { reason: 'no_jobs_api' });
      return 'failed';
    }
    const place = event.private ? 'a private place' : (event.placeName ?? rule.place_name ?? 'a saved place');
    const prompt = triggeredPrompt(rule, { type: event.type, place });
    const patched = await api.updateJob(rule.job_id, { prompt });
    if (patched.outcome !== 'ok') {
      this.ports.log.warn('place rule not run', { step: 'update', outcome: patched.outcome });
      return 'failed';
    }
    if (patched.value.enabled === false) return 'job_paused';
    const run = await api.runJob(rule.job_id);
    if (run.outcome !== 'ok') {
      this.ports.log.warn('place rule not run', { step: 'run', outcome: run.outcome });
      return 'failed';
    }
    this.ports.log.info('place rule fired', { move: event.type });
    return 'fired';
  }
}
