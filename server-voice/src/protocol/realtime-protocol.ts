import {
  MAX_ECHOED_EVENT_ID_BYTES,
  MAX_ERROR_MESSAGE_CHARS,
  MAX_EVENT_BYTES,
  MAX_TEXT_BYTES,
  type AssistantMessageItem,
  type ConversationItem,
  type FunctionCallItem,
  type ResponseObject,
  type ServerEvent,
  type ServerEventBody,
  itemRetrieveEvent,
  type SessionSnapshot,
  type SessionTool,
  type SessionTurnDetection,
  type ToolChoice,
} from '@conduit/contracts/voice/events';
import { parseToolChoice } from '../session/session-tools.js';
import { decodeClientJson } from './client-json.js';
import { parseSessionUpdate } from './session-update.js';

/** Where an event goes: one identity, or everyone on the transport (`null`). */
export type Recipient = string | null;
export type Publish = (event: ServerEvent, recipient: Recipient) => void;
/** Runs `fn` once after `ms` unless cancelled (injected, so tests fire timers by hand instead of waiting). */
export type SetTimer = (fn: () => void, ms: number) => { cancel: () => void };

export const realTimer: SetTimer = (fn, ms) => {
  const handle = setTimeout(fn, ms);
  return { cancel: () => clearTimeout(handle) };
};

/** What the transport and the turn pipeline do when clients ask for something. All optional: a missing one answers an error. */
export interface ProtocolCallbacks {
  /** Typed text was committed by `response.create`; the response is already open. */
  onTextInput?: (text: string, identity: string, responseId: string) => void;
  /** `response.create` without pending text; the response is already open. */
  onResponseRequested?: (identity: string, responseId: string) => void;
  /** `response.cancel`: stop the agent and drop queued speech now (the protocol then reports the cancellation). */
  onResponseCancelled?: (identity: string, responseId: string) => void;
  onInputAudioState?: (muted: boolean, identity: string) => void;
  onToolChoiceUpdated?: (choice: ToolChoice) => void;
  /**
   * `input_audio_buffer.commit`: end the speaker's current utterance now (as if they paused). When nothing is
   * being captured the transport answers `inputAudioCommitEmpty`.
   */
  onInputAudioCommit?: (identity: string, eventId: string | null) => void;
  /** `input_audio_buffer.clear`: drop the audio captured so far (an open utterance and the pre-roll). */
  onInputAudioClear?: (identity: string) => void;
  /** `output_audio_buffer.clear` after the response completed: stop playing its audio now. */
  onOutputAudioClear?: (identity: string, responseId: string) => void;
  /** The protocol closed itself (an event grew past the size limit); the transport should hang up. */
  onClosed?: (reason: string) => void;
}

export interface ProtocolOptions {
  /** The call id (direct) or room name (LiveKit); part of every id. */
  sessionId: string;
  publish: Publish;
  callbacks: ProtocolCallbacks;
  instructions: string;
  tools: SessionTool[];
  toolChoice: ToolChoice;
  /** Milliseconds on a monotonic clock; `audio_*_ms` fields count from protocol creation. */
  nowMs: () => number;
  /** `bytes` random bytes as lowercase hex. */
  randomHex: (bytes: number) => string;
  /** Whether `hermes.input_audio.state` is accepted on this topic (direct: yes; LiveKit events topic: no). */
  inputAudioStateOnEvents?: boolean;
  /** The turn detection the session reports (the gateway's own VAD settings). */
  turnDetection?: SessionTurnDetection;
  /** How long a client function call may wait for its output (30 s). */
  toolTimeoutMs?: number;
  setTimer?: SetTimer;
}

/** The result a turn gets back from a client function call. */
export interface ToolCallResult {
  output: string;
  /** The response the client opened with `response.create` to resume the turn. */
  responseId: string;
}

export class ToolCallError extends Error {
  override readonly name = 'ToolCallError';
  constructor(readonly code: 'tool_timeout' | 'cancelled') {
    super(code);
  }
}

interface ActiveResponse {
  id: string;
  identity: string;
  assistant: AssistantMessageItem | null;
  /** The caption so far (snapshot semantics: a revision that does not extend it replaces it). */
  draft: string;
  audioPlaying: boolean;
  output: (AssistantMessageItem | FunctionCallItem)[];
}

/** A conversation item's place (the item before it) and its latest state (null until it is published). */
interface ItemEntry {
  previous: string | null;
  item: ConversationItem | null;
}

interface PendingToolCall {
  callId: string;
  itemId: string;
  identity: string;
  output: string | null;
  resolve: (result: ToolCallResult) => void;
  reject: (error: ToolCallError) => void;
  timer: { cancel: () => void };
}

const FOLLOW_UP_TEXT_LIMIT = MAX_TEXT_BYTES;
/**
 * Conversation items remembered for `previous_item_id` and `conversation.item.retrieve`: the newest 256 (a
 * two-hour call must not grow without bound; a client retrieves recent items, not the first of hundreds).
 */
const MAX_REMEMBERED_ITEMS = 256;
const DEFAULT_TURN_DETECTION: SessionTurnDetection = {
  type: 'server_vad',
  threshold: 0.5,
  prefix_padding_ms: 500,
  silence_duration_ms: 1500,
  create_response: true,
  interrupt_response: false,
};
const PCM_24K = { type: 'audio/pcm', rate: 24000 } as const;
const utf8Bytes = (text: string) => Buffer.byteLength(text, 'utf8');
const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const EMPTY_USAGE = {
  type: 'tokens',
  total_tokens: 0,
  input_tokens: 0,
  output_tokens: 0,
  input_token_details: { audio_tokens: 0, text_tokens: 0 },
} as const;

/**
 * The transport-neutral conversation state machine of CONTRACT.md §2. It validates client events (strictly
 * in arrival order: handling is synchronous), stamps and publishes server events, and keeps the ids and the
 * ordering rules. It knows nothing about WebRTC or LiveKit: a transport hands it raw messages and a
 * `publish(event, recipient)` function; the turn pipeline drives the server side through its methods.
 */
export class RealtimeProtocol {
  private sequence = 0;
  private responseCount = 0;
  private inputCount = 0;
  private readonly createdAtMs: number;
  private instructions: string;
  private toolChoice: ToolChoice;
  private tools: SessionTool[];
  /** Session fields a client sent that mean nothing to the gateway, returned as sent. */
  private kept: Record<string, unknown> = {};
  /** The conversation in order: each item's predecessor and latest state (bounded). */
  private readonly items = new Map<string, ItemEntry>();
  private lastItemId: string | null = null;
  /** The response whose speech is in the output buffer (from its first frame until it stopped or was cleared). */
  private playing: string | null = null;
  private lastResponseId: string | null = null;
  private readonly announced = new Set<string>();
  private readonly pendingText = new Map<string, { itemId: string; text: string }>();
  private active: ActiveResponse | null = null;
  private pendingTool: PendingToolCall | null = null;
  private openInputItem: string | null = null;
  private closed = false;

  constructor(private readonly options: ProtocolOptions) {
    this.createdAtMs = options.nowMs();
    this.instructions = options.instructions;
    this.tools = options.tools;
    this.toolChoice = options.toolChoice;
  }

  get sessionId(): string {
    return this.options.sessionId;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  get activeResponseId(): string | null {
    return this.active?.id ?? null;
  }

  get currentToolChoice(): ToolChoice {
    return this.toolChoice;
  }

  get currentInstructions(): string {
    return this.instructions;
  }

  get sessionTools(): readonly SessionTool[] {
    return this.tools;
  }

  /** The effective session (GA shape): kept fields first, so the gateway's own fields always win. */
  snapshot(): SessionSnapshot {
    return {
      ...this.kept,
      id: this.options.sessionId,
      object: 'realtime.session',
      type: 'realtime',
      model: 'hermes',
      output_modalities: ['audio'],
      instructions: this.instructions,
      tools: this.tools,
      tool_choice: this.toolChoice,
      audio: {
        input: { format: PCM_24K, turn_detection: this.options.turnDetection ?? DEFAULT_TURN_DETECTION },
        output: { format: PCM_24K, voice: 'hermes' },
      },
    };
  }

  // ---------------------------------------------------------------- conversation items

  /**
   * The item's place in the conversation: the item before it. The first call places the item after the
   * newest one; later calls (its `done`, a transcript after the commit) return the same predecessor.
   */
  private place(itemId: string): string | null {
    const known = this.items.get(itemId);
    if (known) return known.previous;
    const previous = this.lastItemId;
    this.items.set(itemId, { previous, item: null });
    this.lastItemId = itemId;
    // Oldest first (insertion order); only the surplus at the front goes.
    while (this.items.size > MAX_REMEMBERED_ITEMS) {
      const oldest = this.items.keys().next().value;
      if (oldest === undefined) break;
      this.items.delete(oldest);
    }
    return previous;
  }

  private publishItem(
    type: 'conversation.item.added' | 'conversation.item.done',
    item: ConversationItem,
    recipient: Recipient,
  ): void {
    const previous = this.place(item.id);
    const entry = this.items.get(item.id);
    if (entry) entry.item = item;
    this.publish({ type, previous_item_id: previous, item }, recipient);
  }

  // ---------------------------------------------------------------- publishing

  private publish(body: ServerEventBody, recipient: Recipient): void {
    if (this.closed) return;
    this.sequence += 1;
    const event = {
      event_id: `evt_${this.options.sessionId}_${this.sequence}_${this.options.randomHex(4)}`,
      ...body,
    } as ServerEvent;
    if (utf8Bytes(JSON.stringify(event)) > MAX_EVENT_BYTES) {
      // The reference treats an oversize server event as a broken session rather than truncating it.
      this.closed = true;
      this.options.callbacks.onClosed?.('server event exceeded 256 KiB');
      return;
    }
    this.options.publish(event, recipient);
  }

  /** Answers a client with an `error` event targeted to it. */
  error(identity: string, code: string, message: string, param: string | null = null, eventId: string | null = null) {
    this.publish(
      {
        type: 'error',
        error: {
          type: 'invalid_request_error',
          code,
          message: message.slice(0, MAX_ERROR_MESSAGE_CHARS),
          param,
          event_id: eventId,
        },
      },
      identity,
    );
  }

  /** `session.created`, once per identity (channel open / participant join). */
  announce(identity: string): void {
    if (this.announced.has(identity)) return;
    this.announced.add(identity);
    this.publish({ type: 'session.created', session: this.snapshot() }, identity);
  }

  // ---------------------------------------------------------------- client events

  /** Handles one raw client message. Never throws: every problem becomes a targeted `error` event. */
  handleClientMessage(raw: string | Buffer, identity: string): void {
    if (this.closed) return;
    const decoded = decodeClientJson(raw);
    if (!decoded.ok) {
      this.error(identity, decoded.code, decoded.message);
      return;
    }
    const event = decoded.value;
    const eventId =
      typeof event.event_id === 'string' && utf8Bytes(event.event_id) <= MAX_ECHOED_EVENT_ID_BYTES
        ? event.event_id
        : null;
    const type = event.type;
    if (typeof type !== 'string') {
      this.error(identity, 'invalid_event', 'Client events need a string type.', 'type', eventId);
      return;
    }
    switch (type) {
      case 'session.update':
        return this.sessionUpdate(event, identity, eventId);
      case 'conversation.item.create':
        return this.itemCreate(event, identity, eventId);
      case 'conversation.item.retrieve':
        return this.itemRetrieve(event, identity, eventId);
      case 'input_audio_buffer.commit':
        if (!this.options.callbacks.onInputAudioCommit) break;
        return this.options.callbacks.onInputAudioCommit(identity, eventId);
      case 'input_audio_buffer.clear':
        if (!this.options.callbacks.onInputAudioClear) break;
        return this.inputAudioClear(identity);
      case 'input_audio_buffer.append':
        // Audio arrives on the call's audio track; base64 PCM on the events channel is not read.
        this.error(
          identity,
          'unsupported_client_event',
          'input_audio_buffer.append is not supported here: send audio on the audio track.',
          'type',
          eventId,
        );
        return;
      case 'output_audio_buffer.clear':
        return this.outputAudioClear(identity, eventId);
      case 'response.create':
        return this.responseCreate(identity, eventId);
      case 'response.cancel':
        return this.responseCancel(identity, eventId);
      case 'hermes.input_audio.state':
        if (this.options.inputAudioStateOnEvents === false) {
          this.error(
            identity,
            'unsupported_client_event',
            'Input audio state is not supported by this transport',
            'type',
            eventId,
          );
          return;
        }
        return this.inputAudioState(event, identity, eventId);
      default:
        break;
    }
    this.error(
      identity,
      'unsupported_client_event',
      `Unsupported client event: ${type.slice(0, 128)}`,
      'type',
      eventId,
    );
  }

  private sessionUpdate(event: Record<string, unknown>, identity: string, eventId: string | null): void {
    const parsed = parseSessionUpdate(event.session, this.tools);
    if (!parsed.ok) {
      this.error(identity, parsed.error.code, parsed.error.message, parsed.error.param, eventId);
      return;
    }
    const { change } = parsed;
    const kept = { ...this.kept, ...change.kept };
    // The session is answered in one event with instructions and tools (64 KiB each at most): what is kept
    // for the client gets the same bound, so the answer always fits in 256 KiB.
    if (utf8Bytes(JSON.stringify(kept)) > MAX_TEXT_BYTES) {
      this.error(
        identity,
        'invalid_session',
        'Kept session fields must be at most 64 KiB of JSON.',
        'session',
        eventId,
      );
      return;
    }
    if (change.instructions !== undefined) this.instructions = change.instructions;
    let toolChoice = change.toolChoice ?? this.toolChoice;
    if (change.tools !== undefined) {
      this.tools = change.tools;
      // A choice that named a tool the new list lacks (or required tools that are gone) falls back to auto.
      if (change.toolChoice === undefined && !parseToolChoice(toolChoice, this.tools).ok) toolChoice = 'auto';
    }
    this.kept = kept;
    const choiceChanged = JSON.stringify(toolChoice) !== JSON.stringify(this.toolChoice);
    this.toolChoice = toolChoice;
    if (choiceChanged) this.options.callbacks.onToolChoiceUpdated?.(toolChoice);
    this.publish({ type: 'session.updated', session: this.snapshot() }, identity);
  }

  private itemCreate(event: Record<string, unknown>, identity: string, eventId: string | null): void {
    const item = event.item;
    if (!isRecord(item)) {
      this.error(identity, 'invalid_conversation_item', 'item must be an object.', 'item', eventId);
      return;
    }
    if (item.type === 'function_call_output') return this.toolOutput(item, identity, eventId);
    if (item.type !== 'message' || item.role !== 'user') {
      this.error(
        identity,
        'unsupported_conversation_item',
        'Only user messages and function_call_output items are accepted.',
        'item.type',
        eventId,
      );
      return;
    }
    const content = item.content;
    const part = Array.isArray(content) && content.length === 1 ? content[0] : undefined;
    if (!isRecord(part) || part.type !== 'input_text' || typeof part.text !== 'string') {
      this.error(
        identity,
        'invalid_conversation_item',
        'A user message needs exactly one input_text content part.',
        'item.content',
        eventId,
      );
      return;
    }
    const text = part.text.trim();
    if (!text || utf8Bytes(part.text) > FOLLOW_UP_TEXT_LIMIT) {
      this.error(
        identity,
        'invalid_conversation_item',
        'Text must be non-blank and at most 64 KiB.',
        'item.content',
        eventId,
      );
      return;
    }
    if (this.pendingText.has(identity)) {
      this.error(
        identity,
        'conversation_item_pending',
        'A typed item is already waiting for response.create.',
        'item',
        eventId,
      );
      return;
    }
    const clientId = typeof item.id === 'string' && utf8Bytes(item.id) <= 128 ? item.id : null;
    const itemId = clientId ?? this.nextInputItemId();
    this.pendingText.set(identity, { itemId, text });
    const added: ConversationItem = {
      id: itemId,
      type: 'message',
      status: 'completed',
      role: 'user',
      content: [{ type: 'input_text', text }],
    };
    this.publishItem('conversation.item.added', added, identity);
    this.publishItem('conversation.item.done', added, identity);
  }

  private itemRetrieve(event: Record<string, unknown>, identity: string, eventId: string | null): void {
    const parsed = itemRetrieveEvent.safeParse(event);
    if (!parsed.success) {
      this.error(identity, 'invalid_event', 'conversation.item.retrieve needs an item_id string.', 'item_id', eventId);
      return;
    }
    const item = this.currentItem(parsed.data.item_id);
    if (!item) {
      this.error(identity, 'item_not_found', 'No conversation item has this id.', 'item_id', eventId);
      return;
    }
    this.publish({ type: 'conversation.item.retrieved', item }, identity);
  }

  /** An item as it stands now: the assistant item of the active response carries its caption so far. */
  private currentItem(itemId: string): ConversationItem | null {
    const active = this.active;
    if (active?.assistant && active.assistant.id === itemId)
      return { ...active.assistant, content: [{ type: 'output_audio', transcript: active.draft }] };
    return this.items.get(itemId)?.item ?? null;
  }

  private toolOutput(item: Record<string, unknown>, identity: string, eventId: string | null): void {
    const callId = item.call_id;
    const output = item.output;
    if (
      typeof callId !== 'string' ||
      utf8Bytes(callId) > 128 ||
      typeof output !== 'string' ||
      utf8Bytes(output) > MAX_TEXT_BYTES
    ) {
      this.error(
        identity,
        'invalid_tool_output',
        'function_call_output needs a call_id (≤128 bytes) and a string output (≤64 KiB).',
        'item.output',
        eventId,
      );
      return;
    }
    const pending = this.pendingTool;
    if (!pending || pending.callId !== callId || pending.identity !== identity) {
      this.error(identity, 'unknown_tool_call', 'No pending function call has this call_id.', 'item.call_id', eventId);
      return;
    }
    if (pending.output !== null) {
      this.error(
        identity,
        'duplicate_tool_output',
        'This function call already has its output.',
        'item.call_id',
        eventId,
      );
      return;
    }
    pending.output = output;
    const added: ConversationItem = {
      id: `item_${callId}_output`,
      type: 'function_call_output',
      call_id: callId,
      output,
    };
    this.publishItem('conversation.item.added', added, identity);
    this.publishItem('conversation.item.done', added, identity);
  }

  private responseCreate(identity: string, eventId: string | null): void {
    if (this.active) {
      this.error(
        identity,
        'conversation_already_has_active_response',
        'A response is already in progress.',
        null,
        eventId,
      );
      return;
    }
    const pending = this.pendingTool;
    if (pending) {
      if (pending.output === null) {
        this.error(identity, 'tool_outputs_pending', 'Send the function_call_output first.', null, eventId);
        return;
      }
      this.pendingTool = null;
      pending.timer.cancel();
      const responseId = this.openResponse(pending.identity);
      pending.resolve({ output: pending.output, responseId });
      return;
    }
    const text = this.pendingText.get(identity);
    if (text) {
      if (!this.options.callbacks.onTextInput) {
        this.error(
          identity,
          'text_input_unavailable',
          'Typed input is not available on this transport.',
          null,
          eventId,
        );
        return;
      }
      this.pendingText.delete(identity);
      const responseId = this.openResponse(identity);
      this.options.callbacks.onTextInput(text.text, identity, responseId);
      return;
    }
    if (!this.options.callbacks.onResponseRequested) {
      this.error(identity, 'response_create_unsupported', 'response.create is not supported here.', null, eventId);
      return;
    }
    const responseId = this.openResponse(identity);
    this.options.callbacks.onResponseRequested(identity, responseId);
  }

  private responseCancel(identity: string, eventId: string | null): void {
    const active = this.active;
    if (!active) {
      this.error(identity, 'no_active_response', 'There is no response to cancel.', null, eventId);
      return;
    }
    this.options.callbacks.onResponseCancelled?.(identity, active.id);
    this.finishResponse(active.id, 'cancelled');
  }

  private inputAudioState(event: Record<string, unknown>, identity: string, eventId: string | null): void {
    if (typeof event.muted !== 'boolean') {
      this.error(identity, 'invalid_input_audio_state', 'muted must be a boolean.', 'muted', eventId);
      return;
    }
    this.options.callbacks.onInputAudioState?.(event.muted, identity);
    this.publish({ type: 'hermes.input_audio.state_updated', muted: event.muted }, identity);
  }

  /** `input_audio_buffer.clear`: captured audio is dropped and an utterance in progress is abandoned. */
  private inputAudioClear(identity: string): void {
    this.options.callbacks.onInputAudioClear?.(identity);
    this.openInputItem = null;
    this.publish({ type: 'input_audio_buffer.cleared' }, identity);
  }

  /** The transport had nothing to commit for `input_audio_buffer.commit` (as the GA API answers it). */
  inputAudioCommitEmpty(identity: string, eventId: string | null): void {
    this.error(
      identity,
      'input_audio_buffer_commit_empty',
      'Error committing input audio buffer: no speech is being captured.',
      null,
      eventId,
    );
  }

  /**
   * `output_audio_buffer.clear` (the OpenAI SDKs send it to interrupt): the reply's speech stops now and
   * `output_audio_buffer.cleared` answers. A response still running is cancelled with it: here speech and
   * text come from one turn, so its audio cannot stop while the turn goes on.
   */
  private outputAudioClear(identity: string, eventId: string | null): void {
    const active = this.active;
    if (active) {
      this.options.callbacks.onResponseCancelled?.(identity, active.id);
      const audible = active.audioPlaying;
      this.finishResponse(active.id, 'cancelled');
      if (!audible) this.publish({ type: 'output_audio_buffer.cleared', response_id: active.id }, null);
      return;
    }
    const playing = this.playing;
    if (playing) {
      this.playing = null;
      this.options.callbacks.onOutputAudioClear?.(identity, playing);
      this.publish({ type: 'output_audio_buffer.cleared', response_id: playing }, null);
      return;
    }
    if (this.lastResponseId) {
      this.publish({ type: 'output_audio_buffer.cleared', response_id: this.lastResponseId }, null);
      return;
    }
    this.error(identity, 'no_output_audio', 'There is no output audio to clear.', null, eventId);
  }

  // ---------------------------------------------------------------- server side (driven by the pipeline)

  private nextInputItemId(): string {
    this.inputCount += 1;
    return `item_${this.options.sessionId}_input_${this.inputCount}`;
  }

  private audioMs(atMs: number): number {
    return Math.max(0, Math.round(atMs - this.createdAtMs));
  }

  /** VAD start: opens an input item. `atMs` is on the protocol's clock (defaults to now). */
  speechStarted(atMs: number = this.options.nowMs()): string {
    const itemId = this.nextInputItemId();
    this.openInputItem = itemId;
    this.publish(
      { type: 'input_audio_buffer.speech_started', audio_start_ms: this.audioMs(atMs), item_id: itemId },
      null,
    );
    return itemId;
  }

  /**
   * VAD endpoint: closes the open input item and returns it (null when none was open). A transport with
   * several speakers (Conference) names the speaker's own item: overlapping speech keeps one item each.
   */
  speechStopped(atMs: number = this.options.nowMs(), item: string | null = this.openInputItem): string | null {
    const itemId = item;
    if (!itemId) return null;
    if (this.openInputItem === itemId) this.openInputItem = null;
    this.publish(
      { type: 'input_audio_buffer.speech_stopped', audio_end_ms: this.audioMs(atMs), item_id: itemId },
      null,
    );
    return itemId;
  }

  /** Capture passed two minutes: the utterance was dropped; tell the speaker. */
  inputAudioOverflow(identity: string, item: string | null = this.openInputItem): void {
    this.speechStopped(this.options.nowMs(), item);
    this.error(identity, 'input_audio_too_long', 'Speech exceeded two minutes. Please pause and try again.');
  }

  /**
   * The endpoint kept an utterance for transcription (server VAD, or `input_audio_buffer.commit`): its item
   * takes its place in the conversation now, before its transcript exists.
   */
  inputCommitted(itemId: string): void {
    const previous = this.place(itemId);
    this.publish({ type: 'input_audio_buffer.committed', item_id: itemId, previous_item_id: previous }, null);
  }

  /** The transcript of a spoken item (ASR finished). */
  userTranscript(itemId: string, transcript: string): void {
    const item: ConversationItem = {
      id: itemId,
      type: 'message',
      status: 'completed',
      role: 'user',
      content: [{ type: 'input_audio', transcript }],
    };
    this.publishItem('conversation.item.added', item, null);
    this.publish(
      {
        type: 'conversation.item.input_audio_transcription.completed',
        item_id: itemId,
        content_index: 0,
        transcript,
        usage: EMPTY_USAGE,
      },
      null,
    );
    this.publishItem('conversation.item.done', item, null);
  }

  /** Opens a response for a turn (voice dispatch, typed input, resume). Throws if one is active: callers check. */
  openResponse(identity: string): string {
    if (this.active) throw new Error('a response is already active');
    this.responseCount += 1;
    const id = `resp_${this.options.sessionId}_${this.responseCount}`;
    this.lastResponseId = id;
    this.active = { id, identity, assistant: null, draft: '', audioPlaying: false, output: [] };
    this.publish({ type: 'response.created', response: { id, status: 'in_progress', output: [] } }, null);
    return id;
  }

  private current(responseId: string): ActiveResponse | null {
    return this.active?.id === responseId ? this.active : null;
  }

  private ensureAssistant(response: ActiveResponse): AssistantMessageItem {
    if (response.assistant) return response.assistant;
    const item: AssistantMessageItem = {
      id: `item_${response.id}_audio`,
      type: 'message',
      status: 'in_progress',
      role: 'assistant',
      content: [{ type: 'output_audio', transcript: '' }],
    };
    response.assistant = item;
    this.publish({ type: 'response.output_item.added', response_id: response.id, output_index: 0, item }, null);
    this.publishItem('conversation.item.added', item, null);
    this.publish(
      {
        type: 'response.content_part.added',
        response_id: response.id,
        item_id: item.id,
        output_index: 0,
        content_index: 0,
        part: { type: 'audio', transcript: '' },
      },
      null,
    );
    return item;
  }

  /**
   * The caption so far (the whole text, not a delta). Extending text sends only the new suffix; a revision
   * that does not extend the draft also carries `transcript` so the client replaces its draft.
   */
  caption(responseId: string, fullText: string): void {
    const response = this.current(responseId);
    if (!response) return;
    const item = this.ensureAssistant(response);
    const ref = { response_id: responseId, item_id: item.id, output_index: 0 as const, content_index: 0 as const };
    if (fullText.startsWith(response.draft)) {
      const delta = fullText.slice(response.draft.length);
      response.draft = fullText;
      if (delta) this.publish({ type: 'response.output_audio_transcript.delta', ...ref, delta }, null);
      return;
    }
    response.draft = fullText;
    this.publish(
      { type: 'response.output_audio_transcript.delta', ...ref, delta: fullText, transcript: fullText },
      null,
    );
  }

  /** The first frame of speech for this response entered the output queue. */
  audioStarted(responseId: string): void {
    const response = this.current(responseId);
    if (!response || response.audioPlaying) return;
    this.ensureAssistant(response);
    response.audioPlaying = true;
    this.playing = responseId;
    this.publish({ type: 'output_audio_buffer.started', response_id: responseId }, null);
  }

  /** Playout drained. Valid also after the response completed (speech outlives the text). */
  audioStopped(responseId: string): void {
    const response = this.current(responseId);
    if (response) response.audioPlaying = false;
    if (this.playing === responseId) this.playing = null;
    this.publish({ type: 'output_audio_buffer.stopped', response_id: responseId }, null);
  }

  /** The reply's final text: closes the assistant item and completes the response. Stale ids are ignored. */
  completeResponse(responseId: string, finalText: string): void {
    const response = this.current(responseId);
    if (!response) return;
    response.output = [this.closeAssistant(response, 'completed', finalText)];
    this.finishResponse(responseId, 'completed');
  }

  /**
   * Closes the response's assistant item: audio done, the transcript (final, or what was captioned before a
   * cancellation or failure), content part and item done. The closed item is returned for `response.done`.
   */
  private closeAssistant(
    response: ActiveResponse,
    status: 'completed' | 'incomplete',
    transcript: string,
  ): AssistantMessageItem {
    const item = this.ensureAssistant(response);
    const ref = { response_id: response.id, item_id: item.id, output_index: 0 as const, content_index: 0 as const };
    this.publish({ type: 'response.output_audio.done', ...ref }, null);
    this.publish({ type: 'response.output_audio_transcript.done', ...ref, transcript }, null);
    this.publish({ type: 'response.content_part.done', ...ref, part: { type: 'audio', transcript } }, null);
    const done: AssistantMessageItem = { ...item, status, content: [{ type: 'output_audio', transcript }] };
    response.assistant = done;
    this.publishItem('conversation.item.done', done, null);
    this.publish({ type: 'response.output_item.done', response_id: response.id, output_index: 0, item: done }, null);
    return done;
  }

  /** The turn failed (agent or provider error). */
  failResponse(responseId: string): void {
    if (this.current(responseId)) this.finishResponse(responseId, 'failed');
  }

  /**
   * The turn ended for a reason the caller should read (a command that was refused or failed, a reply that
   * did not finish in time): the `error`, targeted to the client whose response it is, then `response.done`
   * failed with what was captioned so far. Its speech was stopped with it: audio still playing is reported
   * cleared.
   */
  failResponseWithError(responseId: string, code: string, message: string): void {
    const response = this.current(responseId);
    if (!response) return;
    const audible = response.audioPlaying;
    this.error(response.identity, code, message);
    this.finishResponse(responseId, 'failed');
    if (audible) {
      if (this.playing === responseId) this.playing = null;
      this.publish({ type: 'output_audio_buffer.cleared', response_id: responseId }, null);
    }
  }

  /** The gateway cancelled the turn itself (barge-in, superseding turn, hang-up). */
  cancelResponse(responseId: string): void {
    if (this.current(responseId)) this.finishResponse(responseId, 'cancelled');
  }

  private finishResponse(responseId: string, status: 'completed' | 'failed' | 'cancelled'): void {
    const response = this.current(responseId);
    if (!response) return;
    // A cancelled or failed reply's item is closed with what was captioned so far, then the response ends.
    let output = response.output;
    if (status !== 'completed' && response.assistant?.status === 'in_progress')
      output = [this.closeAssistant(response, 'incomplete', response.draft)];
    this.active = null;
    const body: ResponseObject = { id: responseId, status, output };
    if (status !== 'completed' && this.pendingTool) {
      const pending = this.pendingTool;
      this.pendingTool = null;
      pending.timer.cancel();
      pending.reject(new ToolCallError('cancelled'));
    }
    this.publish({ type: 'response.done', response: body }, null);
    if (status === 'cancelled' && response.audioPlaying) {
      if (this.playing === responseId) this.playing = null;
      this.publish({ type: 'output_audio_buffer.cleared', response_id: responseId }, null);
    }
  }

  /**
   * Asks the client to run one of its session tools. Completes the current response with the function call
   * (OpenAI-compatible), waits for `function_call_output` + `response.create`, and resolves with the output
   * and the new response id. Rejects with `tool_timeout` after 30 s (the client also gets the error).
   */
  requestClientTool(responseId: string, name: string, args: string): Promise<ToolCallResult> {
    const response = this.current(responseId);
    if (!response) return Promise.reject(new ToolCallError('cancelled'));
    if (this.pendingTool) return Promise.reject(new Error('a client function call is already pending'));
    const callId = `call_${this.options.randomHex(16)}`;
    const item: FunctionCallItem = {
      id: `item_${callId}`,
      type: 'function_call',
      status: 'in_progress',
      call_id: callId,
      name,
      arguments: args,
    };
    const done: FunctionCallItem = { ...item, status: 'completed' };
    // What was said before the call is a complete message of this response, ahead of the call in its output.
    const spoken =
      response.assistant?.status === 'in_progress' ? [this.closeAssistant(response, 'completed', response.draft)] : [];
    const outputIndex = spoken.length;
    this.publish(
      { type: 'response.output_item.added', response_id: responseId, output_index: outputIndex, item },
      null,
    );
    this.publishItem('conversation.item.added', item, null);
    this.publish(
      {
        type: 'response.function_call_arguments.done',
        response_id: responseId,
        item_id: item.id,
        output_index: outputIndex,
        call_id: callId,
        name,
        arguments: args,
      },
      null,
    );
    this.publishItem('conversation.item.done', done, null);
    this.publish(
      { type: 'response.output_item.done', response_id: responseId, output_index: outputIndex, item: done },
      null,
    );
    return new Promise<ToolCallResult>((resolve, reject) => {
      const setTimer = this.options.setTimer ?? realTimer;
      const timer = setTimer(() => {
        if (this.pendingTool?.callId !== callId) return;
        this.pendingTool = null;
        this.error(response.identity, 'tool_timeout', `Function call ${name} timed out.`, 'item.output');
        reject(new ToolCallError('tool_timeout'));
      }, this.options.toolTimeoutMs ?? 30_000);
      this.pendingTool = { callId, itemId: item.id, identity: response.identity, output: null, resolve, reject, timer };
      response.output = [...spoken, done];
      // The response that asked for the tool is complete; the client resumes the turn with response.create.
      const pending = this.pendingTool;
      this.active = null;
      this.publish(
        { type: 'response.done', response: { id: responseId, status: 'completed', output: response.output } },
        null,
      );
      this.pendingTool = pending;
    });
  }

  /** Hang-up: a pending tool call is abandoned; nothing more is published. */
  close(): void {
    if (this.pendingTool) {
      this.pendingTool.timer.cancel();
      this.pendingTool.reject(new ToolCallError('cancelled'));
      this.pendingTool = null;
    }
    this.closed = true;
  }
}
