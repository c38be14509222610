import { afterEach, describe, expect, it } from 'vitest';
import type { AgentEvent, AgentTurn } from '../../src/agent/agent-backend.js';
import { ECHO_PREFIX, EchoAgent } from '../../src/agent/echo-agent.js';
import { HermesRunsAgent } from '../../src/agent/hermes-runs-agent.js';
import { OpenAiChatAgent } from '../../src/agent/openai-chat-agent.js';
import { readSse } from '../../src/agent/sse.js';
import { startFakeUpstreams, type FakeUpstreams } from '../../src/testing/fake-upstreams.js';

let upstream: FakeUpstreams | null = null;
afterEach(async () => {
  await upstream?.close();
  upstream = null;
});

function turn(text: string, extra: Partial<AgentTurn> = {}): AgentTurn {
  return {
    sessionKey: 'call_a',
    text,
    instructions: 'Be brief.',
    tools: [],
    toolChoice: 'auto',
    signal: new AbortController().signal,
    callTool: () => Promise.reject(new Error('no tools')),
    ...extra,
  };
}

async function collect(generator: AsyncGenerator<AgentEvent, string, void>) {
  const events: AgentEvent[] = [];
  for (;;) {
    const step = await generator.next();
    if (step.done) return { events, final: step.value };
    events.push(step.value);
  }
}

describe('EchoAgent', () => {
  it('repeats the words behind a clear label, streamed', async () => {
    const { events, final } = await collect(new EchoAgent().respond(turn('turn on the lights')));
    expect(final).toBe(`${ECHO_PREFIX} turn on the lights`);
    expect(events.length).toBeGreaterThan(3);
    expect(events.map((e) => e.text).join('')).toBe(final);
  });
});

describe('OpenAiChatAgent', () => {
  it('streams deltas, sends the instructions and keeps the call history', async () => {
    upstream = await startFakeUpstreams({ reply: (text) => ['Hi ', 'there, ', `${text}!`] });
    const agent = new OpenAiChatAgent({ baseUrl: upstream.openAiBaseUrl, apiKey: 'k', model: 'm' });
    const first = await collect(agent.respond(turn('Ann')));
    expect(first.events).toEqual([
      { type: 'delta', text: 'Hi ' },
      { type: 'delta', text: 'there, ' },
      { type: 'delta', text: 'Ann!' },
    ]);
    expect(first.final).toBe('Hi there, Ann!');
    await collect(agent.respond(turn('Bob')));
    expect(upstream.bodies[1]).toMatchObject({
      model: 'm',
      stream: true,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Ann' },
        { role: 'assistant', content: 'Hi there, Ann!' },
        { role: 'user', content: 'Bob' },
      ],
    });
    agent.endSession('call_a');
    await collect(agent.respond(turn('Cy')));
    expect((upstream.bodies[2] as { messages: unknown[] }).messages).toHaveLength(2);
  });

  it('runs a client function call and continues with its output', async () => {
    upstream = await startFakeUpstreams({
      reply: () => ({ toolCall: { name: 'get_time', arguments: '{"tz":"UTC"}' } }),
    });
    const agent = new OpenAiChatAgent({ baseUrl: upstream.openAiBaseUrl, apiKey: '', model: 'm' });
    const calls: [string, string][] = [];
    const { final } = await collect(
      agent.respond(
        turn('time?', {
          tools: [{ type: 'function', name: 'get_time', parameters: { type: 'object' } }],
          callTool: async (name, args) => {
            calls.push([name, args]);
            return '12:00';
          },
        }),
      ),
    );
    expect(calls).toEqual([['get_time', '{"tz":"UTC"}']]);
    expect(final).toBe('The tool said 12:00.');
    expect(upstream.bodies[0]).toMatchObject({
      tools: [{ type: 'function', function: { name: 'get_time', parameters: { type: 'object' } } }],
      tool_choice: 'auto',
    });
  });

  it('fails with the upstream status, never the key', async () => {
    upstream = await startFakeUpstreams({ apiKey: 'right' });
    const agent = new OpenAiChatAgent({ baseUrl: upstream.openAiBaseUrl, apiKey: 'wrong-secret', model: 'm' });
    await expect(collect(agent.respond(turn('x')))).rejects.toThrow('chat endpoint answered 401');
    await expect(collect(agent.respond(turn('x')))).rejects.not.toThrow(/wrong-secret/);
  });
});

describe('HermesRunsAgent', () => {
  it('starts a run in the call session and streams message.delta until run.completed', async () => {
    upstream = await startFakeUpstreams({ reply: (text) => ['Working on ', text, '.'] });
    const agent = new HermesRunsAgent({ baseUrl: upstream.hermesBaseUrl, apiKey: 'k' });
    const { events, final } = await collect(agent.respond(turn('the report')));
    expect(events).toEqual([
      { type: 'delta', text: 'Working on ' },
      { type: 'delta', text: 'the report' },
      { type: 'delta', text: '.' },
    ]);
    expect(final).toBe('Working on the report.');
    expect(upstream.bodies[0]).toEqual({ input: 'the report', session_id: 'call_a', instructions: 'Be brief.' });
    expect(upstream.requests).toEqual(['POST /v1/runs', 'GET /v1/runs/run_1/events']);
  });

  it('stops the run when the turn is cancelled', async () => {
    upstream = await startFakeUpstreams();
    const agent = new HermesRunsAgent({ baseUrl: upstream.hermesBaseUrl, apiKey: '' });
    const controller = new AbortController();
    const generator = agent.respond(turn('x', { signal: controller.signal }));
    await generator.next();
    controller.abort();
    await expect(collect(generator)).rejects.toThrow();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(upstream.stopped).toEqual(['run_1']);
  });
});

describe('readSse', () => {
  it('parses events split across chunks, multi-line data, comments and CRLF', async () => {
    const text = ': hi\r\nevent: a\r\ndata: 1\r\ndata: 2\r\n\r\ndata: {"x":1}\n\n';
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const char of text) controller.enqueue(new TextEncoder().encode(char));
        controller.close();
      },
    });
    const frames = [];
    for await (const frame of readSse(stream)) frames.push(frame);
    expect(frames).toEqual([
      { event: 'a', data: '1\n2' },
      { event: 'message', data: '{"x":1}' },
    ]);
  });

  it('stops at an abort without yielding frames already buffered', async () => {
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('data: 1\n\ndata: 2\n\ndata: 3'));
      },
    });
    const controller = new AbortController();
    const frames = [];
    for await (const frame of readSse(stream, controller.signal)) {
      frames.push(frame.data);
      controller.abort();
    }
    expect(frames).toEqual(['1']);
  });
});
