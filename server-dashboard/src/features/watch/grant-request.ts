import { z } from 'zod';
import {
  GRANTABLE_WATCH_TOOLS,
  watchGrantIdPattern,
  watchJobOptions,
  type GrantableWatchTool,
} from '@conduit/contracts/dashboard/watch-tools';
import { isProfileName } from '@conduit/contracts/dashboard/profile';
import { DetailError } from '../../kernel/detail-errors.js';
import { WATCH_LIMITS } from './watch-limits.js';

/** The phone's voice-job choices (`job_options`), as text fields only. */
export type JobOptions = z.infer<typeof watchJobOptions>;

/** A grant request, checked: what the handler acts on. Fields left out stay undefined (a renewal keeps the call's). */
export interface GrantRequest {
  tools: GrantableWatchTool[];
  maxJobs: number | undefined;
  audio: boolean;
  carryJobsFrom: string | undefined;
  jobProfiles: string[] | undefined;
  jobOptions: JobOptions | undefined;
}

const TOOL_LIST = `${GRANTABLE_WATCH_TOOLS.slice(0, -1).join(', ')} and ${GRANTABLE_WATCH_TOOLS.at(-1) ?? ''}`;

function isGrantable(tool: unknown): tool is GrantableWatchTool {
  return typeof tool === 'string' && (GRANTABLE_WATCH_TOOLS as readonly string[]).includes(tool);
}

/**
 * Checks `POST /watch-tools/grant`'s body field by field, in the reference's order, answering 400 with
 * the message ROUTES.md gives for the first field that is wrong.
 */
export function readGrantRequest(body: unknown): GrantRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new DetailError(400, 'Expected a JSON object');
  }
  const fields = body as Record<string, unknown>;
  const tools = fields.tools;
  if (!Array.isArray(tools) || tools.length === 0) throw new DetailError(400, 'tools must be a non-empty list');
  if (!tools.every(isGrantable)) throw new DetailError(400, `The Watch can only be granted ${TOOL_LIST}`);
  if (fields.audio !== undefined && typeof fields.audio !== 'boolean') {
    throw new DetailError(400, 'audio must be true or false');
  }
  const carry = fields.carry_jobs_from;
  if (carry !== undefined && (typeof carry !== 'string' || !watchGrantIdPattern.test(carry))) {
    throw new DetailError(400, 'carry_jobs_from must be a grant id');
  }
  const maxJobs = fields.max_jobs;
  if (
    maxJobs !== undefined &&
    (typeof maxJobs !== 'number' || !Number.isInteger(maxJobs) || maxJobs < 0 || maxJobs > WATCH_LIMITS.maxMaxJobs)
  ) {
    throw new DetailError(400, `max_jobs must be a whole number from 0 to ${WATCH_LIMITS.maxMaxJobs}`);
  }
  const profiles = fields.job_profiles;
  if (profiles !== undefined) {
    if (!Array.isArray(profiles) || profiles.length > WATCH_LIMITS.maxJobProfiles) {
      throw new DetailError(400, `job_profiles must be a list of at most ${WATCH_LIMITS.maxJobProfiles} profile names`);
    }
    if (!profiles.every((name) => typeof name === 'string' && isProfileName(name))) {
      throw new DetailError(400, 'job_profiles must hold Hermes profile names');
    }
  }
  let options: JobOptions | undefined;
  if (fields.job_options !== undefined) {
    const parsed = watchJobOptions.safeParse(fields.job_options);
    if (!parsed.success) {
      throw new DetailError(400, 'job_options must be an object of model, provider and reasoning_effort text');
    }
    options = parsed.data;
  }
  return {
    tools: [...new Set(tools)],
    maxJobs: maxJobs as number | undefined,
    audio: fields.audio === true,
    carryJobsFrom: carry as string | undefined,
    jobProfiles: profiles === undefined ? undefined : [...new Set(profiles as string[])],
    jobOptions: options,
  };
}

/** `POST /watch-tools/revoke`'s grant id, or 400. */
export function readRevokeRequest(body: unknown): string {
  const grantId =
    typeof body === 'object' && body !== null && !Array.isArray(body)
      ? (body as Record<string, unknown>).grant_id
      : undefined;
  if (typeof grantId !== 'string' || grantId.trim() === '') throw new DetailError(400, 'grant_id is required');
  return grantId.trim();
}
