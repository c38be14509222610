import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { RealtimeServerEvent } from 'openai/resources/realtime/realtime';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import type { ServerEvent } from '@conduit/contracts/voice/events';
import { RealtimeProtocol, type ProtocolCallbacks } from '../../src/protocol/realtime-protocol.js';

/**
 * The GA Realtime schemas the official SDKs use, as references for the gateway's events:
 * - at compile time, the `openai` package's own types (`RealtimeServerEvent`): every event the gateway sends,
 *   but its `hermes.*` extension, must be assignable to them (`tsc` fails otherwise);
 * - at run time, the Zod schemas the OpenAI Agents SDK (`@openai/agents-realtime`) parses every server event
 *   with: an event that fails them reaches the SDK only as an unknown, "generic" event and is ignored.
 */
type GaServerEvent = Exclude<ServerEvent, { type: `hermes.${string}` }>;
const asGaEvent = (event: GaServerEvent): RealtimeServerEvent => event;

interface SafeParser {
  safeParse(value: unknown): { success: boolean; error?: unknown };
}
let sdkServerEventSchema: SafeParser;

beforeAll(async () => {
  // Not in the package's exports map: loaded from its file, next to the entry point.
  const entry = createRequire(import.meta.url).resolve('@openai/agents-realtime');
  const events = (await import(pathToFileURL(path.join(path.dirname(entry), 'openaiRealtimeEvents.mjs')).href)) as {
    realtimeServerEventSchema: SafeParser;
  };
  sdkServerEventSchema = events.realtimeServerEventSchema;
});

function harness(callbacks: ProtocolCallbacks = {}) {
  const published: { event: ServerEvent; recipient: string | null }[] = [];
  const protocol = new RealtimeProtocol({
    sessionId: 'call_ga',
    publish: (event, recipient) => published.push({ event, recipient }),
    callbacks: {
      onTextInput: vi.fn(),
      onResponseRequested: vi.fn(),
      onResponseCancelled: vi.fn(),
      onInputAudioState: vi.fn(),
      ...callbacks,
    },
    instructions: '',
    tools: [],
    toolChoice: 'auto',
    nowMs: () => 1000,
    randomHex: (bytes) => '0'.repeat(bytes * 2),
  });
  const send = (event: unknown) => protocol.handleClientMessage(JSON.stringify(event), 'webrtc-client');
  const events = () => published.map((p) => p.event);
  const ofType = <T extends ServerEvent['type']>(type: T) =>
    events().filter((e): e is ServerEvent & { type: T } => e.type === type);
  return { protocol, published, send, events, ofType };
}

/** The session the OpenAI Agents SDK sends on connect (its `_getMergedSessionConfig`), plus what others add. */
const SDK_SESSION = {
  type: 'realtime',
  instructions: 'You are a terse assistant.',
  model: 'gpt-realtime',
  output_modalities: ['audio'],
  audio: {
    input: {
      format: { type: 'audio/pcm', rate: 24000 },
      noise_reduction: null,
      transcription: { model: 'gpt-4o-mini-transcribe' },
      turn_detection: { type: 'semantic_vad' },
    },
    output: { format: { type: 'audio/pcm', rate: 24000 }, voice: 'marin', speed: 1 },
  },
  tool_choice: 'auto',
  tools: [
    {
      type: 'function',
      name: 'get_weather',
      description: 'Weather for a city.',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      strict: true,
    },
    { type: 'mcp', server_label: 'docs', server_url: 'https://mcp.example/sse' },
  ],
  tracing: { workflow_name: 'support' },
  truncation: 'auto',
  max_output_tokens: 'inf',
  prompt: { id: 'pmpt_1' },
  x_vendor_extension: { anything: [1, 2, 3] },
};

describe('session.update with a full GA session (item 12)', () => {
  it('is accepted: what maps is applied, the rest kept, and session.updated carries the effective session', () => {
    const h = harness();
    h.send({ type: 'session.update', session: SDK_SESSION });
    expect(h.events().map((e) => e.type)).toEqual(['session.updated']);
    const updated = h.ofType('session.updated')[0];
    expect(updated?.session).toMatchObject({
      id: 'call_ga',
      type: 'realtime',
      model: 'hermes',
      output_modalities: ['audio'],
      instructions: 'You are a terse assistant.',
      tool_choice: 'auto',
      tools: [
        {
          type: 'function',
          name: 'get_weather',
          description: 'Weather for a city.',
          parameters: SDK_SESSION.tools[0]?.parameters,
        },
      ],
      audio: {
        input: { format: { type: 'audio/pcm', rate: 24000 }, turn_detection: { type: 'server_vad' } },
        output: { format: { type: 'audio/pcm', rate: 24000 }, voice: 'hermes' },
      },
      tracing: { workflow_name: 'support' },
      truncation: 'auto',
      max_output_tokens: 'inf',
      prompt: { id: 'pmpt_1' },
      x_vendor_extension: { anything: [1, 2, 3] },
    });
    expect(h.protocol.currentInstructions).toBe('You are a terse assistant.');
    expect(h.protocol.sessionTools.map((tool) => tool.name)).toEqual(['get_weather']);
    expect(sdkServerEventSchema.safeParse(updated).success).toBe(true);
  });

  it('keeps earlier kept fields and answers every update, also one of unknown fields only', () => {
    const h = harness();
    h.send({ type: 'session.update', session: { type: 'realtime', tracing: 'auto' } });
    h.send({ type: 'session.update', session: { brand_new_field: true } });
    const [first, second] = h.ofType('session.updated');
    expect(first?.session).toMatchObject({ tracing: 'auto' });
    expect(second?.session).toMatchObject({ tracing: 'auto', brand_new_field: true });
  });

  it('still refuses a bad value of a field it applies, and changes nothing then', () => {
    const h = harness();
    h.send({ type: 'session.update', session: { ...SDK_SESSION, instructions: 42 } });
    h.send({ type: 'session.update', session: { type: 'realtime', tools: [{ type: 'function', name: 'a.b' }] } });
    h.send({ type: 'session.update', session: { type: 'realtime', tool_choice: { type: 'function', name: 'nope' } } });
    expect(h.events().map((e) => (e.type === 'error' ? [e.error.code, e.error.param] : e.type))).toEqual([
      ['invalid_session', 'session.instructions'],
      ['invalid_session', 'session.tools'],
      ['unsupported_tool_choice', 'session.tool_choice'],
    ]);
    expect(h.protocol.currentInstructions).toBe('');
    expect(h.protocol.sessionTools).toEqual([]);
  });

  it('bounds what it keeps (64 KiB of JSON), so session.updated always fits in one event', () => {
    const h = harness();
    h.send({ type: 'session.update', session: { type: 'realtime', tracing: 'auto' } });
    h.send({ type: 'session.update', session: { type: 'realtime', padding: 'x'.repeat(70 * 1024) } });
    expect(h.events().map((e) => (e.type === 'error' ? e.error.code : e.type))).toEqual([
      'session.updated',
      'invalid_session',
    ]);
    expect(h.protocol.isClosed).toBe(false);
    expect(h.protocol.snapshot()).not.toHaveProperty('padding');
  });
});

describe('server events against the GA schemas (item 13)', () => {
  /** Plays a call with every kind of event the protocol sends and returns what it published. */
  function wholeCall() {
    const onInputAudioCommit = vi.fn();
    const onOutputAudioClear = vi.fn();
    const h = harness({ onInputAudioCommit, onInputAudioClear: vi.fn(), onOutputAudioClear });
    h.protocol.announce('webrtc-client');
    h.send({ type: 'session.update', session: SDK_SESSION });
    // A spoken turn, its reply played out.
    const spoken = h.protocol.speechStarted();
    h.protocol.speechStopped();
    h.protocol.inputCommitted(spoken);
    h.protocol.userTranscript(spoken, 'what is the weather');
    const first = h.protocol.openResponse('webrtc-client');
    h.protocol.caption(first, 'Sunny.');
    h.protocol.audioStarted(first);
    h.protocol.completeResponse(first, 'Sunny.');
    h.protocol.audioStopped(first);
    // A typed turn cancelled while speaking, with a partial caption.
    h.send({
      type: 'conversation.item.create',
      item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Tell me more' }] },
    });
    h.send({ type: 'response.create' });
    const second = h.protocol.activeResponseId as string;
    h.protocol.caption(second, 'Tomorrow it will');
    h.protocol.audioStarted(second);
    h.send({ type: 'response.cancel' });
    // A client function call and its output.
    h.send({ type: 'response.create' });
    const third = h.protocol.activeResponseId as string;
    h.protocol.caption(third, 'Checking. ');
    void h.protocol.requestClientTool(third, 'get_weather', '{"city":"Oslo"}').catch(() => undefined);
    const call = h.ofType('response.function_call_arguments.done')[0];
    h.send({
      type: 'conversation.item.create',
      item: { type: 'function_call_output', call_id: call?.call_id, output: '{"sky":"clear"}' },
    });
    h.send({ type: 'response.create' });
    const fourth = h.protocol.activeResponseId as string;
    h.protocol.audioStarted(fourth);
    h.protocol.completeResponse(fourth, 'Clear skies in Oslo.');
    // Still playing: the client interrupts it (as the SDK's interrupt() does).
    h.send({ type: 'output_audio_buffer.clear' });
    h.send({ type: 'conversation.item.retrieve', item_id: spoken });
    h.send({ type: 'conversation.item.retrieve', item_id: 'item_missing' });
    h.send({ type: 'input_audio_buffer.commit' });
    h.send({ type: 'input_audio_buffer.clear' });
    h.send({ type: 'input_audio_buffer.append', audio: 'AAAA' });
    h.protocol.inputAudioCommitEmpty('webrtc-client', null);
    return { h, spoken, first, second, third, fourth, onInputAudioCommit, onOutputAudioClear };
  }

  it('every event is one the Agents SDK parses as a known GA event (none falls back to "generic")', () => {
    const { h } = wholeCall();
    const failing = h
      .events()
      .filter((event) => !sdkServerEventSchema.safeParse(event).success)
      .map((event) => event.type);
    expect(failing).toEqual([]);
    // The compile-time half of this check: each event also has the type of the `openai` package's events.
    const ga = h.events().filter((e): e is GaServerEvent => !e.type.startsWith('hermes.'));
    expect(ga.map(asGaEvent)).toHaveLength(ga.length);
  });

  it('content parts are GA `audio` parts, and response.output_audio.done precedes the transcript', () => {
    const { h, first } = wholeCall();
    for (const part of [...h.ofType('response.content_part.added'), ...h.ofType('response.content_part.done')])
      expect(part.part.type).toBe('audio');
    const ofFirst = h
      .events()
      .filter((e) => 'response_id' in e && e.response_id === first)
      .map((e) => e.type);
    expect(ofFirst.indexOf('response.output_audio.done')).toBeGreaterThan(-1);
    expect(ofFirst.indexOf('response.output_audio.done')).toBeLessThan(
      ofFirst.indexOf('response.output_audio_transcript.done'),
    );
  });

  it('chains previous_item_id through the conversation (committed, added and done agree)', () => {
    const { h, spoken } = wholeCall();
    const added = h.ofType('conversation.item.added');
    const order = added.map((e) => e.item.id);
    expect(added.map((e) => e.previous_item_id)).toEqual([null, ...order.slice(0, -1)]);
    expect(order[0]).toBe(spoken);
    expect(h.ofType('input_audio_buffer.committed')[0]).toMatchObject({ item_id: spoken, previous_item_id: null });
    for (const done of h.ofType('conversation.item.done')) {
      const twin = added.find((e) => e.item.id === done.item.id);
      expect(done.previous_item_id).toBe(twin?.previous_item_id);
    }
  });

  it('a cancelled reply ends with conversation.item.done for its item: incomplete, with the partial transcript', () => {
    const { h, second } = wholeCall();
    const item = `item_${second}_audio`;
    const done = h.ofType('conversation.item.done').find((e) => e.item.id === item);
    expect(done?.item).toMatchObject({
      status: 'incomplete',
      content: [{ type: 'output_audio', transcript: 'Tomorrow it will' }],
    });
    const response = h.ofType('response.done').find((e) => e.response.id === second);
    expect(response?.response).toMatchObject({ status: 'cancelled', output: [{ id: item, status: 'incomplete' }] });
    // The item is closed before the response that held it ends.
    expect(h.events().indexOf(done as ServerEvent)).toBeLessThan(h.events().indexOf(response as ServerEvent));
  });

  it('answers conversation.item.retrieve, output_audio_buffer.clear and input_audio_buffer.* as the GA API does', () => {
    const { h, spoken, fourth, onInputAudioCommit, onOutputAudioClear } = wholeCall();
    expect(h.ofType('conversation.item.retrieved')[0]?.item).toMatchObject({
      id: spoken,
      role: 'user',
      content: [{ type: 'input_audio', transcript: 'what is the weather' }],
    });
    expect(onOutputAudioClear).toHaveBeenCalledWith('webrtc-client', fourth);
    expect(h.ofType('output_audio_buffer.cleared').map((e) => e.response_id)).toContain(fourth);
    expect(h.ofType('output_audio_buffer.stopped').map((e) => e.response_id)).not.toContain(fourth);
    expect(onInputAudioCommit).toHaveBeenCalledOnce();
    expect(h.ofType('input_audio_buffer.cleared')).toHaveLength(1);
    expect(h.ofType('error').map((e) => e.error.code)).toEqual([
      'item_not_found',
      'unsupported_client_event',
      'input_audio_buffer_commit_empty',
    ]);
  });

  it('output_audio_buffer.clear during a response cancels it and is answered with cleared', () => {
    const h = harness();
    const response = h.protocol.openResponse('webrtc-client');
    h.send({ type: 'output_audio_buffer.clear' });
    expect(h.events().map((e) => e.type)).toEqual(['response.created', 'response.done', 'output_audio_buffer.cleared']);
    expect(h.ofType('output_audio_buffer.cleared')[0]?.response_id).toBe(response);
  });
});
