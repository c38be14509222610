/**
 * A stand-in for Hermes' API server runs (spec/hermes/SURFACES.md §1) for the Watch jobs tests:
 * `POST /v1/runs` → 202 `{run_id, status}` (Bearer key checked, Idempotency-Key replays re-attach),
 * `GET /v1/runs/{id}/events` as SSE `data: {json}` frames (the run's journal replayed, then live, the
 * stream closed after its terminal event), `POST …/approval` `{choice, request_id?}`, `POST …/stop`
 * (`status: stopping`, then `run.cancelled`), `POST …/steer` `{input}` (409 when the run is not running
 * or does not take it). Every request is reported, so a test waits for the one it expects; a test can
 * hold a start's answer or refuse it. Other profiles are served under `/p/<profile>/…`, each with its
 * own key (SURFACES.md §1, multi-profile).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

type Json = Record<string, unknown>;

export interface StandInRun {
  id: string;
  /** The profile whose `/p/<profile>` path started it; null for the server's own profile. */
  profile: string | null;
  body: Json;
  input: string;
  sessionHeader: string | null;
  idempotencyKey: string | null;
  journal: Json[];
  done: boolean;
  approvals: Json[];
  steers: string[];
  stops: number;
}

export interface HermesRequest {
  method: string;
  path: string;
  body: Json;
  run: StandInRun | undefined;
}

/** How a held start is answered once the test lets it go. */
export type StartAnswer = { accept: true } | { status: number; error: string };

interface HeldStart {
  run: StandInRun;
  release(answer: StartAnswer): void;
}

const TERMINAL = new Set(['run.completed', 'run.failed', 'run.cancelled']);

export class HermesRunsStandIn {
  readonly runs = new Map<string, StandInRun>();
  readonly requests: HermesRequest[] = [];
  url = '';
  /** Starts whose run is made but whose answer is lost (the connection drops before it is written). */
  dropStartAnswers = 0;
  /** Whether a running run takes steers (Hermes without `/steer`, or a step that cannot, answers 409). */
  steerAccepts = true;
  private readonly server: http.Server;
  private readonly listeners = new Map<string, Set<(event: Json) => void>>();
  private readonly waiters: { match: (request: HermesRequest) => boolean; resolve: (r: HermesRequest) => void }[] = [];
  private readonly heldWaiters: ((held: HeldStart) => void)[] = [];
  private holdStarts = 0;
  private readonly heldSteers: ((release: () => void) => void)[] = [];
  private counter = 0;

  constructor(
    private readonly apiKey: string,
    private readonly profileKeys: Record<string, string> = {},
  ) {
    this.server = http.createServer((req, res) => void this.handle(req, res));
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this.url;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** The next request that matches (already made ones are not looked at). */
  next(match: (request: HermesRequest) => boolean): Promise<HermesRequest> {
    return new Promise((resolve) => this.waiters.push({ match, resolve }));
  }

  nextOf(method: string, tail: 'runs' | 'events' | 'approval' | 'stop' | 'steer'): Promise<HermesRequest> {
    return this.next((request) => request.method === method && request.path.endsWith(`/${tail}`));
  }

  /** The next `POST /v1/runs`, its run created. */
  async nextRun(): Promise<StandInRun> {
    const request = await this.nextOf('POST', 'runs');
    if (!request.run) throw new Error('a start without a run');
    return request.run;
  }

  /** The next start is held unanswered (the run is made, its id not told) until the test releases it. */
  holdNextStart(): Promise<HeldStart> {
    this.holdStarts += 1;
    return new Promise((resolve) => this.heldWaiters.push(resolve));
  }

  /** The next steer is taken but left unanswered until the test releases it. */
  holdNextSteer(): Promise<() => void> {
    return new Promise((resolve) => this.heldSteers.push(resolve));
  }

  emit(run: StandInRun, event: string, fields: Json = {}): void {
    const framed = { event, run_id: run.id, timestamp: Date.now() / 1000, ...fields };
    run.journal.push(framed);
    if (TERMINAL.has(event)) run.done = true;
    for (const listener of this.listeners.get(run.id) ?? []) listener(framed);
  }

  private report(request: HermesRequest): void {
    this.requests.push(request);
    for (let index = 0; index < this.waiters.length; index += 1) {
      const waiter = this.waiters[index];
      if (waiter?.match(request)) {
        this.waiters.splice(index, 1);
        waiter.resolve(request);
        return;
      }
    }
  }

  private json(res: http.ServerResponse, status: number, body: unknown): void {
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const url = new URL(req.url ?? '/', 'http://hermes');
    const scoped = /^\/p\/([^/]+)(\/.*)$/.exec(url.pathname);
    const profile = scoped ? decodeURIComponent(scoped[1] ?? '') : null;
    const pathname = scoped ? (scoped[2] ?? '/') : url.pathname;
    const key = profile === null ? this.apiKey : this.profileKeys[profile];
    if (key === undefined) return this.json(res, 404, { error: 'not_found' });
    if (req.headers.authorization !== `Bearer ${key}`) return this.json(res, 401, { error: 'unauthorized' });
    let body: Json = {};
    const raw = Buffer.concat(chunks).toString('utf8');
    if (raw !== '') {
      try {
        body = JSON.parse(raw) as Json;
      } catch {
        return this.json(res, 400, { error: 'invalid_json' });
      }
    }
    const method = req.method ?? 'GET';
    if (method === 'POST' && pathname === '/v1/runs') return this.startRun(req, res, body, profile);
    const matched = /^\/v1\/runs\/([^/]+)\/(events|approval|stop|steer)$/.exec(pathname);
    const found = matched ? this.runs.get(decodeURIComponent(matched[1] ?? '')) : undefined;
    // A run belongs to the profile that started it: another profile's path does not find it.
    const run = found?.profile === profile ? found : undefined;
    this.report({ method, path: url.pathname, body, run });
    if (!matched || !run) return this.json(res, 404, { error: 'run_not_found' });
    switch (matched[2]) {
      case 'events':
        return this.events(res, run);
      case 'approval':
        run.approvals.push(body);
        return this.json(res, 200, { ok: true, run_id: run.id });
      case 'stop':
        run.stops += 1;
        this.json(res, 200, { run_id: run.id, status: 'stopping' });
        if (!run.done) this.emit(run, 'run.cancelled');
        return;
      case 'steer': {
        const text = typeof body.input === 'string' ? body.input : '';
        if (text.trim() === '') return this.json(res, 400, { error: { code: 'invalid_steer_input' } });
        if (run.done || !this.steerAccepts) return this.json(res, 409, { error: { code: 'run_not_accepting_steer' } });
        run.steers.push(text);
        const hold = this.heldSteers.shift();
        if (hold) await new Promise<void>((release) => hold(release));
        return this.json(res, 200, { object: 'hermes.run.steer', run_id: run.id, accepted: true });
      }
      default:
        return this.json(res, 405, { error: 'method_not_allowed' });
    }
  }

  private async startRun(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    body: Json,
    profile: string | null,
  ): Promise<void> {
    const key = typeof req.headers['idempotency-key'] === 'string' ? req.headers['idempotency-key'] : null;
    const replayed = key === null ? undefined : [...this.runs.values()].find((run) => run.idempotencyKey === key);
    if (replayed) {
      this.report({ method: 'POST', path: '/v1/runs', body, run: replayed });
      return this.json(res, 202, { run_id: replayed.id, status: replayed.done ? 'completed' : 'running' });
    }
    if (typeof body.input !== 'string' || body.input === '') return this.json(res, 400, { error: 'input_required' });
    this.counter += 1;
    const run: StandInRun = {
      id: `run_${this.counter}`,
      profile,
      body,
      input: body.input,
      sessionHeader: typeof req.headers['x-hermes-session-id'] === 'string' ? req.headers['x-hermes-session-id'] : null,
      idempotencyKey: key,
      journal: [],
      done: false,
      approvals: [],
      steers: [],
      stops: 0,
    };
    let answer: StartAnswer = { accept: true };
    if (this.holdStarts > 0) {
      this.holdStarts -= 1;
      const released = new Promise<StartAnswer>((resolve) => {
        const held: HeldStart = { run, release: resolve };
        this.heldWaiters.shift()?.(held);
      });
      this.report({ method: 'POST', path: '/v1/runs', body, run });
      answer = await released;
    } else {
      this.report({ method: 'POST', path: '/v1/runs', body, run });
    }
    if ('status' in answer) return this.json(res, answer.status, { error: answer.error });
    this.runs.set(run.id, run);
    if (this.dropStartAnswers > 0) {
      this.dropStartAnswers -= 1;
      res.destroy();
      return;
    }
    this.json(res, 202, { run_id: run.id, status: 'queued' });
  }

  private events(res: http.ServerResponse, run: StandInRun): void {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    let sent = 0;
    const write = (event: Json) => {
      sent += 1;
      res.write(`id: ${sent}\ndata: ${JSON.stringify(event)}\n\n`);
      if (TERMINAL.has(String(event.event))) res.end(': stream closed\n\n');
    };
    res.write(': keepalive\n\n');
    for (const event of run.journal) write(event);
    if (run.done) return;
    const listeners = this.listeners.get(run.id) ?? new Set();
    listeners.add(write);
    this.listeners.set(run.id, listeners);
    res.on('close', () => listeners.delete(write));
  }
}
