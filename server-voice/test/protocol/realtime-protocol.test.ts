import { describe, expect, it, vi } from 'vitest';
import type { ServerEvent } from '@conduit/contracts/voice/events';
import { RealtimeProtocol, ToolCallError, type ProtocolCallbacks } from '../../src/protocol/realtime-protocol.js';

interface Published {
  event: ServerEvent;
  recipient: string | null;
}

function harness(options: { callbacks?: ProtocolCallbacks; tools?: boolean; inputAudioStateOnEvents?: boolean } = {}) {
  const published: Published[] = [];
  let now = 1000;
  const timers: { fn: () => void; ms: number; cancelled: boolean }[] = [];
  const callbacks: ProtocolCallbacks = options.callbacks ?? {
    onTextInput: vi.fn(),
    onResponseRequested: vi.fn(),
    onResponseCancelled: vi.fn(),
    onInputAudioState: vi.fn(),
    onToolChoiceUpdated: vi.fn(),
  };
  const protocol = new RealtimeProtocol({
    sessionId: 'call_test',
    publish: (event, recipient) => published.push({ event, recipient }),
    callbacks,
    instructions: 'Be brief.',
    tools: options.tools
      ? [{ type: 'function', name: 'get_time', parameters: { type: 'object', properties: {} } }]
      : [],
    toolChoice: 'auto',
    nowMs: () => now,
    randomHex: (bytes) => 'ab'.repeat(bytes),
    ...(options.inputAudioStateOnEvents !== undefined
      ? { inputAudioStateOnEvents: options.inputAudioStateOnEvents }
      : {}),
    setTimer: (fn, ms) => {
      const timer = { fn, ms, cancelled: false };
      timers.push(timer);
      return { cancel: () => (timer.cancelled = true) };
    },
  });
  return {
    protocol,
    published,
    callbacks,
    timers,
    advance: (ms: number) => (now += ms),
    types: () => published.map((p) => p.event.type),
    last: () => published.at(-1)?.event,
    send: (event: unknown, identity = 'webrtc-client') =>
      protocol.handleClientMessage(typeof event === 'string' ? event : JSON.stringify(event), identity),
  };
}

const typed = (text: string, extra: Record<string, unknown> = {}) => ({
  type: 'conversation.item.create',
  item: { type: 'message', role: 'user', content: [{ type: 'input_text', text }], ...extra },
});

describe('server events', () => {
  it('stamps ids evt_<session>_<seq>_<8 hex> in publish order and announces the session once per identity', () => {
    const h = harness();
    h.protocol.announce('a');
    h.protocol.announce('a');
    h.protocol.announce('b');
    expect(h.published.map((p) => [p.event.event_id, p.recipient])).toEqual([
      ['evt_call_test_1_abababab', 'a'],
      ['evt_call_test_2_abababab', 'b'],
    ]);
    expect(h.published[0]?.event).toMatchObject({
      type: 'session.created',
      session: {
        id: 'call_test',
        type: 'realtime',
        model: 'hermes',
        instructions: 'Be brief.',
        tool_choice: 'auto',
        audio: { output: { voice: 'hermes' } },
      },
    });
  });

  it('emits a voice turn in the canonical order with the contract ids', () => {
    const h = harness();
    h.advance(250);
    const item = h.protocol.speechStarted();
    h.advance(1000);
    expect(h.protocol.speechStopped()).toBe(item);
    h.protocol.userTranscript(item, 'what time is it');
    const response = h.protocol.openResponse('webrtc-client');
    h.protocol.caption(response, 'It is ');
    h.protocol.audioStarted(response);
    h.protocol.caption(response, 'It is noon.');
    h.protocol.completeResponse(response, 'It is noon.');
    h.protocol.audioStopped(response);
    expect(h.types()).toEqual([
      'input_audio_buffer.speech_started',
      'input_audio_buffer.speech_stopped',
      'conversation.item.added',
      'conversation.item.input_audio_transcription.completed',
      'conversation.item.done',
      'response.created',
      'response.output_item.added',
      'conversation.item.added',
      'response.content_part.added',
      'response.output_audio_transcript.delta',
      'output_audio_buffer.started',
      'response.output_audio_transcript.delta',
      'response.output_audio.done',
      'response.output_audio_transcript.done',
      'response.content_part.done',
      'conversation.item.done',
      'response.output_item.done',
      'response.done',
      'output_audio_buffer.stopped',
    ]);
    const events = h.published.map((p) => p.event);
    expect(item).toBe('item_call_test_input_1');
    expect(response).toBe('resp_call_test_1');
    expect(events[0]).toMatchObject({ audio_start_ms: 250, item_id: item });
    expect(events[1]).toMatchObject({ audio_end_ms: 1250, item_id: item });
    expect(events[3]).toEqual({
      event_id: expect.any(String),
      type: 'conversation.item.input_audio_transcription.completed',
      item_id: item,
      content_index: 0,
      transcript: 'what time is it',
      usage: {
        type: 'tokens',
        total_tokens: 0,
        input_tokens: 0,
        output_tokens: 0,
        input_token_details: { audio_tokens: 0, text_tokens: 0 },
      },
    });
    expect(events[11]).toMatchObject({ delta: 'noon.', item_id: 'item_resp_call_test_1_audio' });
    expect(events[11]).not.toHaveProperty('transcript');
    expect(events[17]).toMatchObject({
      type: 'response.done',
      response: {
        id: response,
        status: 'completed',
        output: [{ type: 'message', role: 'assistant', status: 'completed', content: [{ transcript: 'It is noon.' }] }],
      },
    });
    expect(h.published.every((p) => p.recipient === null)).toBe(true);
  });

  it('sends a caption revision that does not extend the draft with the full transcript snapshot', () => {
    const h = harness();
    const response = h.protocol.openResponse('webrtc-client');
    h.protocol.caption(response, 'Let me check');
    h.protocol.caption(response, 'Let me check');
    h.protocol.caption(response, 'The answer is 4.');
    const deltas = h.published.map((p) => p.event).filter((e) => e.type === 'response.output_audio_transcript.delta');
    expect(deltas).toHaveLength(2);
    expect(deltas[0]).not.toHaveProperty('transcript');
    expect(deltas[1]).toMatchObject({ delta: 'The answer is 4.', transcript: 'The answer is 4.' });
  });

  it('ignores completions of a stale response', () => {
    const h = harness();
    const first = h.protocol.openResponse('webrtc-client');
    h.protocol.cancelResponse(first);
    const count = h.published.length;
    h.protocol.completeResponse(first, 'late');
    h.protocol.caption(first, 'late');
    expect(h.published).toHaveLength(count);
  });

  it('reports capture overflow: speech_stopped for the open item, then a targeted input_audio_too_long', () => {
    const h = harness();
    h.protocol.speechStarted();
    h.protocol.inputAudioOverflow('webrtc-client');
    expect(h.types()).toEqual(['input_audio_buffer.speech_started', 'input_audio_buffer.speech_stopped', 'error']);
    expect(h.published[2]).toEqual({
      recipient: 'webrtc-client',
      event: expect.objectContaining({
        error: {
          type: 'invalid_request_error',
          code: 'input_audio_too_long',
          message: 'Speech exceeded two minutes. Please pause and try again.',
          param: null,
          event_id: null,
        },
      }),
    });
  });

  it('closes itself instead of publishing a server event over 256 KiB', () => {
    const onClosed = vi.fn();
    const h = harness({ callbacks: { onClosed } });
    const response = h.protocol.openResponse('x');
    h.protocol.caption(response, 'y'.repeat(300 * 1024));
    expect(onClosed).toHaveBeenCalledOnce();
    expect(h.protocol.isClosed).toBe(true);
    expect(h.types()).not.toContain('response.output_audio_transcript.delta');
  });
});

/** Client events that must answer exactly one targeted error, and nothing else. */
const ERROR_CASES: [string, unknown, string, string | null][] = [
  ['not JSON', '{"type":', 'invalid_json', null],
  ['NaN', '{"type":"response.create","x":NaN}', 'invalid_json', null],
  ['a lone surrogate', '{"type":"x","y":"\\ud800"}', 'invalid_json', null],
  ['an array', '[1,2]', 'invalid_event', null],
  ['a number', '42', 'invalid_event', null],
  ['over 256 KiB', JSON.stringify({ type: 'session.update', pad: 'x'.repeat(256 * 1024) }), 'event_too_large', null],
  ['no type', { event_id: 'e1' }, 'invalid_event', 'type'],
  ['an unknown type', { type: 'input_audio_buffer.append' }, 'unsupported_client_event', 'type'],
  ['session not an object', { type: 'session.update', session: 3 }, 'invalid_session', 'session'],
  [
    'a session type',
    { type: 'session.update', session: { type: 'transcription' } },
    'unsupported_session_type',
    'session.type',
  ],
  [
    'instructions not a string',
    { type: 'session.update', session: { instructions: 1 } },
    'invalid_session',
    'session.instructions',
  ],
  [
    'instructions over 64 KiB',
    { type: 'session.update', session: { instructions: 'x'.repeat(65 * 1024) } },
    'invalid_session',
    'session.instructions',
  ],
  [
    'tool_choice required without tools',
    { type: 'session.update', session: { tool_choice: 'required' } },
    'unsupported_tool_choice',
    'session.tool_choice',
  ],
  [
    'tool_choice garbage',
    { type: 'session.update', session: { tool_choice: { type: 'function' } } },
    'unsupported_tool_choice',
    'session.tool_choice',
  ],
  ['item not an object', { type: 'conversation.item.create', item: 'hi' }, 'invalid_conversation_item', 'item'],
  [
    'an assistant item',
    { type: 'conversation.item.create', item: { type: 'message', role: 'assistant', content: [] } },
    'unsupported_conversation_item',
    'item.type',
  ],
  [
    'two content parts',
    {
      type: 'conversation.item.create',
      item: {
        type: 'message',
        role: 'user',
        content: [
          { type: 'input_text', text: 'a' },
          { type: 'input_text', text: 'b' },
        ],
      },
    },
    'invalid_conversation_item',
    'item.content',
  ],
  ['blank text', typed('   '), 'invalid_conversation_item', 'item.content'],
  ['text over 64 KiB', typed('x'.repeat(65 * 1024)), 'invalid_conversation_item', 'item.content'],
  [
    'audio content',
    {
      type: 'conversation.item.create',
      item: { type: 'message', role: 'user', content: [{ type: 'input_audio', audio: '' }] },
    },
    'invalid_conversation_item',
    'item.content',
  ],
  [
    'tool output without a pending call',
    { type: 'conversation.item.create', item: { type: 'function_call_output', call_id: 'call_x', output: '1' } },
    'unknown_tool_call',
    'item.call_id',
  ],
  [
    'tool output not a string',
    { type: 'conversation.item.create', item: { type: 'function_call_output', call_id: 'call_x', output: 1 } },
    'invalid_tool_output',
    'item.output',
  ],
  [
    'tool output over 64 KiB',
    {
      type: 'conversation.item.create',
      item: { type: 'function_call_output', call_id: 'c', output: 'x'.repeat(65 * 1024) },
    },
    'invalid_tool_output',
    'item.output',
  ],
  ['cancel with nothing active', { type: 'response.cancel' }, 'no_active_response', null],
  ['mute not a boolean', { type: 'hermes.input_audio.state', muted: 'yes' }, 'invalid_input_audio_state', 'muted'],
];

describe('client event validation', () => {
  it.each(ERROR_CASES)('%s → %s', (_name, event, code, param) => {
    const h = harness();
    h.send(event, 'caller');
    expect(h.published).toHaveLength(1);
    expect(h.published[0]?.recipient).toBe('caller');
    expect(h.published[0]?.event).toMatchObject({
      type: 'error',
      error: { type: 'invalid_request_error', code, param },
    });
    expect(h.protocol.activeResponseId).toBeNull();
  });

  it('echoes a string event_id of at most 128 bytes in errors, and no other', () => {
    const h = harness();
    h.send({ type: 'nope', event_id: 'client-1' });
    h.send({ type: 'nope', event_id: 'x'.repeat(129) });
    h.send({ type: 'nope', event_id: 7 });
    expect(h.published.map((p) => (p.event.type === 'error' ? p.event.error.event_id : 'none'))).toEqual([
      'client-1',
      null,
      null,
    ]);
  });

  it('caps error messages at 500 characters', () => {
    const h = harness();
    h.send({ type: 'x'.repeat(2000) });
    const event = h.last();
    expect(event?.type === 'error' && event.error.message.length).toBeLessThanOrEqual(500);
  });

  it('refuses hermes.input_audio.state on a transport that carries it elsewhere (LiveKit events topic)', () => {
    const h = harness({ inputAudioStateOnEvents: false });
    h.send({ type: 'hermes.input_audio.state', muted: true });
    expect(h.last()).toMatchObject({
      error: { code: 'unsupported_client_event', message: 'Input audio state is not supported by this transport' },
    });
  });
});

describe('client events that succeed', () => {
  it('session.update changes instructions and tool_choice and answers session.updated to the sender', () => {
    const h = harness({ tools: true });
    h.send(
      { type: 'session.update', session: { type: 'realtime', instructions: 'Speak French.', tool_choice: 'none' } },
      'caller',
    );
    expect(h.published).toHaveLength(1);
    expect(h.published[0]).toMatchObject({
      recipient: 'caller',
      event: { type: 'session.updated', session: { instructions: 'Speak French.', tool_choice: 'none' } },
    });
    expect(h.callbacks.onToolChoiceUpdated).toHaveBeenCalledWith('none');
    h.send({ type: 'session.update', session: { tool_choice: { type: 'function', name: 'get_time' } } });
    expect(h.protocol.currentToolChoice).toEqual({ type: 'function', name: 'get_time' });
  });

  it('typed input: echoed as added/done to the sender, queued until response.create, one at a time', () => {
    const h = harness();
    h.send(typed('  Hello there  '), 'caller');
    expect(h.types()).toEqual(['conversation.item.added', 'conversation.item.done']);
    expect(h.published[0]).toMatchObject({
      recipient: 'caller',
      event: {
        item: {
          id: 'item_call_test_input_1',
          type: 'message',
          status: 'completed',
          role: 'user',
          content: [{ type: 'input_text', text: 'Hello there' }],
        },
      },
    });
    h.send(typed('second'), 'caller');
    expect(h.last()).toMatchObject({ error: { code: 'conversation_item_pending' } });
    h.send({ type: 'response.create' }, 'caller');
    expect(h.last()).toMatchObject({
      type: 'response.created',
      response: { id: 'resp_call_test_1', status: 'in_progress', output: [] },
    });
    expect(h.callbacks.onTextInput).toHaveBeenCalledWith('Hello there', 'caller', 'resp_call_test_1');
    h.send({ type: 'response.create' }, 'caller');
    expect(h.last()).toMatchObject({ error: { code: 'conversation_already_has_active_response' } });
  });

  it('response.create with nothing pending asks the pipeline for a response', () => {
    const h = harness();
    h.send({ type: 'response.create' });
    expect(h.callbacks.onResponseRequested).toHaveBeenCalledWith('webrtc-client', 'resp_call_test_1');
  });

  it('answers response_create_unsupported / text_input_unavailable without the callbacks', () => {
    const h = harness({ callbacks: {} });
    h.send({ type: 'response.create' });
    expect(h.last()).toMatchObject({ error: { code: 'response_create_unsupported' } });
    h.send(typed('hi'));
    h.send({ type: 'response.create' });
    expect(h.last()).toMatchObject({ error: { code: 'text_input_unavailable' } });
  });

  it('response.cancel stops the pipeline, then reports cancelled and cleared (audio was playing)', () => {
    const h = harness();
    h.send({ type: 'response.create' });
    const response = h.protocol.activeResponseId ?? '';
    h.protocol.audioStarted(response);
    h.send({ type: 'response.cancel' });
    expect(h.callbacks.onResponseCancelled).toHaveBeenCalledWith('webrtc-client', response);
    expect(h.types().slice(-2)).toEqual(['response.done', 'output_audio_buffer.cleared']);
    expect(h.published.at(-2)?.event).toMatchObject({ response: { id: response, status: 'cancelled' } });
    expect(h.protocol.activeResponseId).toBeNull();
  });

  it('response.cancel before any audio reports cancelled without cleared', () => {
    const h = harness();
    h.send({ type: 'response.create' });
    h.send({ type: 'response.cancel' });
    expect(h.last()).toMatchObject({ type: 'response.done', response: { status: 'cancelled' } });
  });

  it('hermes.input_audio.state calls back and acknowledges to the sender', () => {
    const h = harness();
    h.send({ type: 'hermes.input_audio.state', muted: true }, 'caller');
    expect(h.callbacks.onInputAudioState).toHaveBeenCalledWith(true, 'caller');
    expect(h.published[0]).toMatchObject({
      recipient: 'caller',
      event: { type: 'hermes.input_audio.state_updated', muted: true },
    });
  });
});

describe('client function tools', () => {
  it('function_call → function_call_output → response.create resumes the turn in a new response', async () => {
    const h = harness({ tools: true });
    const response = h.protocol.openResponse('webrtc-client');
    const result = h.protocol.requestClientTool(response, 'get_time', '{"zone":"UTC"}');
    expect(h.types().slice(1)).toEqual([
      'response.output_item.added',
      'conversation.item.added',
      'response.function_call_arguments.done',
      'conversation.item.done',
      'response.output_item.done',
      'response.done',
    ]);
    const args = h.published.find((p) => p.event.type === 'response.function_call_arguments.done')?.event;
    expect(args).toMatchObject({
      response_id: response,
      item_id: 'item_call_abababababababababababababababab',
      output_index: 0,
      call_id: 'call_abababababababababababababababab',
      name: 'get_time',
      arguments: '{"zone":"UTC"}',
    });
    expect(h.last()).toMatchObject({
      response: { status: 'completed', output: [{ type: 'function_call', status: 'completed', name: 'get_time' }] },
    });
    h.send({ type: 'response.create' });
    expect(h.last()).toMatchObject({ error: { code: 'tool_outputs_pending' } });
    h.send({
      type: 'conversation.item.create',
      item: { type: 'function_call_output', call_id: 'call_wrong', output: '1' },
    });
    expect(h.last()).toMatchObject({ error: { code: 'unknown_tool_call' } });
    const output = {
      type: 'conversation.item.create',
      item: { type: 'function_call_output', call_id: 'call_abababababababababababababababab', output: '12:00' },
    };
    h.send(output);
    expect(h.published.at(-2)?.event).toMatchObject({
      type: 'conversation.item.added',
      item: { id: 'item_call_abababababababababababababababab_output', type: 'function_call_output', output: '12:00' },
    });
    h.send(output);
    expect(h.last()).toMatchObject({ error: { code: 'duplicate_tool_output' } });
    h.send({ type: 'response.create' });
    expect(h.last()).toMatchObject({ type: 'response.created', response: { id: 'resp_call_test_2' } });
    await expect(result).resolves.toEqual({ output: '12:00', responseId: 'resp_call_test_2' });
    expect(h.timers[0]?.cancelled).toBe(true);
  });

  it('times out after 30 s with tool_timeout to the client', async () => {
    const h = harness({ tools: true });
    const response = h.protocol.openResponse('webrtc-client');
    const result = h.protocol.requestClientTool(response, 'get_time', '{}');
    expect(h.timers[0]?.ms).toBe(30_000);
    h.timers[0]?.fn();
    await expect(result).rejects.toEqual(new ToolCallError('tool_timeout'));
    expect(h.last()).toMatchObject({ error: { code: 'tool_timeout', param: 'item.output' } });
  });

  it('a hang-up abandons the pending call', async () => {
    const h = harness({ tools: true });
    const result = h.protocol.requestClientTool(h.protocol.openResponse('x'), 'get_time', '{}');
    h.protocol.close();
    await expect(result).rejects.toBeInstanceOf(ToolCallError);
  });
});
