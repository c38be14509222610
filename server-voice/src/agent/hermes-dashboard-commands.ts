import WebSocket from 'ws';
import { CommandError } from './agent-backend.js';
import type { SlashCommand } from './slash-command.js';

/**
 * Runs native Hermes slash commands where Hermes executes them: the dashboard's WebSocket `/api/ws`, the
 * JSON-RPC 2.0 protocol of Hermes' TUI (SURFACES.md §2). The API server's `/v1/runs` hands its `input` to the
 * model as it is — `/model x` there is chat text the model answers as it likes — so commands never go there.
 *
 * Per call: `session.resume` binds the call's Hermes session (the one its `/v1/runs` turns write to, keyed by
 * the call id) to a dashboard session — `session.create` when Hermes has no such session yet (no turn so
 * far) — then `slash.exec {session_id, command}` answers `{output}`. Hermes versions that send commands which
 * queue input for the agent (`/retry`, `/queue`, `/steer`…) to `command.dispatch` are answered there.
 * `session.close` releases the dashboard session when the call ends.
 *
 * One socket per gateway, opened on the first command; the dashboard's session token travels as the `token`
 * query parameter (what its loopback mode accepts for sockets) and is never logged or put in an error.
 */
export interface HermesDashboardCommandsOptions {
  /** The dashboard's root, e.g. `http://127.0.0.1:9119`. */
  dashboardUrl: string;
  token: string;
}

interface PendingRequest {
  resolve: (result: unknown) => void;
  reject: (error: RpcError | CommandError) => void;
}

/** A JSON-RPC error the dashboard answered. */
class RpcError extends Error {
  constructor(
    readonly code: number | null,
    message: string,
  ) {
    super(message);
  }
}

/** Hermes' answers are written for a terminal: colour and cursor sequences are not words. */
const ANSI_ESCAPE = new RegExp(`${String.fromCharCode(27)}\\[[0-9;?]*[ -/]*[@-~]`, 'g');
/** How much of a refusal reaches the caller (the error event's message is bounded at 500 characters anyway). */
const MAX_REASON_CHARS = 300;

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export class HermesDashboardCommands {
  private socket: Promise<WebSocket> | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, PendingRequest>();
  /** Call session key → the dashboard session bound to it (a promise, so two commands bind it once). */
  private readonly sessions = new Map<string, Promise<string>>();

  constructor(private readonly options: HermesDashboardCommandsOptions) {}

  /** Runs `command` in the call's Hermes session; resolves with Hermes' answer as plain text. */
  async run(sessionKey: string, command: SlashCommand, signal: AbortSignal): Promise<string> {
    const sessionId = await this.sessionFor(sessionKey, signal).catch((error: unknown) => {
      throw refusal(command, error);
    });
    let result: unknown;
    try {
      result = await this.request('slash.exec', { session_id: sessionId, command: command.text }, signal);
    } catch (error) {
      if (!(error instanceof RpcError && error.message.includes('command.dispatch'))) throw refusal(command, error);
      try {
        result = await this.request(
          'command.dispatch',
          { session_id: sessionId, name: command.name, arg: command.args },
          signal,
        );
      } catch (dispatchError) {
        throw refusal(command, dispatchError);
      }
    }
    const text = isRecord(result)
      ? typeof result.output === 'string'
        ? result.output
        : typeof result.message === 'string'
          ? result.message
          : ''
      : '';
    return text.replace(ANSI_ESCAPE, '').trim() || 'Done.';
  }

  /** The call ended: its dashboard session is closed (best effort). */
  endSession(sessionKey: string): void {
    const bound = this.sessions.get(sessionKey);
    if (!bound) return;
    this.sessions.delete(sessionKey);
    bound.then(
      (sessionId) => this.request('session.close', { session_id: sessionId }).catch(() => undefined),
      () => undefined,
    );
  }

  close(): void {
    const socket = this.socket;
    this.socket = null;
    void socket?.then((ws) => ws.close()).catch(() => undefined);
  }

  private sessionFor(sessionKey: string, signal: AbortSignal): Promise<string> {
    const known = this.sessions.get(sessionKey);
    if (known) return known;
    const bound = (async () => {
      let result: unknown;
      try {
        result = await this.request('session.resume', { session_id: sessionKey }, signal);
      } catch (error) {
        // No turn has reached Hermes yet, so it has no session by this id: the command gets a fresh one.
        if (!(error instanceof RpcError)) throw error;
        result = await this.request('session.create', {}, signal);
      }
      if (!isRecord(result) || typeof result.session_id !== 'string' || !result.session_id)
        throw new CommandError('command_failed', 'The Hermes dashboard answered without a session id.');
      return result.session_id;
    })();
    this.sessions.set(sessionKey, bound);
    // A failed binding is not remembered: the next command tries again.
    bound.catch(() => {
      if (this.sessions.get(sessionKey) === bound) this.sessions.delete(sessionKey);
    });
    return bound;
  }

  private connect(): Promise<WebSocket> {
    this.socket ??= new Promise<WebSocket>((resolve, reject) => {
      const url = new URL('/api/ws', this.options.dashboardUrl.replace(/^http/i, 'ws'));
      url.searchParams.set('token', this.options.token);
      const ws = new WebSocket(url, { followRedirects: false, handshakeTimeout: 10_000 });
      ws.on('open', () => resolve(ws));
      ws.on('message', (data) => this.onMessage(data.toString()));
      ws.on('error', () => undefined);
      ws.on('close', () => {
        // Every dashboard session was bound to this socket: the next command binds its call again.
        this.socket = null;
        this.sessions.clear();
        reject(new CommandError('command_failed', 'The Hermes dashboard could not be reached.'));
        const failure = new CommandError('command_failed', 'The Hermes dashboard closed the connection.');
        for (const request of this.pending.values()) request.reject(failure);
        this.pending.clear();
      });
    });
    return this.socket;
  }

  private onMessage(text: string): void {
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      return;
    }
    // Notifications (`method: "event"`) carry no id and are not answers.
    if (!isRecord(message) || typeof message.id !== 'number') return;
    const request = this.pending.get(message.id);
    if (!request) return;
    this.pending.delete(message.id);
    if (isRecord(message.error)) {
      const { code, message: reason } = message.error;
      request.reject(new RpcError(typeof code === 'number' ? code : null, typeof reason === 'string' ? reason : ''));
    } else {
      request.resolve(message.result);
    }
  }

  private async request(method: string, params: Record<string, unknown>, signal?: AbortSignal): Promise<unknown> {
    if (signal?.aborted) throw new CommandError('command_failed', 'cancelled');
    const ws = await this.connect();
    const id = this.nextId;
    this.nextId += 1;
    return new Promise<unknown>((resolve, reject) => {
      const onAbort = () => {
        this.pending.delete(id);
        reject(new CommandError('command_failed', 'cancelled'));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      const settle = {
        resolve: (result: unknown) => (signal?.removeEventListener('abort', onAbort), resolve(result)),
        reject: (error: RpcError | CommandError) => (signal?.removeEventListener('abort', onAbort), reject(error)),
      };
      this.pending.set(id, settle);
      ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }), (error) => {
        if (!error) return;
        this.pending.delete(id);
        settle.reject(new CommandError('command_failed', 'The Hermes dashboard could not be reached.'));
      });
    });
  }
}

/** What the caller hears when Hermes did not run the command: Hermes' own reason, bounded. */
function refusal(command: SlashCommand, error: unknown): CommandError {
  if (error instanceof CommandError) return error;
  const reason = error instanceof Error ? error.message.replace(ANSI_ESCAPE, '').trim() : '';
  return new CommandError(
    'command_failed',
    `Hermes did not run /${command.name}${reason ? `: ${reason.slice(0, MAX_REASON_CHARS)}` : '.'}`,
  );
}
