import { randomBytes } from 'node:crypto';
import type { z } from 'zod';
import type {
  chatCompletionBody,
  localLiveChatRequest,
  localLiveResponsesRequest,
  responseBody,
} from '@conduit/contracts/dashboard/local-live';

/**
 * The two OpenAI wire formats a speech-to-speech server asks its model in (`--llm_backend
 * chat-completions` or `responses-api`): how the newest user message is read from a request, and how
 * a turn's text is written back, whole or as server-sent events.
 */
export interface CompletionFormat<Body> {
  /** The newest user message's text, or null when the request has none. */
  userText(): string | null;
  /** Whether the caller asked for server-sent events. */
  streamed: boolean;
  /** Events written before the first text. */
  opening(): string;
  /** The event that carries one piece of text. */
  delta(text: string): string;
  /** Events that end the answer, given all of its text. */
  closing(text: string): string;
  /** The whole answer as one JSON body. */
  whole(text: string): Body;
}

type Content = string | readonly { type: string; text?: string | undefined }[] | null | undefined;

/** The text of a message's content: the string, or its text parts joined (images and audio are not read). */
function textOf(content: Content): string {
  if (typeof content === 'string') return content;
  if (!content) return '';
  return content
    .filter((part) => part.type === 'text' || part.type === 'input_text')
    .map((part) => part.text ?? '')
    .join('');
}

/** One server-sent event: a `data:` line (with `event:` first when named) and the blank line. */
function sse(data: unknown, event?: string): string {
  return `${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`;
}

function newId(prefix: string): string {
  return `${prefix}${randomBytes(12).toString('base64url')}`;
}

/** The model named in the answer: the caller's own (it is otherwise ignored), else `conduit`. */
function modelName(requested: string | undefined): string {
  return requested?.trim() || 'conduit';
}

/** Chat completions (OpenAI's `chat.completion` and `chat.completion.chunk` objects). */
export function chatCompletionFormat(
  request: z.output<typeof localLiveChatRequest>,
  nowMs: number,
): CompletionFormat<z.input<typeof chatCompletionBody>> {
  const id = newId('chatcmpl-');
  const created = Math.floor(nowMs / 1000);
  const model = modelName(request.model);
  const chunk = (delta: Record<string, string>, finish: 'stop' | null) => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  });
  return {
    streamed: request.stream === true,
    userText() {
      const newest = [...request.messages].reverse().find((message) => message.role === 'user');
      return newest ? textOf(newest.content) : null;
    },
    opening: () => sse(chunk({ role: 'assistant', content: '' }, null)),
    delta: (text) => sse(chunk({ content: text }, null)),
    closing() {
      let out = sse(chunk({}, 'stop'));
      // Asked for by speech-to-speech (stream_options.include_usage): a last chunk with no choices.
      if (request.stream_options?.include_usage) {
        out += sse({
          id,
          object: 'chat.completion.chunk',
          created,
          model,
          choices: [],
          usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
        });
      }
      return `${out}data: [DONE]\n\n`;
    },
    whole: (text) => ({
      id,
      object: 'chat.completion',
      created,
      model,
      choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
      // Hermes' tokens are counted by Hermes; this route reports none of its own.
      usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
    }),
  };
}

/** The Responses API (`response` objects and `response.*` stream events). */
export function responsesFormat(
  request: z.output<typeof localLiveResponsesRequest>,
  nowMs: number,
): CompletionFormat<z.input<typeof responseBody>> {
  const id = newId('resp_');
  const itemId = newId('msg_');
  const createdAt = Math.floor(nowMs / 1000);
  const model = modelName(request.model);
  let sequence = 0;
  const event = (type: string, fields: Record<string, unknown>) =>
    sse({ type, sequence_number: sequence++, ...fields }, type);
  const usage = { input_tokens: 0, output_tokens: 0, total_tokens: 0 };
  const response = (status: 'in_progress' | 'completed', text: string | null) => ({
    id,
    object: 'response',
    created_at: createdAt,
    status,
    model,
    output: text === null ? [] : [message(text)],
    ...(status === 'completed' ? { usage } : {}),
  });
  const message = (text: string) => ({
    type: 'message' as const,
    id: itemId,
    status: 'completed' as const,
    role: 'assistant' as const,
    content: [{ type: 'output_text' as const, text, annotations: [] }],
  });
  const location = { item_id: itemId, output_index: 0, content_index: 0 };
  return {
    streamed: request.stream === true,
    userText() {
      if (typeof request.input === 'string') return request.input;
      const newest = [...request.input]
        .reverse()
        .find((item) => item.role === 'user' && (item.type === undefined || item.type === 'message'));
      return newest ? textOf(newest.content) : null;
    },
    opening: () =>
      event('response.created', { response: response('in_progress', null) }) +
      event('response.output_item.added', {
        output_index: 0,
        item: { type: 'message', id: itemId, status: 'in_progress', role: 'assistant', content: [] },
      }) +
      event('response.content_part.added', { ...location, part: { type: 'output_text', text: '', annotations: [] } }),
    delta: (text) => event('response.output_text.delta', { ...location, delta: text }),
    closing: (text) =>
      event('response.output_text.done', { ...location, text }) +
      event('response.content_part.done', { ...location, part: { type: 'output_text', text, annotations: [] } }) +
      event('response.output_item.done', { output_index: 0, item: message(text) }) +
      event('response.completed', { response: response('completed', text) }),
    whole: (text) => ({
      ...response('completed', text),
      object: 'response',
      status: 'completed',
      output_text: text,
      usage,
    }),
  };
}
