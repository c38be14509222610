import { isProfileName } from '@conduit/contracts/dashboard/profile';
import type { WatchArgs } from './watch-answer.js';
import { WATCH_LIMITS } from './watch-limits.js';

/**
 * The job tools' arguments, checked beside the jobs: each reader returns a clean request, or the
 * refusal the Watch hears (`{status, detail}`, sealed like any answer). Only string and integer
 * values reach here (the grant book drops the rest).
 */
export type Checked<T> = { ok: true; value: T } | { ok: false; status: number; detail: string };

export interface StartRequest {
  task: string;
  title: string | undefined;
  /** Another profile the job should run on, as the Watch named it (checked against job_profiles later). */
  profile: string | undefined;
}

export interface FollowUpRequest {
  jobId: string;
  message: string;
}

export interface ApprovalRequest {
  jobId: string;
  choice: 'once' | 'deny';
  approvalId: string | undefined;
}

const refused = (status: number, detail: string) => ({ ok: false as const, status, detail });

/** A text argument trimmed, or undefined when absent or blank. */
function textOf(args: WatchArgs, ...names: string[]): string | undefined {
  for (const name of names) {
    const value = args[name];
    if (typeof value === 'string' && value.trim() !== '') return value.trim();
  }
  return undefined;
}

function jobIdOf(args: WatchArgs): string | undefined {
  const id = textOf(args, 'job_id');
  return id !== undefined && id.length <= 64 ? id : undefined;
}

/** `start_job {task, title?, profile?}`; `prompt` is read as the task too, as the phone's voice jobs name it. */
export function readStartJob(args: WatchArgs): Checked<StartRequest> {
  const task = textOf(args, 'task', 'prompt');
  if (task === undefined) return refused(400, 'task is required');
  if (task.length > WATCH_LIMITS.jobTaskChars) {
    return refused(400, `task must be at most ${WATCH_LIMITS.jobTaskChars} characters`);
  }
  const profile = textOf(args, 'profile');
  if (profile !== undefined && !isProfileName(profile)) return refused(400, 'profile must be a Hermes profile name');
  const title = textOf(args, 'title');
  return { ok: true, value: { task, title: title?.slice(0, WATCH_LIMITS.jobTitleChars), profile } };
}

/** `cancel_job {job_id}`. */
export function readJobId(args: WatchArgs): Checked<string> {
  const jobId = jobIdOf(args);
  return jobId === undefined ? refused(400, 'job_id is required') : { ok: true, value: jobId };
}

/** `interrupt_job {job_id, message}`. */
export function readFollowUp(args: WatchArgs): Checked<FollowUpRequest> {
  const jobId = jobIdOf(args);
  if (jobId === undefined) return refused(400, 'job_id is required');
  const message = textOf(args, 'message');
  if (message === undefined) return refused(400, 'message is required');
  if (message.length > WATCH_LIMITS.jobFollowUpChars) {
    return refused(400, `message must be at most ${WATCH_LIMITS.jobFollowUpChars} characters`);
  }
  return { ok: true, value: { jobId, message } };
}

/**
 * `answer_approval {job_id, choice, approval_id?}`: the Watch approves once or denies, never for the
 * session or always (the seed); Hermes' own aliases of "once" are read as once.
 */
export function readApprovalAnswer(args: WatchArgs): Checked<ApprovalRequest> {
  const jobId = jobIdOf(args);
  if (jobId === undefined) return refused(400, 'job_id is required');
  const choice = textOf(args, 'choice')?.toLowerCase();
  const approvalId = textOf(args, 'approval_id');
  if (choice === 'once' || choice === 'approve' || choice === 'approved' || choice === 'allow') {
    return { ok: true, value: { jobId, choice: 'once', approvalId } };
  }
  if (choice === 'deny') return { ok: true, value: { jobId, choice: 'deny', approvalId } };
  return refused(400, 'The Watch can only approve once or deny');
}
