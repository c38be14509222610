import { hermesRunEvent, runCreated, type HermesRunEvent } from './runs.js';
import { readSse } from './sse-reader.js';
import {
  hermesErrorText,
  hermesJobAnswer,
  hermesJobsAnswer,
  jobsOf,
  type HermesJob,
  type HermesJobCreate,
  type HermesJobResult,
  type HermesJobUpdate,
} from './jobs.js';

/**
 * The Hermes API server (spec/hermes/SURFACES.md §1), the one client of it in the suite: start a
 * run (`POST /v1/runs`), read its lifecycle events (`GET /v1/runs/{id}/events`, SSE), answer its
 * approval (`POST /v1/runs/{id}/approval`) and stop it (`POST /v1/runs/{id}/stop`). The host's
 * approval cards, the messenger's agent backend and the voice gateway's Hermes agent all go through it.
 *
 * Every request carries the server's bearer key and refuses redirects (a redirect could carry the key
 * elsewhere); the key never reaches a log line or an error message. Failures are answered as values,
 * so each caller decides what a refusal means for it.
 */
export interface HermesApiOptions {
  /**
   * The API server, e.g. `http://127.0.0.1:8642`; a secondary profile's `…/p/<profile>` prefix is kept
   * in front of every path.
   */
  url: string;
  /** API_SERVER_KEY, sent as `Authorization: Bearer …`; null sends none. */
  key: string | null;
  /** How long a request may wait for its answer; an event stream is never cut. No bound when absent. */
  timeoutMs?: number;
  fetch?: typeof fetch;
}

/** An OpenAI-style user message, the form `input` takes when it carries images. */
export interface RunInputMessage {
  role: 'user';
  content: ({ type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } })[];
}

/** The body of `POST /v1/runs`. */
export interface RunRequest {
  input: string | RunInputMessage[];
  session_id?: string;
  instructions?: string;
  /**
   * Per-request overrides (SURFACES.md §1): the model and provider the run uses, and its reasoning
   * effort in `model_options` (a bare `model` names the "Hermes model" unless `direct_model_requests`).
   */
  model?: string;
  provider?: string;
  model_options?: { reasoning_effort?: string };
}

export interface RunStartOptions {
  /** Replays of the same key and body re-attach to the run instead of starting a second one. */
  idempotencyKey?: string;
  /** `X-Hermes-Session-Id`: the Hermes session the run continues. */
  sessionId?: string;
  /** Gives up on the request (answered as `unreachable`); the caller asks its signal why. */
  signal?: AbortSignal;
}

export interface RunEventsOptions {
  /** Ends the stream: no event is yielded once it aborts, not even one already received. */
  signal?: AbortSignal;
}

export type RunStart =
  | { outcome: 'started'; runId: string }
  /** 409: the Idempotency-Key names a run started with another body, which cannot be re-attached. */
  | { outcome: 'key_conflict' }
  | { outcome: 'refused'; status: number }
  /** A 2xx answer without a run id. */
  | { outcome: 'malformed' }
  /** `reason` is the transport's message (no URL, no key). */
  | { outcome: 'unreachable'; reason: string };

export type RunEvents =
  | { outcome: 'streaming'; events: AsyncGenerator<HermesRunEvent> }
  | { outcome: 'refused'; status: number }
  | { outcome: 'unreachable'; reason: string };

export type ApprovalAnswerResult = 'accepted' | 'run_not_found' | 'refused' | 'unreachable';

export interface HermesApi {
  startRun(request: RunRequest, options?: RunStartOptions): Promise<RunStart>;
  /**
   * The run's events (those `./runs.ts` declares; keepalives, `[DONE]`, unreadable frames and events
   * of other names are skipped); the stream ends when Hermes closes it (after its terminal event).
   */
  runEvents(runId: string, options?: RunEventsOptions): Promise<RunEvents>;
  /** `{choice, request_id?}`; an early Hermes without request ids answers the oldest pending approval. */
  answerApproval(runId: string, choice: string, requestId: string | undefined): Promise<ApprovalAnswerResult>;
  /** Whether Hermes took the stop (it answers `status: stopping`). */
  stopRun(runId: string): Promise<boolean>;
  /**
   * `POST /v1/runs/{id}/steer {input}`: guidance folded into the running turn at its next tool boundary.
   * `refused` covers a run that is not running or did not take it (409), so the caller queues instead.
   */
  steerRun(runId: string, text: string): Promise<'accepted' | 'refused' | 'unreachable'>;
  /**
   * Hermes' cron jobs (`/api/jobs`, ./jobs.ts): its own scheduling surface, so a job written here is
   * one `hermes cron list` shows and the gateway's ticker runs. Paused jobs are listed only when asked.
   */
  listJobs(options?: { includeDisabled?: boolean }): Promise<HermesJobResult<HermesJob[]>>;
  createJob(job: HermesJobCreate): Promise<HermesJobResult<HermesJob>>;
  getJob(jobId: string): Promise<HermesJobResult<HermesJob>>;
  updateJob(jobId: string, change: HermesJobUpdate): Promise<HermesJobResult<HermesJob>>;
  deleteJob(jobId: string): Promise<HermesJobResult<true>>;
  pauseJob(jobId: string): Promise<HermesJobResult<HermesJob>>;
  resumeJob(jobId: string): Promise<HermesJobResult<HermesJob>>;
  /** Runs the job at the next tick, outside its schedule. */
  runJob(jobId: string): Promise<HermesJobResult<HermesJob>>;
}

export function hermesApiClient(options: HermesApiOptions): HermesApi {
  const doFetch = options.fetch ?? fetch;
  const base = options.url.replace(/\/+$/, '');
  const runPath = (runId: string, tail = '') => `${base}/v1/runs/${encodeURIComponent(runId)}${tail}`;

  function request(
    url: string,
    init: {
      method?: 'POST' | 'PATCH' | 'DELETE';
      headers?: Record<string, string>;
      body?: unknown;
      stream?: boolean;
      signal?: AbortSignal | undefined;
    },
  ): Promise<Response> {
    const headers: Record<string, string> = { ...init.headers };
    if (options.key !== null) headers.authorization = `Bearer ${options.key}`;
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    // An event stream is never cut: a run waiting on an approval sends nothing but keepalives for minutes.
    const timeoutMs = init.stream ? undefined : options.timeoutMs;
    const signals = [
      ...(timeoutMs !== undefined ? [AbortSignal.timeout(timeoutMs)] : []),
      ...(init.signal ? [init.signal] : []),
    ];
    const signal = signals.length > 1 ? AbortSignal.any(signals) : signals[0];
    return doFetch(url, {
      method: init.method ?? 'GET',
      headers,
      ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
      redirect: 'manual',
      ...(signal ? { signal } : {}),
    });
  }

  return {
    async startRun(body, run = {}) {
      let response: Response;
      try {
        response = await request(`${base}/v1/runs`, {
          method: 'POST',
          headers: {
            accept: 'application/json',
            ...(run.idempotencyKey !== undefined ? { 'idempotency-key': run.idempotencyKey } : {}),
            ...(run.sessionId !== undefined ? { 'x-hermes-session-id': run.sessionId } : {}),
          },
          body,
          signal: run.signal,
        });
      } catch (error) {
        return { outcome: 'unreachable', reason: reasonOf(error) };
      }
      if (response.status === 409) {
        await response.body?.cancel();
        return { outcome: 'key_conflict' };
      }
      if (response.status !== 202 && response.status !== 200) {
        await response.body?.cancel();
        return { outcome: 'refused', status: response.status };
      }
      const created = runCreated.safeParse(await response.json().catch(() => null));
      return created.success ? { outcome: 'started', runId: created.data.run_id } : { outcome: 'malformed' };
    },

    async runEvents(runId, stream = {}) {
      let response: Response;
      try {
        response = await request(runPath(runId, '/events'), {
          headers: { accept: 'text/event-stream' },
          stream: true,
          signal: stream.signal,
        });
      } catch (error) {
        return { outcome: 'unreachable', reason: reasonOf(error) };
      }
      if (!response.ok || response.body === null) {
        await response.body?.cancel();
        return { outcome: 'refused', status: response.status };
      }
      return { outcome: 'streaming', events: runEventsOf(response.body, stream.signal) };
    },

    async answerApproval(runId, choice, requestId) {
      const body: Record<string, string> = { choice };
      if (requestId) body.request_id = requestId;
      try {
        const response = await request(runPath(runId, '/approval'), {
          method: 'POST',
          headers: { accept: 'application/json' },
          body,
        });
        const text = await response.text();
        if (response.ok) return 'accepted';
        if (response.status === 404) return text.includes('run_not_found') ? 'run_not_found' : 'refused';
        return 'refused';
      } catch {
        return 'unreachable';
      }
    },

    async stopRun(runId) {
      try {
        const response = await request(runPath(runId, '/stop'), { method: 'POST' });
        await response.body?.cancel();
        return response.ok;
      } catch {
        return false;
      }
    },

    async steerRun(runId, text) {
      try {
        const response = await request(runPath(runId, '/steer'), { method: 'POST', body: { input: text } });
        const answer = (await response.json().catch(() => null)) as { accepted?: unknown } | null;
        return response.ok && answer?.accepted === true ? 'accepted' : 'refused';
      } catch {
        return 'unreachable';
      }
    },

    listJobs(list = {}) {
      const query = list.includeDisabled ? '?include_disabled=true' : '';
      return jobCall(request, `${base}/api/jobs${query}`, {}, (json) => {
        const answer = hermesJobsAnswer.safeParse(json);
        return answer.success ? jobsOf(answer.data) : undefined;
      });
    },
    createJob(job) {
      return jobCall(request, `${base}/api/jobs`, { method: 'POST', body: job }, oneJob);
    },
    getJob(jobId) {
      return jobCall(request, jobPath(base, jobId), {}, oneJob);
    },
    updateJob(jobId, change) {
      return jobCall(request, jobPath(base, jobId), { method: 'PATCH', body: change }, oneJob);
    },
    deleteJob(jobId) {
      return jobCall(request, jobPath(base, jobId), { method: 'DELETE' }, () => true as const);
    },
    pauseJob(jobId) {
      return jobCall(request, jobPath(base, jobId, '/pause'), { method: 'POST' }, oneJob);
    },
    resumeJob(jobId) {
      return jobCall(request, jobPath(base, jobId, '/resume'), { method: 'POST' }, oneJob);
    },
    runJob(jobId) {
      return jobCall(request, jobPath(base, jobId, '/run'), { method: 'POST' }, oneJob);
    },
  };
}

/**
 * The JSON events of a run's SSE stream; keepalive comments, `[DONE]`, unreadable frames and events
 * of names `./runs.ts` does not declare are skipped.
 */
async function* runEventsOf(
  body: ReadableStream<Uint8Array>,
  signal: AbortSignal | undefined,
): AsyncGenerator<HermesRunEvent> {
  for await (const frame of readSse(body, signal ? { signal } : {})) {
    if (frame.data === '' || frame.data === '[DONE]') continue;
    let json: unknown;
    try {
      json = JSON.parse(frame.data);
    } catch {
      // A malformed frame is skipped; the run's terminal event still decides the outcome.
      continue;
    }
    const event = hermesRunEvent.safeParse(json);
    if (event.success) yield event.data;
  }
}

function reasonOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function jobPath(base: string, jobId: string, tail = ''): string {
  return `${base}/api/jobs/${encodeURIComponent(jobId)}${tail}`;
}

function oneJob(json: unknown): HermesJob | undefined {
  const answer = hermesJobAnswer.safeParse(json);
  return answer.success ? answer.data.job : undefined;
}

/** One jobs request, its answer read as a value (./jobs.ts, `HermesJobResult`). */
async function jobCall<T>(
  send: (
    url: string,
    init: { method?: 'POST' | 'PATCH' | 'DELETE'; headers?: Record<string, string>; body?: unknown },
  ) => Promise<Response>,
  url: string,
  init: { method?: 'POST' | 'PATCH' | 'DELETE'; body?: unknown },
  read: (json: unknown) => T | undefined,
): Promise<HermesJobResult<T>> {
  let response: Response;
  try {
    response = await send(url, { ...init, headers: { accept: 'application/json' } });
  } catch (error) {
    return { outcome: 'unreachable', reason: reasonOf(error) };
  }
  const json: unknown = await response.json().catch(() => null);
  if (response.ok) {
    const value = read(json);
    return value === undefined ? { outcome: 'malformed' } : { outcome: 'ok', value };
  }
  const error = hermesErrorText(json);
  if (response.status === 501) return { outcome: 'unavailable', status: 501 };
  // Hermes answers an unknown id "Job not found"; any other 404 is a Hermes without the jobs routes.
  if (response.status === 404) {
    return error === 'Job not found' ? { outcome: 'not_found' } : { outcome: 'unavailable', status: 404 };
  }
  return { outcome: 'refused', status: response.status, ...(error !== undefined ? { error } : {}) };
}
