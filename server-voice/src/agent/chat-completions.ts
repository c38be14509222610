import { readSse } from '@conduit/contracts/hermes/sse-reader';
import { z } from 'zod';
import type { AgentEvent, AgentTurn } from './agent-backend.js';
import { AgentError } from './agent-backend.js';

/**
 * One turn over an OpenAI-compatible streaming `/chat/completions` route, with the session's client function
 * tools: the reply streams as deltas; when the model answers `tool_calls`, each call runs through the client
 * (`turn.callTool`), the assistant's call message and the `role: "tool"` results are appended, and the route is
 * asked again until it answers with text. The OpenAI-compatible agent and the Hermes agent's client-tool turns
 * (Hermes' API server speaks the same protocol) both run their turns here.
 */

export type ChatMessage =
  | { role: 'system' | 'user'; content: string }
  /** A user message with attached images (only while its own turn runs; history keeps the text). */
  | { role: 'user'; content: ChatContentPart[] }
  | { role: 'assistant'; content: string | null; tool_calls?: ToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };

type ChatContentPart = { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } };

interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** Where a turn's requests go; what differs between the agents that use this module. */
export interface ChatCompletionsRoute {
  /** The route's full URL (`…/v1/chat/completions`). */
  url: string;
  model: string;
  /** Sent with every request beside the content type (authorization, session headers). */
  headers: Record<string, string>;
  fetch?: typeof fetch;
  /**
   * The error for a refused request (not 2xx), given the status and the start of the answer's body; by default
   * `chat endpoint answered <status>`.
   */
  refused?: (status: number, body: string) => AgentError;
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
/** Bound on the refusal body read for its reason: enough for an error message, never a whole page. */
const MAX_REFUSAL_BODY_CHARS = 2_000;

/** Whether this turn offers the model client tools (`tool_choice: "none"` hides them). */
export function offersClientTools(turn: AgentTurn): boolean {
  return turn.tools.length > 0 && turn.toolChoice !== 'none';
}

/**
 * Runs one turn: appends the user's text, then every assistant and tool message of the turn, to `history`
 * (the caller decides what history is kept between turns) and returns the reply's text.
 */
export async function* chatCompletionsTurn(
  route: ChatCompletionsRoute,
  turn: AgentTurn,
  history: ChatMessage[],
): AsyncGenerator<AgentEvent, string, void> {
  const images = turn.images ?? [];
  const userMessage: ChatMessage =
    images.length > 0
      ? {
          role: 'user',
          content: [
            { type: 'text', text: turn.text },
            ...images.map((image) => ({
              type: 'image_url' as const,
              image_url: { url: `data:${image.mimeType};base64,${image.data.toString('base64')}` },
            })),
          ],
        }
      : { role: 'user', content: turn.text };
  history.push(userMessage);
  try {
    return yield* turnRounds(route, turn, history);
  } finally {
    // Images go with their own turn only: the remembered message keeps the words.
    if (images.length > 0) {
      const index = history.indexOf(userMessage);
      if (index >= 0) history[index] = { role: 'user', content: turn.text };
    }
  }
}

async function* turnRounds(
  route: ChatCompletionsRoute,
  turn: AgentTurn,
  history: ChatMessage[],
): AsyncGenerator<AgentEvent, string, void> {
  let reply = '';
  for (let round = 0; round <= MAX_TOOL_ROUNDS; round += 1) {
    const calls = new Map<number, ToolCall>();
    let roundText = '';
    for await (const chunk of streamChunks(route, turn, history)) {
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

async function* streamChunks(
  route: ChatCompletionsRoute,
  turn: AgentTurn,
  history: ChatMessage[],
): AsyncGenerator<z.infer<typeof chunkSchema>> {
  const messages: ChatMessage[] = turn.instructions
    ? [{ role: 'system', content: turn.instructions }, ...history]
    : history;
  const body: Record<string, unknown> = { model: route.model, stream: true, messages };
  if (offersClientTools(turn)) {
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
  const doFetch = route.fetch ?? fetch;
  let response: Response;
  try {
    response = await doFetch(route.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...route.headers },
      body: JSON.stringify(body),
      signal: turn.signal,
    });
  } catch (error) {
    throw new AgentError(turn.signal.aborted ? 'cancelled' : `chat request failed: ${(error as Error).name}`);
  }
  if (!response.ok || !response.body) {
    if (!route.refused) throw new AgentError(`chat endpoint answered ${response.status}`, response.status);
    const text = await response.text().catch(() => '');
    throw route.refused(response.status, text.slice(0, MAX_REFUSAL_BODY_CHARS));
  }
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
