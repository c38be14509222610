import type { ProfileScope } from '../../notifier/notifier.js';
import type { JobOptions } from './grant-request.js';
import type { AnswerDelivery, WatchAnswer, WatchArgs } from './watch-answer.js';

/** What a call keeps across renewals: a renewal that leaves a field out keeps the call's. */
export interface CallJobSettings {
  maxJobs: number;
  jobOptions: JobOptions | undefined;
  jobProfiles: string[] | undefined;
}

/** The tools jobs bring to a grant (the companions ride along whenever any of them is granted). */
export const WATCH_JOB_TOOLS = [
  'start_job',
  'list_jobs',
  'cancel_job',
  'interrupt_job',
  'job_news',
  'answer_approval',
] as const;
export type WatchJobTool = (typeof WATCH_JOB_TOOLS)[number];

export function isJobTool(tool: string): tool is WatchJobTool {
  return (WATCH_JOB_TOOLS as readonly string[]).includes(tool);
}

/** The grant as the jobs see it. */
export interface JobGrant {
  id: string;
  profile: ProfileScope;
  settings: CallJobSettings;
}

/**
 * Where Watch jobs plug in (the seed: start/list/cancel Hermes chats on the grant's profile, job news
 * re-sent until acknowledged, follow-ups, carry_jobs_from). The grant book asks it whether a grant
 * may carry jobs, hands it renewals and job tool calls, and tells it when a grant closes; everything
 * about the jobs themselves lives behind it.
 */
export interface WatchJobs {
  /** Whether jobs can run for this profile here (Hermes' chats served in this process). */
  available(profile: ProfileScope): boolean | Promise<boolean>;
  /**
   * A renewal: `from` is the call's previous grant, open and on the same profile. Moves its jobs to
   * `to`; true when it did (the grant then answers `jobs_carried_from`).
   */
  carry(from: JobGrant, to: JobGrant): boolean;
  /**
   * Runs one job tool call of the grant; `delivery` tells whether its answer reached the relay (job
   * news is retired only then).
   */
  run(grant: JobGrant, tool: WatchJobTool, args: WatchArgs, delivery?: AnswerDelivery): Promise<WatchAnswer>;
  /** The grant closed: jobs still running keep running in Hermes. */
  released(grant: JobGrant): void;
  /** The service is stopping: nothing more is followed here (jobs keep running in Hermes). */
  close?(): void;
}

/** This host without jobs: grants leave them out, and the Watch's jobs go through the iPhone. */
export const NO_WATCH_JOBS: WatchJobs = {
  available: () => false,
  carry: () => false,
  run: () => Promise.resolve({ ok: false, status: 501, detail: "Watch jobs aren't available on this host" }),
  released: () => undefined,
};
