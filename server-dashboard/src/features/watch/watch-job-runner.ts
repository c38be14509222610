import type { HermesRunEvent } from '@conduit/contracts/hermes/runs';
import type { RunRequest, RunStart } from '@conduit/contracts/hermes/api-client';
import type { Clock } from '../../clock.js';
import type { FeatureKernel } from '../../kernel/feature.js';
import type { Timers } from '../../kernel/timers.js';
import { StateDbVoiceJobs, type VoiceJobFiled, type VoiceJobFiling } from '../../kernel/voice-tags.js';
import type { Logger } from '../../log.js';
import type { ProfileScope } from '../../notifier/notifier.js';
import { encodeBase64Url } from '../../crypto/base64url.js';
import { refusal, type AnswerDelivery, type WatchAnswer, type WatchArgs } from './watch-answer.js';
import { JobNews, type JobNewsKind } from './watch-job-news.js';
import {
  readApprovalAnswer,
  readFollowUp,
  readJobId,
  readStartJob,
  type Checked,
  type StartRequest,
} from './watch-job-requests.js';
import { NO_WATCH_JOBS, type CallJobSettings, type JobGrant, type WatchJobs, type WatchJobTool } from './watch-jobs.js';
import { WATCH_LIMITS } from './watch-limits.js';
import { JobRunsDirectory, type JobRunsApi } from './watch-job-profiles.js';

export interface WatchJobRunnerOptions {
  /** The runs API serving this profile, or null where this host reaches no Hermes API server for it. */
  runsFor(profile: ProfileScope): Promise<JobRunsApi | null>;
  /** Another profile of this host by name, or null when it has none of that name. */
  profileNamed(name: string): ProfileScope | null;
  /** Where a job's chat is filed under Conduit's Voice Jobs, on the profile it runs on. */
  voiceJobs: VoiceJobFiling;
  clock: Clock;
  timers: Timers;
  log: Logger;
  random: (size: number) => Uint8Array;
}

/** A job as the Watch sees it: starting until Hermes accepted it, then Hermes' own run states. */
export type JobStatus = 'starting' | 'running' | 'waiting_for_approval' | 'completed' | 'failed' | 'cancelled';

const ENDED: ReadonlySet<JobStatus> = new Set(['completed', 'failed', 'cancelled']);

/** Events of a run that has gone on working: one waiting on an approval sends none of them. */
const MOVES_ON: ReadonlySet<string> = new Set(['message.delta', 'tool.started', 'tool.completed']);

/** Told to Hermes with every job: the answer is read out on a Watch. */
const JOB_INSTRUCTIONS =
  'This job was started by voice from a Conduit Watch call. When it is done, answer in a few plain ' +
  'sentences: the result is read out on the Watch.';

interface PendingApproval {
  approvalId: string;
  /** Hermes' id; early builds send none (the oldest pending approval is answered). */
  requestId: string | undefined;
  newsId: string | null;
}

interface Job {
  readonly id: string;
  readonly title: string;
  /** The profile it runs on, and that profile's Hermes home (where its chat is filed under Voice Jobs). */
  readonly profile: string;
  readonly home: string;
  readonly otherProfile: boolean;
  readonly sessionId: string;
  readonly api: JobRunsApi;
  /** What every run of the job asks besides its input: its session, instructions and model choices. */
  readonly runFields: Omit<RunRequest, 'input'>;
  readonly startedAtMs: number;
  status: JobStatus;
  runId: string | undefined;
  /** Runs started in the job's chat (its first, then follow-ups): each one's Idempotency-Key. */
  runs: number;
  finishedAtMs: number | undefined;
  result: string | undefined;
  error: string | undefined;
  approvals: PendingApproval[];
  /** The Watch asked to cancel it; Hermes' cancellation then brings no news. */
  cancelledByWatch: boolean;
  /** A follow-up is on its way to Hermes: follow-ups to one job go one at a time. */
  followUpBusy: boolean;
  /** Follow-ups Hermes could not take into the running step: sent as the chat's next turn. */
  queued: string[];
  /** The call it reports to; null once the call ended (the job keeps running in Hermes). */
  call: CallJobs | null;
  /** Ends the job's event stream (the service stopping). */
  readonly stop: AbortController;
}

/** One Watch call's jobs, carried from grant to grant by renewals, so the limits count per call. */
class CallJobs {
  readonly jobs = new Map<string, Job>();
  readonly news = new JobNews();
  /** Jobs this call started (a start that never came to be is not counted). */
  started = 0;

  constructor(
    public grantId: string,
    public profile: ProfileScope,
    public settings: CallJobSettings,
  ) {}

  get active(): Job[] {
    return [...this.jobs.values()].filter((job) => !ENDED.has(job.status) && !job.cancelledByWatch);
  }

  get jobsLeft(): number {
    return Math.max(0, this.settings.maxJobs - this.started);
  }
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

function clip(text: string, chars: number): string {
  return text.length <= chars ? text : `${text.slice(0, chars - 1).trimEnd()}…`;
}

/** A title from the task's first words when the Watch gave none. */
function titleOf(request: StartRequest): string {
  if (request.title) return request.title;
  const words = request.task.replace(/\s+/g, ' ');
  if (words.length <= 60) return words;
  const cut = words.slice(0, 60);
  const space = cut.lastIndexOf(' ');
  return `${space > 20 ? cut.slice(0, space) : cut}…`;
}

/** Why a start was not taken, in words the Watch can say. */
function startFailure(started: Exclude<RunStart, { outcome: 'started' }>): string {
  switch (started.outcome) {
    case 'refused':
      return started.status === 429
        ? 'Hermes is busy with too many runs; try again shortly'
        : `Hermes refused the job (HTTP ${started.status})`;
    case 'key_conflict':
      return 'Hermes already has a different job under this id';
    case 'malformed':
      return 'Hermes answered the job without a run id';
    case 'unreachable':
      return "Couldn't reach Hermes";
  }
}

/**
 * Watch jobs over Hermes' API server (the seed, Apple Watch calls: Jobs): each job is an ordinary
 * Hermes chat, started as a run on the grant's profile (or a listed job profile) in a session of its
 * own, filed under that profile's Voice Jobs in Conduit once Hermes took it, followed through its
 * lifecycle events, steered by follow-ups, stopped by cancel_job, and its approvals answered once or
 * denied. A call counts its jobs across renewals (max_jobs), runs three at once, and hears finished
 * jobs and approval requests as news until an answer carrying them reaches the relay. A job still
 * running when its call ends keeps running in Hermes and is still followed here; once it finishes it is
 * closed here (its event stream ended, nothing of it kept), and only its news is dropped.
 */
export class HermesWatchJobs implements WatchJobs {
  private readonly calls = new Map<string, CallJobs>();
  /** Every job whose run is still followed, whichever call it belongs to (closed on shutdown). */
  private readonly live = new Set<Job>();
  private closed = false;

  constructor(private readonly options: WatchJobRunnerOptions) {}

  async available(profile: ProfileScope): Promise<boolean> {
    return (await this.options.runsFor(profile)) !== null;
  }

  /**
   * A renewal (the previous grant open, on the same profile, and the new one with jobs): the call's
   * jobs, news and count move to the new grant, even before its first job, so the limit stays per call.
   */
  carry(from: JobGrant, to: JobGrant): boolean {
    const call = this.calls.get(from.id) ?? new CallJobs(from.id, from.profile, from.settings);
    this.calls.delete(from.id);
    call.grantId = to.id;
    call.settings = to.settings;
    this.calls.set(to.id, call);
    return true;
  }

  released(grant: JobGrant): void {
    const call = this.calls.get(grant.id);
    if (!call) return;
    this.calls.delete(grant.id);
    // The jobs keep running in Hermes; nobody is left to hear about them.
    for (const job of call.jobs.values()) job.call = null;
  }

  /** The service is stopping: no job's events are followed any longer (the runs go on in Hermes). */
  close(): void {
    this.closed = true;
    for (const job of this.live) job.stop.abort();
    this.live.clear();
    this.calls.clear();
  }

  async run(grant: JobGrant, tool: WatchJobTool, args: WatchArgs, delivery?: AnswerDelivery): Promise<WatchAnswer> {
    const call = this.callOf(grant);
    switch (tool) {
      case 'start_job':
        return this.start(call, args);
      case 'list_jobs':
        return this.list(call);
      case 'cancel_job':
        return this.cancel(call, args);
      case 'interrupt_job':
        return this.followUp(call, args);
      case 'job_news':
        return { ok: true, news: call.news.forAnswer(delivery), running: call.active.length };
      case 'answer_approval':
        return this.answerApproval(call, args);
    }
  }

  /** The grant's call, made on its first job tool call; a grant's settings are the call's latest. */
  private callOf(grant: JobGrant): CallJobs {
    let call = this.calls.get(grant.id);
    if (!call) {
      call = new CallJobs(grant.id, grant.profile, grant.settings);
      this.calls.set(grant.id, call);
    }
    return call;
  }

  // ---------------------------------------------------------------------------------------------------
  // start_job and the 18 s rule

  private async start(call: CallJobs, args: WatchArgs): Promise<WatchAnswer> {
    const request = readStartJob(args);
    if (!request.ok) return refusal(request.status, request.detail);
    const notStarted = (error: string): WatchAnswer => ({ ok: true, status: 'not_started', error });
    const profile = request.value.profile ?? call.profile.name;
    const otherProfile = profile !== call.profile.name;
    // A profile the user did not list for this call is never guessed at (the seed).
    if (otherProfile && !(call.settings.jobProfiles ?? []).includes(profile)) {
      return notStarted(`${profile} isn't one of the profiles this call may start jobs on`);
    }
    const scope = otherProfile ? this.options.profileNamed(profile) : call.profile;
    const api = scope ? await this.options.runsFor(scope) : null;
    if (!scope || !api) return notStarted(`This host can't start jobs on ${profile}`);
    if (call.settings.maxJobs === 0) return notStarted("This call can't start jobs");
    if (call.started >= call.settings.maxJobs) {
      return notStarted(`This call has already started its ${call.settings.maxJobs} jobs`);
    }
    if (call.active.length >= WATCH_LIMITS.jobsAtOnce) {
      return notStarted(`${WATCH_LIMITS.jobsAtOnce} jobs are already running; wait for one to finish`);
    }

    const now = this.options.clock.now();
    const sessionId = this.sessionIdAt(now);
    // job_options are the grant profile's voice-job choices; another profile runs on its own model.
    const options = otherProfile ? undefined : call.settings.jobOptions;
    const job: Job = {
      id: encodeBase64Url(this.options.random(12)),
      title: titleOf(request.value),
      profile,
      home: scope.home,
      otherProfile,
      sessionId,
      api,
      runFields: {
        session_id: sessionId,
        instructions: JOB_INSTRUCTIONS,
        ...(options?.model ? { model: options.model } : {}),
        ...(options?.provider ? { provider: options.provider } : {}),
        ...(options?.reasoning_effort ? { model_options: { reasoning_effort: options.reasoning_effort } } : {}),
      },
      startedAtMs: now,
      status: 'starting',
      runId: undefined,
      runs: 1,
      finishedAtMs: undefined,
      result: undefined,
      error: undefined,
      approvals: [],
      cancelledByWatch: false,
      followUpBusy: false,
      queued: [],
      call,
      stop: new AbortController(),
    };
    // Counted before Hermes answers, so two starts at once cannot both take the last place.
    call.started += 1;
    call.jobs.set(job.id, job);
    this.live.add(job);
    const starting = this.startRun(job, request.value.task);

    // Hermes gets 18 s to accept; past that the Watch hears "accepted" inside the relay's 25 s wait,
    // and a start that then fails comes as news.
    let cancelTimer: () => void = () => undefined;
    const timedOut = new Promise<'waiting'>((resolve) => {
      cancelTimer = this.options.timers.after(WATCH_LIMITS.jobAcceptMs, () => resolve('waiting'));
    });
    const first = await Promise.race([starting, timedOut]);
    cancelTimer();
    if (first === 'waiting') {
      void starting.then((started) => this.settleStart(job, started, true));
      this.options.log.info('watch job start answered before Hermes accepted it', { profile });
      return this.startAnswer(call, job, 'accepted');
    }
    const accepted = this.settleStart(job, first, false);
    if (!accepted) {
      return notStarted(job.error ?? "Hermes didn't start the job");
    }
    return this.startAnswer(call, job, 'started');
  }

  private startAnswer(call: CallJobs, job: Job, status: 'started' | 'accepted'): WatchAnswer {
    return {
      ok: true,
      status,
      job_id: job.id,
      title: job.title,
      ...(job.otherProfile ? { profile: job.profile } : {}),
      jobs_left: call.jobsLeft,
    };
  }

  /**
   * What Hermes answered the start: the job follows its run, or it never came to be and is no longer
   * counted. `answered` says whether the Watch already heard "accepted" (then a failure is news).
   */
  private settleStart(job: Job, started: RunStart, answered: boolean): boolean {
    if (started.outcome === 'started') {
      job.runId = started.runId;
      if (job.status === 'starting') job.status = 'running';
      this.options.log.info('watch job running', { profile: job.profile, late: answered });
      // Hermes took it, so its chat is there: filed under Voice Jobs even if the Watch cancelled it
      // meanwhile or the service is stopping (the chat stays in Hermes either way).
      void this.fileUnderVoiceJobs(job);
      if (this.closed) {
        job.stop.abort();
        return true;
      }
      // Cancelled while Hermes was still accepting it: stopped as soon as it has a run to stop.
      if (job.cancelledByWatch) void job.api.stopRun(started.runId);
      void this.follow(job);
      return true;
    }
    const error = startFailure(started);
    this.options.log.warn('watch job not started', { profile: job.profile, outcome: started.outcome });
    if (job.call) job.call.started -= 1;
    if (answered) {
      // The Watch already heard "accepted": the failure is news, unless it cancelled the job meanwhile.
      if (job.cancelledByWatch) this.end(job, 'cancelled', undefined);
      else this.end(job, 'failed', undefined, error);
    } else {
      job.error = error;
      job.call?.jobs.delete(job.id);
      this.live.delete(job);
    }
    return false;
  }

  /**
   * Files the job's chat under Conduit's Voice Jobs on the profile it runs on, as a job started from
   * the phone is (`conduit.voice.tags`, kernel/voice-tags.ts). In the background: the Watch's answer
   * never waits on the store, and a store that can't take the label leaves the job running (its chat
   * then shows in Hermes' history, not under Voice Jobs), said in the log.
   */
  private async fileUnderVoiceJobs(job: Job): Promise<void> {
    let filed: VoiceJobFiled | 'failed';
    try {
      filed = await this.options.voiceJobs.fileJob(job.home, job.sessionId);
    } catch {
      filed = 'failed';
    }
    const fields = { profile: job.profile, job_id: job.id };
    if (filed === 'filed') this.options.log.info('watch job filed under voice jobs', fields);
    else this.options.log.warn('watch job not filed under voice jobs', { ...fields, reason: filed });
  }

  // ---------------------------------------------------------------------------------------------------
  // Following a job's runs

  private async follow(job: Job): Promise<void> {
    const signal = job.stop.signal;
    for (;;) {
      const runId = job.runId;
      if (runId === undefined || signal.aborted) return;
      const stream = await job.api.runEvents(runId, { signal });
      if (signal.aborted) return;
      if (stream.outcome !== 'streaming') {
        this.end(job, 'failed', undefined, 'Lost touch with Hermes while the job ran');
        return;
      }
      let said = '';
      let terminal: Extract<HermesRunEvent, { event: 'run.completed' | 'run.failed' | 'run.cancelled' }> | undefined;
      try {
        for await (const event of stream.events) {
          if (event.event === 'run.completed' || event.event === 'run.failed' || event.event === 'run.cancelled') {
            terminal = event;
            break;
          }
          if (event.event === 'approval.request') {
            this.approvalAsked(job, event);
            continue;
          }
          // Hermes waits on an approval before going on: anything it does next means the approval was
          // settled without the Watch (Hermes' own timeout denies it), so it is no longer asked.
          if (job.approvals.length > 0 && MOVES_ON.has(event.event)) this.approvalsSettled(job);
          if (event.event === 'message.delta') said += event.delta ?? '';
        }
      } catch {
        // A stream cut mid-run reads as a lost run below.
      }
      if (signal.aborted) return;
      if (terminal === undefined) {
        this.end(job, 'failed', undefined, 'Lost touch with Hermes while the job ran');
        return;
      }
      if (terminal.event === 'run.failed') {
        this.end(job, 'failed', undefined, terminal.error ?? 'The job failed in Hermes');
        return;
      }
      if (terminal.event === 'run.cancelled') {
        this.end(job, 'cancelled', undefined, job.cancelledByWatch ? undefined : 'The job was stopped in Hermes');
        return;
      }
      // Words Hermes took but never reached the model, and follow-ups it could not take into the run,
      // go as the chat's next turn; the job's result is that turn's.
      const next = [...(terminal.pending_steer ? [terminal.pending_steer] : []), ...job.queued.splice(0)];
      if (next.length === 0 || job.cancelledByWatch) {
        this.end(job, 'completed', terminal.output ?? said, undefined);
        return;
      }
      job.runs += 1;
      const started = await this.startRun(job, next.join('\n\n'));
      if (started.outcome !== 'started') {
        this.end(job, 'failed', undefined, startFailure(started));
        return;
      }
      job.runId = started.runId;
    }
  }

  private approvalAsked(job: Job, event: Extract<HermesRunEvent, { event: 'approval.request' }>): void {
    const approval: PendingApproval = {
      approvalId: encodeBase64Url(this.options.random(9)),
      requestId: event.request_id,
      newsId: null,
    };
    job.approvals.push(approval);
    job.status = 'waiting_for_approval';
    this.options.log.info('watch job waits on an approval', { profile: job.profile });
    approval.newsId =
      job.call?.news.add({
        job_id: job.id,
        kind: 'approval',
        title: job.title,
        approval: {
          approval_id: approval.approvalId,
          command: clip(event.command ?? '', 500),
          description: clip(event.description ?? '', 500),
          choices: ['once', 'deny'],
        },
      }) ?? null;
  }

  private approvalsSettled(job: Job): void {
    this.options.log.info('watch job approval settled in Hermes', { profile: job.profile });
    for (const approval of job.approvals.splice(0)) if (approval.newsId) job.call?.news.withdraw(approval.newsId);
    if (job.status === 'waiting_for_approval') job.status = 'running';
  }

  /** The job ended: its outcome is kept for list_jobs and told as news (unless the Watch cancelled it). */
  private end(
    job: Job,
    status: 'completed' | 'failed' | 'cancelled',
    result: string | undefined,
    error?: string,
  ): void {
    if (ENDED.has(job.status)) return;
    job.status = status;
    job.finishedAtMs = this.options.clock.now();
    job.result = result;
    job.error = error;
    job.queued = [];
    this.live.delete(job);
    const call = job.call;
    // Its chat stays in Hermes; a job whose call already ended is simply no longer followed here.
    this.options.log.info('watch job ended', { profile: job.profile, status, heard: call !== null });
    if (!call) return;
    for (const approval of job.approvals) if (approval.newsId) call.news.withdraw(approval.newsId);
    job.approvals = [];
    if (status === 'cancelled' && job.cancelledByWatch) return;
    const kind: JobNewsKind = status === 'completed' ? 'finished' : status;
    call.news.add({
      job_id: job.id,
      kind,
      title: job.title,
      ...(result !== undefined ? { result: clip(result, WATCH_LIMITS.jobResultChars) } : {}),
      ...(error !== undefined ? { error } : {}),
    });
  }

  // ---------------------------------------------------------------------------------------------------
  // list_jobs, cancel_job, interrupt_job, answer_approval

  private list(call: CallJobs): WatchAnswer {
    const jobs = [...call.jobs.values()].map((job) => ({
      job_id: job.id,
      title: job.title,
      status: job.cancelledByWatch && !ENDED.has(job.status) ? 'cancelling' : job.status,
      ...(job.otherProfile ? { profile: job.profile } : {}),
      started_at: iso(job.startedAtMs),
      ...(job.finishedAtMs !== undefined ? { finished_at: iso(job.finishedAtMs) } : {}),
      ...(job.result !== undefined ? { result: clip(job.result, WATCH_LIMITS.jobListResultChars) } : {}),
      ...(job.error !== undefined ? { error: job.error } : {}),
      ...(job.approvals.length > 0 ? { waiting_for_approval: true } : {}),
    }));
    return {
      ok: true,
      jobs,
      max_jobs: call.settings.maxJobs,
      jobs_left: call.jobsLeft,
      running: call.active.length,
    };
  }

  private async cancel(call: CallJobs, args: WatchArgs): Promise<WatchAnswer> {
    const request = readJobId(args);
    if (!request.ok) return refusedBy(request);
    const job = call.jobs.get(request.value);
    if (!job) return UNKNOWN_JOB;
    if (ENDED.has(job.status)) return { ok: true, outcome: 'finished', title: job.title, status: job.status };
    if (!job.cancelledByWatch && job.runId !== undefined) {
      const stopped = await job.api.stopRun(job.runId);
      if (!stopped) return { ok: true, outcome: 'failed', title: job.title, error: "Hermes didn't take the stop" };
    }
    // A job Hermes has not accepted yet is stopped the moment it has a run (settleStart).
    job.cancelledByWatch = true;
    job.queued = [];
    return { ok: true, outcome: 'cancelled', title: job.title };
  }

  /**
   * interrupt_job: the user's words go into the running step (a steer, the API server's redirect),
   * and Hermes keeps the work so far; when the run cannot take them now they are queued as the chat's
   * next turn, right after the step it is finishing. The job's result still comes as news.
   */
  private async followUp(call: CallJobs, args: WatchArgs): Promise<WatchAnswer> {
    const request = readFollowUp(args);
    if (!request.ok) return refusedBy(request);
    const job = call.jobs.get(request.value.jobId);
    if (!job) return UNKNOWN_JOB;
    const answer = (outcome: string, error?: string): WatchAnswer => ({
      ok: true,
      outcome,
      title: job.title,
      ...(error !== undefined ? { error } : {}),
    });
    if (job.status === 'completed') return answer('finished');
    if (ENDED.has(job.status) || job.cancelledByWatch) {
      return answer('failed', job.error ?? 'The job was cancelled');
    }
    if (job.followUpBusy) return refusal(409, 'A follow-up to this job is still on its way; try again shortly');
    if (job.runId === undefined) {
      job.queued.push(request.value.message);
      return answer('queued');
    }
    job.followUpBusy = true;
    try {
      const steered = await job.api.steerRun(job.runId, request.value.message);
      if (steered === 'accepted') return answer('interrupted');
      if (steered === 'unreachable') return answer('failed', "Couldn't reach Hermes");
      // The run may have ended while Hermes was asked (it refuses a steer then): read the job afresh.
      const now = job.status as JobStatus;
      if (ENDED.has(now))
        return now === 'completed' ? answer('finished') : answer('failed', job.error ?? 'The job ended');
      job.queued.push(request.value.message);
      return answer('queued');
    } finally {
      job.followUpBusy = false;
    }
  }

  private async answerApproval(call: CallJobs, args: WatchArgs): Promise<WatchAnswer> {
    const request = readApprovalAnswer(args);
    if (!request.ok) return refusedBy(request);
    const job = call.jobs.get(request.value.jobId);
    if (!job) return UNKNOWN_JOB;
    const { approvalId, choice } = request.value;
    const approval = approvalId ? job.approvals.find((pending) => pending.approvalId === approvalId) : job.approvals[0];
    if (!approval || job.runId === undefined) return { ok: true, outcome: 'no_approval', title: job.title };
    // Taken off first: a second answer to the same approval finds nothing to answer.
    job.approvals = job.approvals.filter((pending) => pending !== approval);
    const answered = await job.api.answerApproval(job.runId, choice, approval.requestId);
    if (answered !== 'accepted') {
      if (answered === 'unreachable') job.approvals.unshift(approval);
      return {
        ok: true,
        outcome: answered === 'unreachable' ? 'failed' : 'no_approval',
        title: job.title,
        ...(answered === 'unreachable' ? { error: "Couldn't reach Hermes" } : {}),
      };
    }
    if (approval.newsId) call.news.withdraw(approval.newsId);
    if (job.approvals.length === 0 && job.status === 'waiting_for_approval') job.status = 'running';
    return { ok: true, outcome: choice === 'once' ? 'approved' : 'denied', title: job.title };
  }

  // ---------------------------------------------------------------------------------------------------

  /**
   * A session id in Hermes' own format (`new_session_id()`: local `YYYYMMDD_HHMMSS_<12 hex>`), so the
   * job's chat sorts with the profile's others.
   */
  private sessionIdAt(ms: number): string {
    const at = new Date(ms);
    const two = (n: number) => String(n).padStart(2, '0');
    const date = `${at.getFullYear()}${two(at.getMonth() + 1)}${two(at.getDate())}`;
    const time = `${two(at.getHours())}${two(at.getMinutes())}${two(at.getSeconds())}`;
    return `${date}_${time}_${Buffer.from(this.options.random(6)).toString('hex')}`;
  }

  /**
   * Starts one run of the job. A request that got no answer (the client's timeout, a dropped
   * connection) is asked again with the same Idempotency-Key: Hermes re-attaches it to the run it may
   * have started, so a slow start is never started twice, nor given up while Hermes still takes it.
   */
  private async startRun(job: Job, input: string): Promise<RunStart> {
    let started: RunStart = { outcome: 'unreachable', reason: 'not asked' };
    for (let attempt = 0; attempt < WATCH_LIMITS.jobStartAttempts; attempt += 1) {
      if (job.stop.signal.aborted) break;
      started = await job.api.startRun(
        { input, ...job.runFields },
        { idempotencyKey: this.runKey(job), sessionId: job.sessionId },
      );
      if (started.outcome !== 'unreachable') break;
    }
    return started;
  }

  /** Each run of a job has its own key, so a retried request re-attaches instead of starting twice. */
  private runKey(job: Job): string {
    return `conduit-watch-job-${job.id}-${job.runs}`;
  }
}

const UNKNOWN_JOB: WatchAnswer = { ok: true, outcome: 'unknown_job' };

function refusedBy(checked: Extract<Checked<unknown>, { ok: false }>): WatchAnswer {
  return refusal(checked.status, checked.detail);
}

/**
 * The host's Watch jobs: over the kernel's Hermes API client for the profile its API server serves,
 * or none without one (grants then leave jobs out, and the Watch's jobs go through the iPhone).
 */
export function watchJobsFor(kernel: FeatureKernel, random: (size: number) => Uint8Array): WatchJobs {
  const runs = kernel.hermesRuns;
  if (!runs) return NO_WATCH_JOBS;
  const directory = new JobRunsDirectory(runs, kernel.hermesHome);
  return new HermesWatchJobs({
    runsFor: (profile) => directory.runsFor(profile),
    profileNamed: (name) => directory.profile(name),
    voiceJobs: new StateDbVoiceJobs(kernel.timers),
    clock: kernel.clock,
    timers: kernel.timers,
    log: kernel.log,
    random,
  });
}
