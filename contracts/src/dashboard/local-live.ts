import { z } from 'zod';
import { defineRoute } from '../route.js';
import { detailAnswer, detailUnavailable, noStoreNoCache } from './detail-error.js';
import { bodyRefusals, unauthorized } from './notification-settings.js';
import { PROFILE_NAME_PATTERN, profileQuery } from './profile.js';

/** Where the model routes live, under the plugin prefix: the model address a speech server is given. */
export const LOCAL_LIVE_MODEL_PATH = '/api/plugins/conduit_push/local-live/v1';

/**
 * A profile's Local Live key: `cll.<profile>.<secret>`. It names its profile (so the model routes know
 * whose calls a request belongs to before any lookup) and `.` appears in neither a profile name nor
 * the base64url secret, so the key splits one way only.
 */
export const LOCAL_LIVE_KEY_PATTERN = new RegExp(
  `^cll\\.(${PROFILE_NAME_PATTERN.source.slice(1, -1)})\\.([A-Za-z0-9_-]{43})$`,
);

export const localLiveStatusResponse = z.object({
  ok: z.literal(true),
  /** Whether the model routes accept this profile's key on this host. */
  available: z.boolean(),
  /** Null, or why Local Live cannot run on this host. */
  reason: z.string().nullable(),
  /** The profile the key belongs to (`default` for the root home). */
  profile: z.string(),
  /**
   * The dashboard's address as this request reached it, plus `/api/plugins/conduit_push/local-live/v1`:
   * what `speech-to-speech --responses_api_base_url` is given.
   */
  model_address: z.string(),
  /** The profile's key (created on first use), or null when Local Live is unavailable. */
  key: z.string().nullable(),
  /** Whether `voice.speech_server.url` is set to an address the relay can use. */
  speech_server: z.boolean(),
});

/** Whether Local Live can run for this profile, its model address and key (the key is made on first use). */
export const getLocalLiveStatus = defineRoute({
  method: 'GET',
  path: '/api/plugins/conduit_push/local-live/status',
  operationId: 'getLocalLiveStatus',
  summary: 'Local Live availability, model address and key for a profile',
  tags: ['live-voice'],
  auth: 'bearer',
  query: profileQuery,
  responses: {
    200: { description: 'Available, or why not.', schema: localLiveStatusResponse, headers: noStoreNoCache },
    401: unauthorized,
    500: detailAnswer('An unexpected failure, named by its type only.'),
    503: detailUnavailable('The profile cannot be resolved.'),
  },
});

export const localLiveKeyResponse = z.object({
  ok: z.literal(true),
  profile: z.string(),
  /** The new key; the old one is refused from this answer on. */
  key: z.string(),
});

/** Replaces the profile's Local Live key; the old key stops working at once in this process. */
export const rotateLocalLiveKey = defineRoute({
  method: 'POST',
  path: '/api/plugins/conduit_push/local-live/key',
  operationId: 'rotateLocalLiveKey',
  summary: "Rotate a profile's Local Live key",
  tags: ['live-voice'],
  auth: 'bearer',
  query: profileQuery,
  responses: {
    200: { description: 'The new key.', schema: localLiveKeyResponse, headers: noStoreNoCache },
    401: unauthorized,
    415: bodyRefusals[415],
    500: detailAnswer('An unexpected failure, named by its type only.'),
    503: detailUnavailable('The profile cannot be resolved, or Local Live is unavailable on this host.'),
  },
});

/** OpenAI's error shape, which OpenAI-compatible clients (the speech server's) read. */
export const openAiErrorBody = z.object({
  error: z.object({
    message: z.string(),
    type: z.string(),
    code: z.string().nullable(),
  }),
});

/** A content part as chat-completions and Responses clients send them; only text parts are read. */
const contentPart = z.looseObject({ type: z.string(), text: z.string().optional() });

const messageContent = z.union([z.string(), z.array(contentPart), z.null()]);

/**
 * The chat-completions request as far as this host reads it: the messages' roles and text. The model
 * name and every other field (tools, temperature, extra_body) are accepted and ignored.
 */
export const localLiveChatRequest = z.looseObject({
  model: z.string().max(256).optional(),
  stream: z.boolean().nullable().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullable().optional(),
  messages: z.array(z.looseObject({ role: z.string(), content: messageContent.optional() })).max(10_000),
});

/** The Responses request as far as this host reads it: `input` as text or as message items. */
export const localLiveResponsesRequest = z.looseObject({
  model: z.string().max(256).optional(),
  stream: z.boolean().nullable().optional(),
  input: z.union([
    z.string(),
    z.array(
      z.looseObject({ type: z.string().optional(), role: z.string().optional(), content: messageContent.optional() }),
    ),
  ]),
});

export const chatCompletionBody = z.object({
  id: z.string(),
  object: z.literal('chat.completion'),
  created: z.number().int(),
  model: z.string(),
  choices: z.array(
    z.object({
      index: z.number().int(),
      message: z.object({ role: z.literal('assistant'), content: z.string() }),
      finish_reason: z.literal('stop'),
    }),
  ),
  usage: z.object({ prompt_tokens: z.number(), completion_tokens: z.number(), total_tokens: z.number() }),
});

export const responseBody = z.object({
  id: z.string(),
  object: z.literal('response'),
  created_at: z.number().int(),
  status: z.literal('completed'),
  model: z.string(),
  output: z.array(
    z.object({
      type: z.literal('message'),
      id: z.string(),
      status: z.literal('completed'),
      role: z.literal('assistant'),
      content: z.array(z.object({ type: z.literal('output_text'), text: z.string(), annotations: z.array(z.never()) })),
    }),
  ),
  output_text: z.string(),
  usage: z.object({ input_tokens: z.number(), output_tokens: z.number(), total_tokens: z.number() }),
});

/** A streamed answer (`stream: true`): server-sent events written as the turn's text arrives. */
/**
 * What the server writes a streamed answer to (a Node `PassThrough`), described by shape so that this
 * contract, which the SDK bundles for any JavaScript runtime, never imports Node's own modules.
 */
export interface EventStreamBody {
  pipe(destination: never): unknown;
}

export const eventStream = z
  .custom<EventStreamBody>(
    (value) => typeof value === 'object' && value !== null && typeof (value as { pipe?: unknown }).pipe === 'function',
  )
  .meta({
    description: 'With `stream: true`: a `text/event-stream` body (server-sent events), not JSON.',
  });

/** Every answer of a model route: the completion (`ok`), or OpenAI's error shape. */
function modelRouteResponses<const Ok extends { description: string; schema: z.ZodType }>(ok: Ok) {
  return {
    200: ok,
    400: { description: 'The body is not JSON, or has no user message.', schema: openAiErrorBody },
    401: {
      description: 'No Local Live key, or not the profile’s current key (a dashboard credential is refused here).',
      schema: openAiErrorBody,
    },
    413: { description: 'A body over 8 MiB.', schema: openAiErrorBody },
    500: { description: 'An unexpected failure, named by its type only.', schema: openAiErrorBody },
    503: { description: 'Local Live is unavailable on this host.', schema: openAiErrorBody },
  };
}

const TURN_RULES =
  'The model name is ignored and only the newest user message is used (Hermes keeps the history). With no Local Live socket open for the key’s profile the answer is a fixed line, so a warmup request succeeds; a text Classic voice sent on a `mode=speak` socket is read back unchanged; otherwise the text goes to the profile’s newest Local Live socket as `{"type":"conduit.turn","turn_id","text"}` and the app’s `conduit.turn.delta` frames are the answer, until `conduit.turn.done`, `conduit.turn.error`, 90 s without a frame, a newer turn or the caller going away (the last two send `conduit.turn.cancel` to the app).';

/** OpenAI-compatible chat completions for a speech-to-speech server (`--llm_backend chat-completions`). */
export const postLocalLiveChatCompletions = defineRoute({
  method: 'POST',
  path: `${LOCAL_LIVE_MODEL_PATH}/chat/completions`,
  operationId: 'postLocalLiveChatCompletions',
  summary: 'Local Live model route: chat completions answered by the Conduit app through Hermes',
  description: `Authorization: Bearer <the profile's Local Live key>, never the dashboard sign-in. ${TURN_RULES} With \`stream: true\` the answer is \`text/event-stream\`: \`data: <chat.completion.chunk>\` events (the role first, then each text delta, then \`finish_reason: "stop"\`, a usage chunk when \`stream_options.include_usage\`), then \`data: [DONE]\`.`,
  tags: ['live-voice'],
  auth: 'localLiveKey',
  body: localLiveChatRequest,
  bodyReading: 'handler',
  responses: modelRouteResponses({
    description: 'A chat.completion, or (stream: true) a text/event-stream of chat.completion.chunk events.',
    schema: z.union([chatCompletionBody, eventStream]),
  }),
});

/** The same turn through the Responses API (`--llm_backend responses-api`). */
export const postLocalLiveResponses = defineRoute({
  method: 'POST',
  path: `${LOCAL_LIVE_MODEL_PATH}/responses`,
  operationId: 'postLocalLiveResponses',
  summary: 'Local Live model route: the Responses API answered by the Conduit app through Hermes',
  description: `Authorization as for chat completions. ${TURN_RULES} With \`stream: true\` the answer is \`text/event-stream\` with \`event:\`/\`data:\` pairs: response.created, response.output_item.added, response.content_part.added, response.output_text.delta (each text delta), response.output_text.done, response.content_part.done, response.output_item.done, response.completed.`,
  tags: ['live-voice'],
  auth: 'localLiveKey',
  body: localLiveResponsesRequest,
  bodyReading: 'handler',
  responses: modelRouteResponses({
    description: 'A response object, or (stream: true) a text/event-stream of Responses events.',
    schema: z.union([responseBody, eventStream]),
  }),
});

/** Host → app on the Local Live socket: answer this turn (the newest user message). */
export const conduitTurnFrame = z.object({
  type: z.literal('conduit.turn'),
  turn_id: z.string(),
  text: z.string(),
});

/** Host → app: stop working on this turn (the caller went away, a newer turn started, or it timed out). */
export const conduitTurnCancelFrame = z.object({ type: z.literal('conduit.turn.cancel'), turn_id: z.string() });

/** App → host, never relayed to the speech server: the turn's text as it arrives, then its end. */
export const conduitTurnAppFrame = z.discriminatedUnion('type', [
  z.object({ type: z.literal('conduit.turn.delta'), turn_id: z.string().max(128), text: z.string() }),
  z.object({ type: z.literal('conduit.turn.done'), turn_id: z.string().max(128) }),
  z.looseObject({ type: z.literal('conduit.turn.error'), turn_id: z.string().max(128) }),
]);
export type ConduitTurnAppFrame = z.infer<typeof conduitTurnAppFrame>;
