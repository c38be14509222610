/**
 * The conversation events of CONTRACT.md §2, shared by every transport (the direct WebRTC `oai-events`
 * data channel today, LiveKit `conference.events` later). Field names are the wire's, exactly.
 */
import { z } from 'zod';

/** Largest event either side may send, in UTF-8 bytes. */
export const MAX_EVENT_BYTES = 256 * 1024;
/** Largest typed text, instructions or tool output, in UTF-8 bytes. */
export const MAX_TEXT_BYTES = 64 * 1024;
/** Longest `event_id` echoed back in an error, in UTF-8 bytes. */
export const MAX_ECHOED_EVENT_ID_BYTES = 128;
/** Longest error message, in characters. */
export const MAX_ERROR_MESSAGE_CHARS = 500;

export type ToolChoice = 'auto' | 'none' | 'required' | { type: 'function'; name: string };

/** A flat OpenAI Realtime function tool declared by the client for its session. */
export interface SessionTool {
  type: 'function';
  name: string;
  description?: string;
  parameters: Record<string, unknown>;
}

/** Audio on the wire is Opus on the WebRTC track; the session reports it as OpenAI's WebRTC sessions do. */
export interface SessionAudioFormat {
  type: 'audio/pcm';
  rate: 24000;
}

/** The gateway's own turn detection (server VAD with its configured silence), as a GA session reports it. */
export interface SessionTurnDetection {
  type: 'server_vad';
  /** The energy gate's start threshold is adaptive; with Silero this is its speech probability threshold. */
  threshold: number;
  /** Idle audio kept before detected speech. */
  prefix_padding_ms: number;
  silence_duration_ms: number;
  /** A reply starts when the speaker stops. */
  create_response: true;
  /** Whether speech over a reply cancels it (HERMES_REALTIME_BARGE_IN). */
  interrupt_response: boolean;
}

/**
 * The effective session, in the GA Realtime shape (`session.created` / `session.updated`). The fields the
 * gateway decides (`model`, `output_modalities`, `audio`) say what it does; fields with no meaning here that
 * a client sent (`tracing`, `truncation`, `prompt`, …) are kept and returned as sent.
 */
export interface SessionSnapshot {
  id: string;
  object: 'realtime.session';
  type: 'realtime';
  model: 'hermes';
  output_modalities: ['audio'];
  instructions: string;
  tools: SessionTool[];
  tool_choice: ToolChoice;
  audio: {
    input: { format: SessionAudioFormat; turn_detection: SessionTurnDetection };
    output: { format: SessionAudioFormat; voice: 'hermes' };
  };
  [kept: string]: unknown;
}

export interface UserMessageItem {
  id: string;
  type: 'message';
  status: 'completed';
  role: 'user';
  content: [{ type: 'input_audio'; transcript: string } | { type: 'input_text'; text: string }];
}

export interface AssistantMessageItem {
  id: string;
  type: 'message';
  status: 'in_progress' | 'completed' | 'incomplete';
  role: 'assistant';
  content: [{ type: 'output_audio'; transcript: string }];
}

export interface FunctionCallItem {
  id: string;
  type: 'function_call';
  status: 'in_progress' | 'completed';
  call_id: string;
  name: string;
  arguments: string;
}

export interface FunctionCallOutputItem {
  id: string;
  type: 'function_call_output';
  call_id: string;
  output: string;
}

export type ConversationItem = UserMessageItem | AssistantMessageItem | FunctionCallItem | FunctionCallOutputItem;

export type ResponseStatus = 'in_progress' | 'completed' | 'failed' | 'cancelled';

export interface ResponseObject {
  id: string;
  status: ResponseStatus;
  output: (AssistantMessageItem | FunctionCallItem)[];
}

export interface ErrorDetail {
  type: 'invalid_request_error';
  code: string;
  message: string;
  param: string | null;
  event_id: string | null;
}

export interface TranscriptionUsage {
  type: 'tokens';
  total_tokens: 0;
  input_tokens: 0;
  output_tokens: 0;
  input_token_details: { audio_tokens: 0; text_tokens: 0 };
}

interface ContentRef {
  response_id: string;
  item_id: string;
  output_index: 0;
  content_index: 0;
}

/** Every server event without its `event_id` (the state machine stamps ids in publish order). */
export type ServerEventBody =
  | { type: 'session.created'; session: SessionSnapshot }
  | { type: 'session.updated'; session: SessionSnapshot }
  | { type: 'input_audio_buffer.speech_started'; audio_start_ms: number; item_id: string }
  | { type: 'input_audio_buffer.speech_stopped'; audio_end_ms: number; item_id: string }
  | { type: 'input_audio_buffer.committed'; item_id: string; previous_item_id: string | null }
  | { type: 'input_audio_buffer.cleared' }
  /** `previous_item_id`: the item before this one in the conversation (null for the first). */
  | { type: 'conversation.item.added'; previous_item_id: string | null; item: ConversationItem }
  | { type: 'conversation.item.done'; previous_item_id: string | null; item: ConversationItem }
  | { type: 'conversation.item.retrieved'; item: ConversationItem }
  | {
      type: 'conversation.item.input_audio_transcription.completed';
      item_id: string;
      content_index: 0;
      transcript: string;
      usage: TranscriptionUsage;
    }
  | { type: 'response.created'; response: ResponseObject }
  | {
      type: 'response.output_item.added' | 'response.output_item.done';
      response_id: string;
      /** The item's index in the response's output (a function call follows what was said before it). */
      output_index: number;
      item: AssistantMessageItem | FunctionCallItem;
    }
  | ({
      type: 'response.content_part.added' | 'response.content_part.done';
      /** GA part types are `audio` and `text` (the item's content says `output_audio`). */
      part: { type: 'audio'; transcript: string };
    } & ContentRef)
  | ({ type: 'response.output_audio.done' } & ContentRef)
  | ({ type: 'response.output_audio_transcript.delta'; delta: string; transcript?: string } & ContentRef)
  | ({ type: 'response.output_audio_transcript.done'; transcript: string } & ContentRef)
  | {
      type: 'output_audio_buffer.started' | 'output_audio_buffer.stopped' | 'output_audio_buffer.cleared';
      response_id: string;
    }
  | {
      type: 'response.function_call_arguments.done';
      response_id: string;
      item_id: string;
      output_index: number;
      call_id: string;
      name: string;
      arguments: string;
    }
  | { type: 'response.done'; response: ResponseObject }
  | { type: 'hermes.input_audio.state_updated'; muted: boolean }
  | { type: 'error'; error: ErrorDetail };

export type ServerEvent = ServerEventBody & { event_id: string };
export type ServerEventType = ServerEventBody['type'];

/** The client event types the gateway accepts; anything else gets `unsupported_client_event`. */
export const CLIENT_EVENT_TYPES = [
  'session.update',
  'conversation.item.create',
  'conversation.item.retrieve',
  'response.create',
  'response.cancel',
  'input_audio_buffer.commit',
  'input_audio_buffer.clear',
  'output_audio_buffer.clear',
  'hermes.input_audio.state',
] as const;
export type ClientEventType = (typeof CLIENT_EVENT_TYPES)[number];

/** The envelope every client event shares; the rest is validated per type, in the contract's order. */
export const clientEventEnvelope = z.looseObject({ type: z.string(), event_id: z.unknown().optional() });

/** Typed input, as a client sends it. */
export const typedInputItem = z.object({
  id: z.string().optional(),
  type: z.literal('message'),
  role: z.literal('user'),
  content: z.tuple([z.object({ type: z.literal('input_text'), text: z.string() })]),
});

/** The answer to a client function call. */
export const functionCallOutputItem = z.object({
  id: z.string().optional(),
  type: z.literal('function_call_output'),
  call_id: z.string(),
  output: z.string(),
});

/**
 * `session.update`'s session as a GA client sends it (the official SDKs send the whole object every time).
 * Only what the gateway applies is checked here; every other field, known to the GA API or not, is accepted
 * and kept (one field the gateway cannot honour never rejects the update).
 */
export const sessionUpdateBody = z.looseObject({
  type: z.string().optional(),
  instructions: z.unknown().optional(),
  tools: z.unknown().optional(),
  tool_choice: z.unknown().optional(),
});

/** GA session fields whose effective value the gateway decides itself (reported, never kept as sent). */
export const SESSION_FIELDS_DECIDED_BY_GATEWAY = [
  'id',
  'object',
  'type',
  'model',
  'output_modalities',
  'audio',
  // Pre-GA names of the same settings.
  'modalities',
  'voice',
  'input_audio_format',
  'output_audio_format',
  'input_audio_transcription',
  'input_audio_noise_reduction',
  'turn_detection',
] as const;

/** `conversation.item.retrieve`. */
export const itemRetrieveEvent = z.object({ type: z.literal('conversation.item.retrieve'), item_id: z.string() });
