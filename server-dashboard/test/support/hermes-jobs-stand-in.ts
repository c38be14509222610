import { randomBytes } from 'node:crypto';
import type http from 'node:http';
import { LoopbackDouble } from './loopback-server.js';

/**
 * A Hermes API server's cron jobs (`/api/jobs`), as gateway/platforms/api_server.py serves them over
 * cron/jobs.py: bearer key (401 OpenAI-style error otherwise); `GET /api/jobs[?include_disabled=true]`
 * → `{jobs}` (paused jobs only when asked); `POST /api/jobs` `{name, schedule, prompt, deliver, skills,
 * repeat}` → `{job}` (400 `{error}` for a missing name or schedule, name > 200, prompt > 5,000; 500
 * `{error}` for a schedule cron/jobs.py refuses); `GET|PATCH|DELETE /api/jobs/{id}` and
 * `POST /api/jobs/{id}/pause|resume|run` (400 "Invalid job ID format", 404 "Job not found"; PATCH keeps
 * only name, schedule, prompt, deliver, skills, skill, repeat, enabled, else 400 "No valid fields to
 * update"). A job has the fields create_job writes. `cron: false` answers 501 "Cron module not
 * available" as a gateway without cron does; `routes: false` is an older Hermes without the routes.
 * Every request is recorded, so a test waits on what was asked rather than sleeping.
 */
export interface JobsCall {
  method: string;
  path: string;
  body: Record<string, unknown> | null;
}

type Job = Record<string, unknown> & { id: string; enabled: boolean };

const UPDATE_ALLOWED = new Set(['name', 'schedule', 'prompt', 'deliver', 'skills', 'skill', 'repeat', 'enabled']);
const JOB_ID = /^[a-f0-9]{12}$/;

/** cron/jobs.py `parse_schedule`, for the forms a test uses: "every 5m", "30m", "2h", a 5-field cron. */
function parseSchedule(schedule: string): Record<string, unknown> {
  const text = schedule.trim();
  const rest = text.toLowerCase().startsWith('every ') ? text.slice(6).trim() : text;
  const duration = /^(\d*)\s*(m|min|mins|minute|minutes|h|hr|hrs|hour|hours|d|day|days)$/i.exec(rest);
  if (duration) {
    const unit = (duration[2] ?? 'm')[0]?.toLowerCase() ?? 'm';
    const minutes = Number(duration[1] || 1) * (unit === 'h' ? 60 : unit === 'd' ? 1440 : 1);
    return { kind: 'interval', minutes, display: `every ${minutes}m` };
  }
  if (text.split(/\s+/).length >= 5) return { kind: 'cron', expr: text, display: text };
  throw new Error(`Invalid schedule '${schedule}'. Use 'every 30m', '2h', or a cron expression.`);
}

export class HermesJobsStandIn extends LoopbackDouble {
  readonly calls: JobsCall[] = [];
  readonly jobs = new Map<string, Job>();
  /** false: 501, the gateway runs without cron. */
  cron = true;
  /** false: an older Hermes without the jobs routes (404 from the router). */
  routes = true;
  private readonly waiters: (() => void)[] = [];

  constructor(readonly key = 'hermes-key') {
    super();
  }

  /** A job as `hermes cron create` (or an older plugin) left it. */
  seed(fields: { name: string; prompt: string; schedule?: string; skills?: string[]; enabled?: boolean }): Job {
    const job = this.newJob({
      name: fields.name,
      prompt: fields.prompt,
      schedule: fields.schedule ?? 'every 15m',
      deliver: 'local',
      skills: fields.skills ?? [],
    });
    if (fields.enabled === false) Object.assign(job, { enabled: false, state: 'paused' });
    return job;
  }

  /** Resolves once `count` requests have been recorded. */
  async untilCalls(count: number): Promise<void> {
    while (this.calls.length < count) await new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  /** The requests that changed jobs (everything but reads). */
  writes(): JobsCall[] {
    return this.calls.filter((call) => call.method !== 'GET');
  }

  private newJob(body: Record<string, unknown>): Job {
    const parsed = parseSchedule(String(body.schedule ?? ''));
    const now = new Date().toISOString();
    const skills = Array.isArray(body.skills) ? body.skills.map(String) : [];
    const job: Job = {
      id: randomBytes(6).toString('hex'),
      name: body.name,
      prompt: String(body.prompt ?? ''),
      skills,
      skill: skills[0] ?? null,
      model: null,
      provider: null,
      script: null,
      no_agent: false,
      schedule: parsed,
      schedule_display: parsed.display,
      repeat: { times: typeof body.repeat === 'number' ? body.repeat : null, completed: 0 },
      enabled: true,
      state: 'scheduled',
      paused_at: null,
      created_at: now,
      next_run_at: now,
      last_run_at: null,
      last_status: null,
      last_error: null,
      deliver: typeof body.deliver === 'string' ? body.deliver : 'local',
      origin: null,
      enabled_toolsets: null,
      workdir: null,
    };
    this.jobs.set(job.id, job);
    return job;
  }

  private send(res: http.ServerResponse, status: number, body: unknown): void {
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
    res.end(JSON.stringify(body));
  }

  protected async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const url = new URL(req.url ?? '/', 'http://x');
    const text = Buffer.concat(chunks).toString('utf8');
    let body: Record<string, unknown> | null = null;
    try {
      body = text ? (JSON.parse(text) as Record<string, unknown>) : null;
    } catch {
      body = null;
    }
    this.calls.push({ method: req.method ?? 'GET', path: url.pathname + url.search, body });
    for (const wake of this.waiters.splice(0)) wake();
    this.answer(req.method ?? 'GET', url, body, req.headers.authorization, res);
  }

  private answer(
    method: string,
    url: URL,
    body: Record<string, unknown> | null,
    authorization: string | undefined,
    res: http.ServerResponse,
  ): void {
    const match = /^\/api\/jobs(?:\/([^/]+)(?:\/(pause|resume|run))?)?$/.exec(url.pathname);
    if (!this.routes || !match) return this.send(res, 404, { error: 'Not Found' });
    if (authorization !== `Bearer ${this.key}`) {
      return this.send(res, 401, {
        error: { message: 'Invalid API key', type: 'invalid_request_error', code: 'invalid_api_key' },
      });
    }
    if (!this.cron) return this.send(res, 501, { error: 'Cron module not available' });
    const [, id, action] = match;
    if (id === undefined) {
      if (method === 'GET') {
        const all = url.searchParams.get('include_disabled')?.toLowerCase();
        const include = all === 'true' || all === '1';
        return this.send(res, 200, { jobs: [...this.jobs.values()].filter((job) => include || job.enabled) });
      }
      if (method !== 'POST') return this.send(res, 405, { error: 'Method Not Allowed' });
      const fields = body ?? {};
      const name = typeof fields.name === 'string' ? fields.name.trim() : '';
      const schedule = typeof fields.schedule === 'string' ? fields.schedule.trim() : '';
      const prompt = typeof fields.prompt === 'string' ? fields.prompt : '';
      if (!name) return this.send(res, 400, { error: 'Name is required' });
      if (name.length > 200) return this.send(res, 400, { error: 'Name must be \u2264 200 characters' });
      if (!schedule) return this.send(res, 400, { error: 'Schedule is required' });
      if (prompt.length > 5000) return this.send(res, 400, { error: 'Prompt must be \u2264 5000 characters' });
      try {
        return this.send(res, 200, { job: this.newJob({ ...fields, name, schedule }) });
      } catch (error) {
        return this.send(res, 500, { error: (error as Error).message });
      }
    }
    if (!JOB_ID.test(id)) return this.send(res, 400, { error: 'Invalid job ID format' });
    const job = this.jobs.get(id);
    if (action !== undefined) {
      if (method !== 'POST') return this.send(res, 405, { error: 'Method Not Allowed' });
      if (!job) return this.send(res, 404, { error: 'Job not found' });
      if (action === 'pause')
        Object.assign(job, { enabled: false, state: 'paused', paused_at: new Date().toISOString() });
      if (action === 'resume') Object.assign(job, { enabled: true, state: 'scheduled', paused_at: null });
      if (action === 'run') Object.assign(job, { next_run_at: new Date().toISOString() });
      return this.send(res, 200, { job });
    }
    if (method === 'GET') return job ? this.send(res, 200, { job }) : this.send(res, 404, { error: 'Job not found' });
    if (method === 'DELETE') {
      if (!job) return this.send(res, 404, { error: 'Job not found' });
      this.jobs.delete(id);
      return this.send(res, 200, { ok: true });
    }
    if (method !== 'PATCH') return this.send(res, 405, { error: 'Method Not Allowed' });
    const sanitized = Object.fromEntries(Object.entries(body ?? {}).filter(([key]) => UPDATE_ALLOWED.has(key)));
    if (Object.keys(sanitized).length === 0) return this.send(res, 400, { error: 'No valid fields to update' });
    if (typeof sanitized.name === 'string' && sanitized.name.length > 200) {
      return this.send(res, 400, { error: 'Name must be \u2264 200 characters' });
    }
    if (typeof sanitized.prompt === 'string' && sanitized.prompt.length > 5000) {
      return this.send(res, 400, { error: 'Prompt must be \u2264 5000 characters' });
    }
    if (!job) return this.send(res, 404, { error: 'Job not found' });
    try {
      if (typeof sanitized.schedule === 'string') {
        const parsed = parseSchedule(sanitized.schedule);
        Object.assign(job, { schedule: parsed, schedule_display: parsed.display });
        delete sanitized.schedule;
      }
    } catch (error) {
      return this.send(res, 500, { error: (error as Error).message });
    }
    if (Array.isArray(sanitized.skills)) sanitized.skill = sanitized.skills[0] ?? null;
    Object.assign(job, sanitized);
    return this.send(res, 200, { job });
  }
}
