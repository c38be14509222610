import { hermesApiClient, type HermesApi } from '@conduit/contracts/hermes/api-client';
import type { AgentBackend, AgentEvent, AgentTurn, CommandTurn } from './agent-backend.js';
import { AgentError, CommandError } from './agent-backend.js';
import { chatCompletionsTurn, offersClientTools, type ChatCompletionsRoute } from './chat-completions.js';
import { HermesDashboardCommands, type HermesDashboardCommandsOptions } from './hermes-dashboard-commands.js';

/**
 * The Hermes API server (SURFACES.md §1), through the suite's one client of it
 * (contracts/src/hermes/api-client.ts): `POST /v1/runs` starts a run in the call's own Hermes session,
 * `GET /v1/runs/{id}/events` streams it (`message.delta` → captions and speech, `run.completed` ends it),
 * and `POST /v1/runs/{id}/stop` interrupts it on cancel or barge-in. Hermes runs its own tools there.
 *
 * A turn that offers the session's client function tools goes instead to the API server's
 * `POST /v1/chat/completions`, Hermes' surface for client-executed tools (`/v1/runs` cannot call back into a
 * client): the same chat-completions turn as the OpenAI-compatible agent (chat-completions.ts) — Hermes answers
 * `tool_calls` for a client tool, the client runs it, the assistant's call and the `role: "tool"` results go
 * back and Hermes continues — with `X-Hermes-Session-Id` set to the call's session, the one its runs write to,
 * so Hermes keeps one history for the call whichever route a turn took. Hermes holds the earlier turns, so a
 * request carries only this turn's messages.
 *
 * The stream is read as the SSE standard says: an event counts once the blank line after it has
 * arrived, so a stream cut in the middle of its `run.completed` fails the turn ("ended before the run
 * completed") rather than speaking a reply that may be cut short.
 *
 * Native slash commands (`/reasoning low`) run through the Hermes dashboard (hermes-dashboard-commands.ts),
 * where Hermes executes them, never as the input of a run. Without a dashboard configured they are refused.
 */
export class HermesRunsAgent implements AgentBackend {
  readonly label = 'hermes';
  private readonly api: HermesApi;
  private readonly commands: HermesDashboardCommands | null;
  private readonly chatRoute: ChatCompletionsRoute;

  constructor(options: {
    baseUrl: string;
    apiKey: string;
    fetch?: typeof fetch;
    /** The dashboard that runs slash commands; absent = commands are refused. */
    commands?: HermesDashboardCommandsOptions | null;
  }) {
    this.commands = options.commands ? new HermesDashboardCommands(options.commands) : null;
    this.chatRoute = {
      url: `${options.baseUrl.replace(/\/+$/, '')}/v1/chat/completions`,
      // Hermes ignores a bare model name (it names "the Hermes model") unless direct model requests are on.
      model: 'hermes-agent',
      headers: options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {},
      ...(options.fetch ? { fetch: options.fetch } : {}),
      refused: clientToolsRefused,
    };
    this.api = hermesApiClient({
      url: options.baseUrl,
      // An empty key sends no Authorization header.
      key: options.apiKey || null,
      ...(options.fetch ? { fetch: options.fetch } : {}),
    });
  }

  respond(turn: AgentTurn): AsyncGenerator<AgentEvent, string, void> {
    if (!offersClientTools(turn)) return this.runTurn(turn);
    const headers = { ...this.chatRoute.headers, 'x-hermes-session-id': turn.sessionKey };
    return chatCompletionsTurn({ ...this.chatRoute, headers }, turn, []);
  }

  /** A turn without client tools: a run of `/v1/runs` in the call's session. */
  private async *runTurn(turn: AgentTurn): AsyncGenerator<AgentEvent, string, void> {
    const { signal } = turn;
    const started = await this.api.startRun(
      {
        input: turn.text,
        session_id: turn.sessionKey,
        ...(turn.instructions ? { instructions: turn.instructions } : {}),
      },
      { sessionId: turn.sessionKey, signal },
    );
    switch (started.outcome) {
      case 'started':
        break;
      case 'key_conflict':
        // No Idempotency-Key is sent, so Hermes has no reason to answer this; it is still a refusal.
        throw new AgentError('Hermes refused the run (409)', 409);
      case 'refused':
        throw new AgentError(`Hermes refused the run (${started.status})`, started.status);
      case 'malformed':
        throw new AgentError('Hermes answered the run without a run_id');
      case 'unreachable':
        throw new AgentError(signal.aborted ? 'cancelled' : 'Hermes API server unreachable');
    }
    const { runId } = started;
    const stop = () => void this.api.stopRun(runId);
    if (signal.aborted) {
      // Cancelled while Hermes was taking the run: it is running, so stop it.
      stop();
      throw new AgentError('cancelled');
    }
    signal.addEventListener('abort', stop, { once: true });
    try {
      const stream = await this.api.runEvents(runId, { signal });
      if (stream.outcome === 'refused') throw new AgentError(`Hermes events answered ${stream.status}`, stream.status);
      if (stream.outcome === 'unreachable')
        throw new AgentError(signal.aborted ? 'cancelled' : 'Hermes event stream failed');
      let text = '';
      for await (const event of stream.events) {
        if (event.event === 'message.delta' && event.delta) {
          text += event.delta;
          yield { type: 'delta', text: event.delta };
        } else if (event.event === 'run.completed') {
          const output = event.output ?? text;
          if (output !== text) yield { type: 'snapshot', text: output };
          return output;
        } else if (event.event === 'run.failed') {
          throw new AgentError('Hermes run failed');
        } else if (event.event === 'run.cancelled') {
          throw new AgentError('cancelled');
        }
      }
      if (signal.aborted) throw new AgentError('cancelled');
      throw new AgentError('Hermes event stream ended before the run completed');
    } catch (error) {
      if (error instanceof AgentError) throw error;
      throw new AgentError(signal.aborted ? 'cancelled' : 'Hermes event stream failed');
    } finally {
      signal.removeEventListener('abort', stop);
    }
  }

  runCommand(turn: CommandTurn): Promise<string> {
    if (!this.commands)
      return Promise.reject(
        new CommandError(
          'command_unavailable',
          `/${turn.command.name} is a Hermes command, and Hermes runs commands through its dashboard, which this gateway has not been given (HERMES_REALTIME_AGENT_DASHBOARD_URL). It was not sent.`,
        ),
      );
    return this.commands.run(turn.sessionKey, turn.command, turn.signal);
  }

  endSession(sessionKey: string): void {
    this.commands?.endSession(sessionKey);
  }
}

/** Refusal statuses that are not about the tools: the key, the route, the server's load. */
const NOT_ABOUT_TOOLS = new Set([401, 403, 404, 429]);
/** Bound on Hermes' own reason quoted to the caller. */
const MAX_REASON_CHARS = 300;

/**
 * Hermes refused a turn with client tools. A 4xx on the tools means the bridge is off
 * (`gateway.platforms.api_server.client_tools: false`) or the tools exceed Hermes' bounds; the caller is told
 * which setting and bounds, with Hermes' own reason, rather than left with a silent failure.
 */
function clientToolsRefused(status: number, body: string): AgentError {
  if (status < 400 || status >= 500 || NOT_ABOUT_TOOLS.has(status))
    return new AgentError(`Hermes chat completions answered ${status}`, status);
  let reason = '';
  try {
    const parsed = JSON.parse(body) as { error?: { message?: unknown } | string };
    const message = typeof parsed.error === 'string' ? parsed.error : parsed.error?.message;
    if (typeof message === 'string') reason = message.slice(0, MAX_REASON_CHARS);
  } catch {
    // Not JSON: the status says enough.
  }
  return new AgentError(`Hermes refused the client tools (${status})`, status, {
    code: 'agent_tools_unavailable',
    message:
      `Hermes refused this session's client tools (${status}${reason ? `: ${reason}` : ''}). Hermes runs them ` +
      'through its API server (/v1/chat/completions): gateway.platforms.api_server.client_tools must not be false ' +
      "in the Hermes profile's config.yaml, and the tools must fit Hermes' limits (32 tools, 24,000 characters " +
      'of schema).',
  });
}
