import { z } from 'zod';

/**
 * The Hermes API server's cron jobs (spec/hermes/SURFACES.md §1, `/api/jobs`): Hermes' own scheduling
 * surface, as `gateway/platforms/api_server.py` serves it over `cron/jobs.py`.
 *
 * - `GET /api/jobs[?include_disabled=true]` → `{jobs: [job…]}` (paused jobs only when asked for);
 * - `POST /api/jobs` `{name, schedule, prompt, deliver?, skills?, repeat?}` → `{job}`; 400 `{error}`
 *   for a missing name or schedule, a name over 200 or a prompt over 5,000 characters; 500 `{error}`
 *   when `cron/jobs.py` refuses the schedule;
 * - `GET|PATCH|DELETE /api/jobs/{id}` → `{job}` / `{job}` / `{ok: true}`; PATCH takes only `name,
 *   schedule, prompt, deliver, skills, skill, repeat, enabled` (400 "No valid fields to update");
 * - `POST /api/jobs/{id}/pause|resume|run` → `{job}`;
 * - an id is 12 lowercase hex digits (400 "Invalid job ID format"), an unknown one 404 "Job not found";
 *   501 "Cron module not available" when the gateway runs without cron.
 *
 * A job is read forgivingly, as the run events are: Hermes adds fields between versions, so unknown
 * fields are kept and a known field of another type reads as absent.
 */

/** A field read only when it is text; anything else reads as absent. */
const text = z.string().optional().catch(undefined);
const flag = z.boolean().optional().catch(undefined);

/** A job id as `uuid4().hex[:12]` makes them. */
export const HERMES_JOB_ID = /^[a-f0-9]{12}$/;

/** Bounds the API server checks on create and update (`_MAX_NAME_LENGTH`, `_MAX_PROMPT_LENGTH`). */
export const HERMES_JOB_BOUNDS = { nameMaxChars: 200, promptMaxChars: 5000 } as const;

export const hermesJob = z.looseObject({
  id: z.string().min(1).max(64),
  name: text,
  prompt: text,
  skills: z.array(z.string()).optional().catch(undefined),
  /** `{kind: "interval", minutes, display}`, `{kind: "cron", expr, display}` or `{kind: "once", run_at}`. */
  schedule: z
    .looseObject({ kind: text, minutes: z.number().optional().catch(undefined), expr: text, display: text })
    .optional()
    .catch(undefined),
  schedule_display: text,
  enabled: flag,
  /** `scheduled`, `paused`, `completed` or `error`. */
  state: text,
  deliver: text,
  next_run_at: z.string().nullish().catch(undefined),
  last_run_at: z.string().nullish().catch(undefined),
  last_status: z.string().nullish().catch(undefined),
});
export type HermesJob = z.infer<typeof hermesJob>;

export const hermesJobAnswer = z.looseObject({ job: hermesJob });
export const hermesJobsAnswer = z.looseObject({ jobs: z.array(z.unknown()) });

/** The body of `POST /api/jobs`. `schedule` is Hermes' own grammar: `every 5m`, `0 9 * * *`, an ISO time. */
export interface HermesJobCreate {
  name: string;
  schedule: string;
  prompt: string;
  /** Where a run's reply goes; Hermes' default is `local` (kept on this machine only). */
  deliver?: string;
  skills?: string[];
  /** Runs before the job completes; absent runs forever. */
  repeat?: number;
}

/** The fields `PATCH /api/jobs/{id}` accepts; the others are dropped by Hermes. */
export type HermesJobUpdate = Partial<{
  name: string;
  schedule: string;
  prompt: string;
  deliver: string;
  skills: string[];
  repeat: number;
  enabled: boolean;
}>;

/**
 * How Hermes answered a jobs request:
 * - `ok` with the job (or jobs, or `true` for a delete);
 * - `not_found`: no job has that id;
 * - `unavailable`: this Hermes has no jobs surface (501 without cron, or 404 from a build without the
 *   routes);
 * - `refused`: any other answer, with Hermes' own `error` text when it gave one (it says what is wrong
 *   with a schedule or a name);
 * - `malformed`: a 2xx answer of another shape;
 * - `unreachable`: the transport failed (`reason` names no URL and no key).
 */
export type HermesJobResult<T> =
  | { outcome: 'ok'; value: T }
  | { outcome: 'not_found' }
  | { outcome: 'unavailable'; status: number }
  | { outcome: 'refused'; status: number; error?: string }
  | { outcome: 'malformed' }
  | { outcome: 'unreachable'; reason: string };

/** Hermes' error text from `{"error": "…"}` or the OpenAI-style `{"error": {"message": "…"}}`, cut short. */
export function hermesErrorText(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const error = (body as { error?: unknown }).error;
  const message =
    typeof error === 'string'
      ? error
      : typeof error === 'object' && error !== null && typeof (error as { message?: unknown }).message === 'string'
        ? (error as { message: string }).message
        : undefined;
  return message === undefined ? undefined : message.slice(0, 300);
}

/** The jobs of a list answer; an entry that is not a job is skipped rather than losing the list. */
export function jobsOf(answer: z.infer<typeof hermesJobsAnswer>): HermesJob[] {
  return answer.jobs.flatMap((entry) => {
    const job = hermesJob.safeParse(entry);
    return job.success ? [job.data] : [];
  });
}
