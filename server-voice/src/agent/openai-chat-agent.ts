import { readSse } from '@conduit/contracts/hermes/sse-reader';
import { z } from 'zod';
import type { AgentBackend, AgentEvent, AgentTurn } from './agent-backend.js';
import { AgentError } from './agent-backend.js';

type ChatMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: ToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };

interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** The parts of a `chat.completion.chunk` we read; everything else is ignored. */
const chunkSchema = z.object({
  choices: z
    .array(
      z.object({
        delta: z
          .object({
            content: z.string().nullish(),
            tool_calls: z
              .array(
                z.object({
                  index: z.number().int().min(0).max(15),
                  id: z.string().nullish(),
                  function: z.object({ name: z.string().nullish(), arguments: z.string().nullish() }).nullish(),
                }),
              )
              .nullish(),
          })
          .nullish(),
      }),
    )
    .default([]),
});

/** Bound on tool round trips in one turn, so a confused model cannot loop forever. */
const MAX_TOOL_ROUNDS = 8;
/** Bound on remembered messages per call (the oldest turns fall out first). */
const MAX_HISTORY_MESSAGES = 64;

/**
 * Any OpenAI-compatible `/chat/completions` endpoint with `stream: true`: for users without Hermes. Keeps
 * each call's history in memory, passes the session's client tools as functions and runs their calls
 * through the client.
 */
export class OpenAiChatAgent implements AgentBackend {
  readonly label: string;
  private readonly histories = new Map<string, ChatMessage[]>();

  constructor(private readonly options: { baseUrl: string; apiKey: string; model: string; fetch?: typeof fetch }) {
    this.label = `openai:${options.model}`;
  }

  async *respond(turn: AgentTurn): AsyncGenerator<AgentEvent, string, void> {
    const history = this.histories.get(turn.sessionKey) ?? [];
    this.histories.set(turn.sessionKey, history);
    history.push({ role: 'user', content: turn.text });
    let reply = '';
    for (let round = 0; round <= MAX_TOOL_ROUNDS; round += 1) {
      const calls = new Map<number, ToolCall>();
      let roundText = '';
      for await (const chunk of this.stream(turn, history)) {
        for (const choice of chunk.choices) {
          const content = choice.delta?.content;
          if (content) {
            roundText += content;
            reply += content;
            yield { type: 'delta', text: content };
          }
          for (const call of choice.delta?.tool_calls ?? []) {
            const entry = calls.get(call.index) ?? {
              id: '',
              type: 'function' as const,
              function: { name: '', arguments: '' },
            };
            if (call.id) entry.id = call.id;
            if (call.function?.name) entry.function.name += call.function.name;
            if (call.function?.arguments) entry.function.arguments += call.function.arguments;
            calls.set(call.index, entry);
          }
        }
      }
      if (calls.size === 0) {
        history.push({ role: 'assistant', content: roundText });
        this.trim(history);
        return reply;
      }
      const toolCalls = [...calls.values()];
      history.push({ role: 'assistant', content: roundText || null, tool_calls: toolCalls });
      for (const call of toolCalls) {
        const output = await turn.callTool(call.function.name, call.function.arguments || '{}');
        history.push({ role: 'tool', tool_call_id: call.id, content: output });
      }
    }
    throw new AgentError('the model kept calling tools');
  }

  private trim(history: ChatMessage[]): void {
    // Drop whole leading messages until within bound, never leaving a tool answer without its call.
    while (history.length > MAX_HISTORY_MESSAGES || history[0]?.role === 'tool') history.shift();
  }

  private async *stream(turn: AgentTurn, history: ChatMessage[]): AsyncGenerator<z.infer<typeof chunkSchema>> {
    const messages: ChatMessage[] = turn.instructions
      ? [{ role: 'system', content: turn.instructions }, ...history]
      : history;
    const body: Record<string, unknown> = { model: this.options.model, stream: true, messages };
    if (turn.tools.length > 0 && turn.toolChoice !== 'none') {
      body.tools = turn.tools.map((tool) => ({
        type: 'function',
        function: {
          name: tool.name,
          ...(tool.description ? { description: tool.description } : {}),
          parameters: tool.parameters,
        },
      }));
      body.tool_choice =
        typeof turn.toolChoice === 'object'
          ? { type: 'function', function: { name: turn.toolChoice.name } }
          : turn.toolChoice;
    }
    const doFetch = this.options.fetch ?? fetch;
    let response: Response;
    try {
      response = await doFetch(`${this.options.baseUrl}/chat/completions`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'text/event-stream',
          ...(this.options.apiKey ? { authorization: `Bearer ${this.options.apiKey}` } : {}),
        },
        body: JSON.stringify(body),
        signal: turn.signal,
      });
    } catch (error) {
      throw new AgentError(turn.signal.aborted ? 'cancelled' : `chat request failed: ${(error as Error).name}`);
    }
    if (!response.ok || !response.body)
      throw new AgentError(`chat endpoint answered ${response.status}`, response.status);
    // The suite's one SSE reader: a chunk counts once the blank line after it has arrived.
    for await (const frame of readSse(response.body, { signal: turn.signal })) {
      if (frame.data === '[DONE]') return;
      let json: unknown;
      try {
        json = JSON.parse(frame.data);
      } catch {
        throw new AgentError('chat endpoint sent a frame that is not JSON');
      }
      const parsed = chunkSchema.safeParse(json);
      if (!parsed.success) throw new AgentError('chat endpoint sent an unexpected chunk');
      yield parsed.data;
    }
    // readSse stops quietly on abort; a cut-off stream must not pass for a finished round.
    if (turn.signal.aborted) throw new AgentError('cancelled');
  }

  endSession(sessionKey: string): void {
    this.histories.delete(sessionKey);
  }
}
