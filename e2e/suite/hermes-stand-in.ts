/**
 * A stand-in for Hermes where the demo needs Hermes itself (spec/hermes/SURFACES.md). It does what
 * Hermes does on the surfaces the host service uses, and nothing more:
 * - its shell hooks (§3c): each event's JSON on the stdin of the hook command that `conduit
 *   setup-hermes --node-hook` installs (`node bin/conduit-hook.mjs --state DIR <event>`), and what that
 *   command prints is what Hermes would read back (a clarify answer arrives as a block message);
 * - its API server's approval route (§1): `POST /v1/runs/{run_id}/approval {choice, request_id?}` with
 *   the API key as bearer token, 404 `run_not_found` for a run that waits on nothing; every call is
 *   recorded and reported, so the demo waits on it;
 * - its `state.db` sessions table (§4), read-only to the host service, which titles notifications.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { HookPayload } from '@conduit/server-dashboard/bridge/hook-payload';
import { REPO_ROOT } from './launch.js';

/** The Node hook bridge, as `setup-hermes --node-hook` writes it into a profile's config.yaml. */
const HOOK_BRIDGE = path.join(REPO_ROOT, 'server-dashboard/bin/conduit-hook.mjs');

/** The choices Hermes' approval route takes, and its aliases for "once" (SURFACES.md §1). */
const APPROVAL_CHOICES = new Set(['once', 'session', 'always', 'deny']);
const ONCE_ALIASES = new Set(['approve', 'approved', 'allow']);

/** An approval body bigger than this is not one the host sends. */
const MAX_BODY_BYTES = 16 * 1024;

export interface ApprovalCall {
  runId: string;
  body: Record<string, unknown>;
}

/** What a hook command gave back to Hermes: its exit code, and the JSON it printed (null: nothing). */
export interface HookOutcome {
  code: number | null;
  answer: unknown;
}

export class HermesStandIn {
  /** Every approval the API server took, in order. */
  readonly approvals: ApprovalCall[] = [];
  private readonly waiting = new Map<string, (call: ApprovalCall) => void>();
  private readonly apiKey = randomBytes(32).toString('base64url');

  private constructor(
    /** The Hermes home (the default profile's home). */
    readonly home: string,
    /** The host service's state folder, where the hook bridge finds the running service. */
    readonly hostStateDir: string,
    private readonly server: http.Server,
    readonly apiUrl: string,
  ) {}

  static async start(home: string, hostStateDir: string): Promise<HermesStandIn> {
    mkdirSync(home, { recursive: true, mode: 0o700 });
    const db = new Database(path.join(home, 'state.db'));
    db.exec('CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, source TEXT, title TEXT, started_at REAL)');
    db.close();
    const server = http.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const standIn = new HermesStandIn(home, hostStateDir, server, `http://127.0.0.1:${port}`);
    server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => standIn.serve(req, res));
    return standIn;
  }

  /** How the host service reaches this API server (HERMES_API_URL, HERMES_API_KEY). */
  hostEnv(): Record<string, string> {
    return { HERMES_API_URL: this.apiUrl, HERMES_API_KEY: this.apiKey };
  }

  /** Values that must never appear in anything shown to the user. */
  secrets(): string[] {
    return [this.apiKey];
  }

  /** A session row as Hermes writes it when a chat starts; its title names the chat in notifications. */
  addSession(id: string, title: string, source: string): void {
    const db = new Database(path.join(this.home, 'state.db'));
    try {
      db.prepare('INSERT OR REPLACE INTO sessions (id, source, title, started_at) VALUES (?, ?, ?, ?)').run(
        id,
        source,
        title,
        Date.now() / 1000,
      );
    } finally {
      db.close();
    }
  }

  /**
   * The run now waits for an approval (its status is `waiting_for_approval`); resolves with the call
   * that answers it. Until then the API server answers that run 404 `run_not_found`, as for any run
   * it does not know.
   */
  awaitApproval(runId: string): Promise<ApprovalCall> {
    return new Promise((resolve) => this.waiting.set(runId, resolve));
  }

  /** Runs the hook command for one event exactly as Hermes does: the payload on stdin, stdout read back. */
  hook(payload: HookPayload): Promise<HookOutcome> {
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [HOOK_BRIDGE, '--state', this.hostStateDir, payload.hook_event_name], {
        cwd: this.home,
        stdio: ['pipe', 'pipe', 'ignore'],
      });
      let stdout = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.once('error', reject);
      child.once('close', (code) => {
        const text = stdout.trim();
        let answer: unknown = null;
        try {
          answer = text ? (JSON.parse(text) as unknown) : null;
        } catch {
          answer = text; // Hermes ignores output that is not a JSON object
        }
        resolve({ code, answer });
      });
      child.stdin.end(JSON.stringify(payload));
    });
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private serve(req: http.IncomingMessage, res: http.ServerResponse): void {
    const answer = (status: number, body: unknown) =>
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    req.on('end', () => {
      if (req.headers.authorization !== `Bearer ${this.apiKey}`) return answer(401, { error: 'unauthorized' });
      const route = /^\/v1\/runs\/([^/?]+)\/approval$/.exec(req.url ?? '');
      if (!route?.[1] || req.method !== 'POST') return answer(404, { error: 'not_found' });
      const runId = decodeURIComponent(route[1]);
      const body = approvalBody(size <= MAX_BODY_BYTES ? Buffer.concat(chunks).toString() : '');
      if (!body) return answer(400, { error: 'invalid_choice' });
      const waiter = this.waiting.get(runId);
      if (!waiter) return answer(404, { error: 'run_not_found' });
      this.waiting.delete(runId);
      const call = { runId, body };
      this.approvals.push(call);
      waiter(call);
      return answer(200, { run_id: runId, status: 'running' });
    });
  }
}

/** The approval body when its choice is one Hermes takes (aliases allowed), else null. */
function approvalBody(text: string): Record<string, unknown> | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const body = value as Record<string, unknown>;
  const choice = typeof body.choice === 'string' ? body.choice.trim().toLowerCase() : '';
  return APPROVAL_CHOICES.has(choice) || ONCE_ALIASES.has(choice) ? body : null;
}
