/**
 * A fake Hermes API server (spec/hermes/SURFACES.md §1): `POST /v1/runs` with Idempotency-Key
 * replay (same key and body → the same run, `Idempotency-Replayed: true`; another body → 409
 * idempotency_key_conflict), `GET /v1/runs/{id}/events` as SSE `data: {json}` frames replaying the
 * run's journal, `POST /v1/runs/{id}/approval` and `/stop`. Each run follows a script.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

type Json = Record<string, unknown>;

export interface FakeRun {
  id: string;
  key: string | null;
  body: Json;
  input: string;
  /** Data URLs of the images in a message-list input. */
  images: string[];
  sessionId: string | null;
  journal: Json[];
  done: boolean;
  approvals: Json[];
  stopped: boolean;
  /** Steer bodies taken (`POST /v1/runs/{id}/steer`). */
  steers: Json[];
}

export interface RunControl {
  emit(event: string, fields?: Json): void;
  /** Resolves with the next approval body posted for this run. */
  nextApproval(): Promise<Json>;
  /** Resolves when `POST /v1/runs/{id}/stop` arrives for this run. */
  stopRequested(): Promise<void>;
  /** Resolves with the next steer text taken for this run. */
  nextSteer(): Promise<string>;
}

export type RunScript = (run: FakeRun, ctl: RunControl) => Promise<void>;

type ContentPart = { type?: unknown; text?: unknown; image_url?: { url?: unknown } };

function contentParts(input: unknown): ContentPart[] | null {
  if (!Array.isArray(input)) return null;
  const parts: ContentPart[] = [];
  for (const m of input as { role?: unknown; content?: unknown }[]) {
    if (typeof m !== 'object' || m === null || typeof m.role !== 'string') return null;
    if (typeof m.content === 'string') parts.push({ type: 'text', text: m.content });
    else if (Array.isArray(m.content)) parts.push(...(m.content as ContentPart[]));
    else return null;
  }
  return parts;
}

/** `input` is a string or a message list (OpenAI-style content parts); the words of either. */
function runInputText(input: unknown): string | null {
  if (typeof input === 'string') return input;
  const parts = contentParts(input);
  if (parts === null) return null;
  return parts
    .filter((p) => p.type === 'text' && typeof p.text === 'string')
    .map((p) => String(p.text))
    .join('\n');
}

function runInputImages(input: unknown): string[] {
  return (contentParts(input) ?? [])
    .filter((p) => p.type === 'image_url' && typeof p.image_url?.url === 'string')
    .map((p) => String(p.image_url?.url));
}

export const echoScript: RunScript = async (run, ctl) => {
  ctl.emit('message.delta', { delta: 'thinking' });
  ctl.emit('run.completed', { output: `echo: ${run.input}` });
};

export class FakeHermes {
  readonly server: http.Server;
  readonly runs = new Map<string, FakeRun>();
  readonly byKey = new Map<string, string>();
  readonly posts: { key: string | null; replayed: boolean }[] = [];
  url = '';
  script: RunScript;
  /** What `GET /health` reports as Hermes' version (null: left out, as older Hermes does). */
  version: string | null = '0.21.3';
  private readonly listeners = new Map<string, Set<(e: Json) => void>>();
  private readonly approvalWaiters = new Map<string, ((b: Json) => void)[]>();
  private readonly stopWaiters = new Map<string, (() => void)[]>();
  private readonly steerWaiters = new Map<string, ((text: string) => void)[]>();

  constructor(
    private readonly apiKey: string,
    script: RunScript = echoScript,
  ) {
    this.script = script;
    this.server = http.createServer((req, res) => void this.handle(req, res));
  }

  /** Awaited before `POST /v1/runs` is answered (after the run is created), when a test sets it. */
  beforeRunAnswer: (() => Promise<void>) | null = null;

  async listen(): Promise<string> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this.url;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  private json(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
    res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    // Hermes answers /health without authentication.
    if (req.method === 'GET' && req.url === '/health')
      return this.json(res, 200, {
        status: 'ok',
        platform: 'hermes-agent',
        ...(this.version ? { version: this.version } : {}),
      });
    if (req.headers.authorization !== `Bearer ${this.apiKey}`) return this.json(res, 401, { error: 'unauthorized' });
    const url = new URL(req.url ?? '/', 'http://x');
    const raw = Buffer.concat(chunks).toString('utf8');
    if (req.method === 'POST' && url.pathname === '/v1/runs') {
      let body: Json;
      try {
        body = JSON.parse(raw) as Json;
      } catch {
        return this.json(res, 400, { error: 'invalid_json' });
      }
      const input = runInputText(body['input']);
      if (input === null) return this.json(res, 400, { error: 'input_required' });
      const key = typeof req.headers['idempotency-key'] === 'string' ? req.headers['idempotency-key'] : null;
      if (key !== null) {
        const existing = this.byKey.get(key);
        if (existing !== undefined) {
          const run = this.runs.get(existing);
          if (run !== undefined && JSON.stringify(run.body) !== JSON.stringify(body)) {
            return this.json(res, 409, { error: 'idempotency_key_conflict' });
          }
          this.posts.push({ key, replayed: true });
          return this.json(
            res,
            202,
            { run_id: existing, status: run?.done ? 'completed' : 'running' },
            { 'Idempotency-Replayed': 'true' },
          );
        }
      }
      const run: FakeRun = {
        id: `run_${randomUUID()}`,
        key,
        body,
        input,
        images: runInputImages(body['input']),
        sessionId: typeof req.headers['x-hermes-session-id'] === 'string' ? req.headers['x-hermes-session-id'] : null,
        journal: [],
        done: false,
        approvals: [],
        stopped: false,
        steers: [],
      };
      this.runs.set(run.id, run);
      if (key !== null) this.byKey.set(key, run.id);
      this.posts.push({ key, replayed: false });
      const ctl: RunControl = {
        emit: (event, fields = {}) => {
          const e = { event, run_id: run.id, timestamp: Date.now() / 1000, ...fields };
          run.journal.push(e);
          if (event === 'run.completed' || event === 'run.failed' || event === 'run.cancelled') run.done = true;
          for (const l of this.listeners.get(run.id) ?? []) l(e);
        },
        nextApproval: () =>
          new Promise((resolve) => {
            const list = this.approvalWaiters.get(run.id) ?? [];
            list.push(resolve);
            this.approvalWaiters.set(run.id, list);
          }),
        nextSteer: () =>
          new Promise((resolve) => {
            this.steerWaiters.set(run.id, [...(this.steerWaiters.get(run.id) ?? []), resolve]);
          }),
        stopRequested: () =>
          new Promise((resolve) => {
            if (run.stopped) return resolve();
            this.stopWaiters.set(run.id, [...(this.stopWaiters.get(run.id) ?? []), resolve]);
          }),
      };
      // A test can hold the answer: the run exists, but the caller does not know its id yet.
      if (this.beforeRunAnswer) await this.beforeRunAnswer();
      this.json(res, 202, { run_id: run.id, status: 'queued' });
      void this.script(run, ctl).catch((err: unknown) => ctl.emit('run.failed', { error: (err as Error).message }));
      return;
    }
    const m = /^\/v1\/runs\/([^/]+)\/(events|approval|stop|steer)$/.exec(url.pathname);
    const run = m ? this.runs.get(decodeURIComponent(m[1] ?? '')) : undefined;
    if (m === null || run === undefined) return this.json(res, 404, { error: 'run_not_found' });
    if (m[2] === 'events' && req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      let n = 0;
      const write = (e: Json) => {
        n += 1;
        res.write(`id: ${n}\ndata: ${JSON.stringify(e)}\n\n`);
        if (e['event'] === 'run.completed' || e['event'] === 'run.failed' || e['event'] === 'run.cancelled') {
          res.end(': stream closed\n\n');
        }
      };
      res.write(': keepalive\n\n');
      for (const e of run.journal) write(e);
      if (run.done) return;
      const set = this.listeners.get(run.id) ?? new Set();
      set.add(write);
      this.listeners.set(run.id, set);
      res.on('close', () => set.delete(write));
      return;
    }
    if (m[2] === 'approval' && req.method === 'POST') {
      const body = JSON.parse(raw || '{}') as Json;
      run.approvals.push(body);
      const waiters = this.approvalWaiters.get(run.id) ?? [];
      waiters.shift()?.(body);
      return this.json(res, 200, { ok: true });
    }
    if (m[2] === 'steer' && req.method === 'POST') {
      // Hermes takes `input`, `message` or `text`; a run that is not running answers 409.
      const body = JSON.parse(raw || '{}') as Json;
      const text = [body['input'], body['message'], body['text']].find((v) => typeof v === 'string' && v.trim());
      if (typeof text !== 'string') return this.json(res, 400, { error: { code: 'invalid_steer_input' } });
      if (run.done || run.stopped) return this.json(res, 409, { error: { code: 'run_not_accepting_steer' } });
      run.steers.push(body);
      this.steerWaiters.get(run.id)?.shift()?.(text);
      return this.json(res, 200, { object: 'hermes.run.steer', run_id: run.id, accepted: true });
    }
    if (m[2] === 'stop' && req.method === 'POST') {
      run.stopped = true;
      for (const resolve of this.stopWaiters.get(run.id) ?? []) resolve();
      this.stopWaiters.delete(run.id);
      return this.json(res, 200, { run_id: run.id, status: 'stopping' });
    }
    return this.json(res, 405, { error: 'method_not_allowed' });
  }

  /** Runs created (not replays). */
  get createdRuns(): FakeRun[] {
    return [...this.runs.values()];
  }
}
