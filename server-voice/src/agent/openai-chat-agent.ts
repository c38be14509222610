import type { AgentBackend, AgentEvent, AgentTurn } from './agent-backend.js';
import { chatCompletionsTurn, type ChatCompletionsRoute, type ChatMessage } from './chat-completions.js';

/** Bound on remembered messages per call (the oldest turns fall out first). */
const MAX_HISTORY_MESSAGES = 64;

/**
 * Any OpenAI-compatible `/chat/completions` endpoint with `stream: true`: for users without Hermes. Keeps
 * each call's history in memory, passes the session's client tools as functions and runs their calls
 * through the client (chat-completions.ts).
 */
export class OpenAiChatAgent implements AgentBackend {
  readonly label: string;
  private readonly histories = new Map<string, ChatMessage[]>();
  private readonly route: ChatCompletionsRoute;

  constructor(options: { baseUrl: string; apiKey: string; model: string; fetch?: typeof fetch }) {
    this.label = `openai:${options.model}`;
    this.route = {
      url: `${options.baseUrl}/chat/completions`,
      model: options.model,
      headers: options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {},
      ...(options.fetch ? { fetch: options.fetch } : {}),
    };
  }

  async *respond(turn: AgentTurn): AsyncGenerator<AgentEvent, string, void> {
    const history = this.histories.get(turn.sessionKey) ?? [];
    this.histories.set(turn.sessionKey, history);
    const reply = yield* chatCompletionsTurn(this.route, turn, history);
    this.trim(history);
    return reply;
  }

  private trim(history: ChatMessage[]): void {
    // Drop whole leading messages until within bound, never leaving a tool answer without its call.
    while (history.length > MAX_HISTORY_MESSAGES || history[0]?.role === 'tool') history.shift();
  }

  endSession(sessionKey: string): void {
    this.histories.delete(sessionKey);
  }
}
