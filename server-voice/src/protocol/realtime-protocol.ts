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
  type SessionSnapshot,
  type SessionTool,
  type ToolChoice,
} from '@conduit/contracts/voice/events';
import { parseToolChoice } from '../session/session-tools.js';
import { decodeClientJson } from './client-json.js';

/** Where an event goes: one identity, or everyone on the transport (`null`). */
export type Recipient = string | null;
export type Publish = (event: ServerEvent, recipient: Recipient) => void;

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
  /** How long a client function call may wait for its output (30 s). */
  toolTimeoutMs?: number;
  setTimer?: (fn: () => void, ms: number) => { cancel: () => void };
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
  private readonly tools: SessionTool[];
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

  snapshot(): SessionSnapshot {
    return {
      id: this.options.sessionId,
      type: 'realtime',
      model: 'hermes',
      instructions: this.instructions,
      tool_choice: this.toolChoice,
      audio: { output: { voice: 'hermes' } },
    };
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
        this.error(
          identity,
          'unsupported_client_event',
          `Unsupported client event: ${type.slice(0, 128)}`,
          'type',
          eventId,
        );
    }
  }

  private sessionUpdate(event: Record<string, unknown>, identity: string, eventId: string | null): void {
    const session = event.session;
    if (!isRecord(session)) {
      this.error(identity, 'invalid_session', 'session must be an object.', 'session', eventId);
      return;
    }
    const unsupported = Object.keys(session).find((key) => !['type', 'instructions', 'tool_choice'].includes(key));
    if (unsupported !== undefined) {
      this.error(
        identity,
        'unsupported_session_field',
        `Unsupported session field: ${unsupported.slice(0, 128)}`,
        `session.${unsupported.slice(0, 128)}`,
        eventId,
      );
      return;
    }
    if ('type' in session && session.type !== 'realtime') {
      this.error(
        identity,
        'unsupported_session_type',
        'Only realtime sessions are supported.',
        'session.type',
        eventId,
      );
      return;
    }
    let instructions = this.instructions;
    if ('instructions' in session) {
      if (typeof session.instructions !== 'string' || utf8Bytes(session.instructions) > MAX_TEXT_BYTES) {
        this.error(
          identity,
          'invalid_session',
          'instructions must be a string of at most 64 KiB.',
          'session.instructions',
          eventId,
        );
        return;
      }
      instructions = session.instructions;
    }
    let toolChoice = this.toolChoice;
    if ('tool_choice' in session) {
      const parsed = parseToolChoice(session.tool_choice, this.tools);
      if (!parsed.ok) {
        this.error(identity, 'unsupported_tool_choice', parsed.error, 'session.tool_choice', eventId);
        return;
      }
      toolChoice = parsed.value;
    }
    this.instructions = instructions;
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
    this.publish({ type: 'conversation.item.added', previous_item_id: null, item: added }, identity);
    this.publish({ type: 'conversation.item.done', previous_item_id: null, item: added }, identity);
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
    this.publish({ type: 'conversation.item.added', previous_item_id: null, item: added }, identity);
    this.publish({ type: 'conversation.item.done', previous_item_id: null, item: added }, identity);
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

  /** VAD endpoint: closes the open input item and returns it (null when none was open). */
  speechStopped(atMs: number = this.options.nowMs()): string | null {
    const itemId = this.openInputItem;
    if (!itemId) return null;
    this.openInputItem = null;
    this.publish(
      { type: 'input_audio_buffer.speech_stopped', audio_end_ms: this.audioMs(atMs), item_id: itemId },
      null,
    );
    return itemId;
  }

  /** Capture passed two minutes: the utterance was dropped; tell the speaker. */
  inputAudioOverflow(identity: string): void {
    this.speechStopped();
    this.error(identity, 'input_audio_too_long', 'Speech exceeded two minutes. Please pause and try again.');
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
    this.publish({ type: 'conversation.item.added', previous_item_id: null, item }, null);
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
    this.publish({ type: 'conversation.item.done', previous_item_id: null, item }, null);
  }

  /** Opens a response for a turn (voice dispatch, typed input, resume). Throws if one is active: callers check. */
  openResponse(identity: string): string {
    if (this.active) throw new Error('a response is already active');
    this.responseCount += 1;
    const id = `resp_${this.options.sessionId}_${this.responseCount}`;
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
    this.publish({ type: 'conversation.item.added', previous_item_id: null, item }, null);
    this.publish(
      {
        type: 'response.content_part.added',
        response_id: response.id,
        item_id: item.id,
        output_index: 0,
        content_index: 0,
        part: { type: 'output_audio', transcript: '' },
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
    this.publish({ type: 'output_audio_buffer.started', response_id: responseId }, null);
  }

  /** Playout drained. Valid also after the response completed (speech outlives the text). */
  audioStopped(responseId: string): void {
    const response = this.current(responseId);
    if (response) response.audioPlaying = false;
    this.publish({ type: 'output_audio_buffer.stopped', response_id: responseId }, null);
  }

  /** The reply's final text: closes the assistant item and completes the response. Stale ids are ignored. */
  completeResponse(responseId: string, finalText: string): void {
    const response = this.current(responseId);
    if (!response) return;
    const item = this.ensureAssistant(response);
    const ref = { response_id: responseId, item_id: item.id, output_index: 0 as const, content_index: 0 as const };
    this.publish({ type: 'response.output_audio_transcript.done', ...ref, transcript: finalText }, null);
    this.publish(
      { type: 'response.content_part.done', ...ref, part: { type: 'output_audio', transcript: finalText } },
      null,
    );
    const done: AssistantMessageItem = {
      ...item,
      status: 'completed',
      content: [{ type: 'output_audio', transcript: finalText }],
    };
    response.assistant = done;
    this.publish({ type: 'conversation.item.done', previous_item_id: null, item: done }, null);
    this.publish({ type: 'response.output_item.done', response_id: responseId, output_index: 0, item: done }, null);
    response.output = [done];
    this.finishResponse(responseId, 'completed');
  }

  /** The turn failed (agent or provider error). */
  failResponse(responseId: string): void {
    if (this.current(responseId)) this.finishResponse(responseId, 'failed');
  }

  /** The gateway cancelled the turn itself (barge-in, superseding turn, hang-up). */
  cancelResponse(responseId: string): void {
    if (this.current(responseId)) this.finishResponse(responseId, 'cancelled');
  }

  private finishResponse(responseId: string, status: 'completed' | 'failed' | 'cancelled'): void {
    const response = this.current(responseId);
    if (!response) return;
    this.active = null;
    let output = response.output;
    if (status !== 'completed' && response.assistant) {
      output = [{ ...response.assistant, status: 'incomplete' }];
    }
    const body: ResponseObject = { id: responseId, status, output };
    if (status !== 'completed' && this.pendingTool) {
      const pending = this.pendingTool;
      this.pendingTool = null;
      pending.timer.cancel();
      pending.reject(new ToolCallError('cancelled'));
    }
    this.publish({ type: 'response.done', response: body }, null);
    if (status === 'cancelled' && response.audioPlaying) {
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
    this.publish({ type: 'response.output_item.added', response_id: responseId, output_index: 0, item }, null);
    this.publish({ type: 'conversation.item.added', previous_item_id: null, item }, null);
    this.publish(
      {
        type: 'response.function_call_arguments.done',
        response_id: responseId,
        item_id: item.id,
        output_index: 0,
        call_id: callId,
        name,
        arguments: args,
      },
      null,
    );
    this.publish({ type: 'conversation.item.done', previous_item_id: null, item: done }, null);
    this.publish({ type: 'response.output_item.done', response_id: responseId, output_index: 0, item: done }, null);
    return new Promise<ToolCallResult>((resolve, reject) => {
      const setTimer =
        this.options.setTimer ??
        ((fn: () => void, ms: number) => {
          const handle = setTimeout(fn, ms);
          return { cancel: () => clearTimeout(handle) };
        });
      const timer = setTimer(() => {
        if (this.pendingTool?.callId !== callId) return;
        this.pendingTool = null;
        this.error(response.identity, 'tool_timeout', `Function call ${name} timed out.`, 'item.output');
        reject(new ToolCallError('tool_timeout'));
      }, this.options.toolTimeoutMs ?? 30_000);
      this.pendingTool = { callId, itemId: item.id, identity: response.identity, output: null, resolve, reject, timer };
      response.output = [done];
      // The response that asked for the tool is complete; the client resumes the turn with response.create.
      const pending = this.pendingTool;
      this.active = null;
      this.publish({ type: 'response.done', response: { id: responseId, status: 'completed', output: [done] } }, null);
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
