import { afterEach, describe, expect, it, vi } from 'vitest';
import { AgentError, type AgentEvent, type AgentTurn } from '../../src/agent/agent-backend.js';
import { ECHO_PREFIX, EchoAgent } from '../../src/agent/echo-agent.js';
import { HermesRunsAgent } from '../../src/agent/hermes-runs-agent.js';
import { OpenAiChatAgent } from '../../src/agent/openai-chat-agent.js';
import { typedCommand } from '../../src/agent/slash-command.js';
import { startFakeHermesDashboard, type FakeHermesDashboard } from '../../src/testing/fake-hermes-dashboard.js';
import { startFakeUpstreams, type FakeUpstreams } from '../../src/testing/fake-upstreams.js';

let upstream: FakeUpstreams | null = null;
let dashboard: FakeHermesDashboard | null = null;
afterEach(async () => {
  await upstream?.close();
  await dashboard?.close();
  upstream = null;
  dashboard = null;
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

  it('a reply revised at a tool boundary ends in a snapshot of the output; tool events are not spoken', async () => {
    const hermes = stubHermes(
      sse({ event: 'message.delta', delta: 'Let me check. ' }) +
        sse({ event: 'tool.started', tool: 'clock', preview: 'now' }) +
        sse({ event: 'tool.completed', tool: 'clock', duration: 0.1, error: false }) +
        sse({ event: 'message.delta', delta: 'It is noon.' }) +
        sse({ event: 'run.completed', output: 'It is noon.' }),
    );
    const agent = new HermesRunsAgent({ baseUrl: 'http://hermes.test/p/work', apiKey: 'k', fetch: hermes.fetch });
    const { events, final } = await collect(agent.respond(turn('time?')));
    expect(events).toEqual([
      { type: 'delta', text: 'Let me check. ' },
      { type: 'delta', text: 'It is noon.' },
      { type: 'snapshot', text: 'It is noon.' },
    ]);
    expect(final).toBe('It is noon.');
    expect(hermes.requests).toEqual([
      ['POST', 'http://hermes.test/p/work/v1/runs', 'Bearer k', 'call_a'],
      ['GET', 'http://hermes.test/p/work/v1/runs/run_9/events', 'Bearer k', undefined],
    ]);
  });

  it('a stream that ends inside its run.completed (no blank line after it) fails the turn', async () => {
    // The SSE standard dispatches an event only at the blank line after it: a stream cut there may
    // have cut the event too, so the reply is not taken as complete.
    const hermes = stubHermes(
      sse({ event: 'message.delta', delta: 'Half' }) +
        `data: ${JSON.stringify({ event: 'run.completed', output: 'Half' })}\n`,
    );
    const agent = new HermesRunsAgent({ baseUrl: 'http://hermes.test', apiKey: '', fetch: hermes.fetch });
    const generator = agent.respond(turn('x'));
    expect(await generator.next()).toEqual({ done: false, value: { type: 'delta', text: 'Half' } });
    await expect(collect(generator)).rejects.toThrow('Hermes event stream ended before the run completed');
    expect(hermes.requests.every(([, , authorization]) => authorization === undefined)).toBe(true);
  });

  it('maps a refused run, a run failure and a redirect (never followed) to agent errors', async () => {
    const refused = new HermesRunsAgent({
      baseUrl: 'http://hermes.test',
      apiKey: 'k',
      fetch: async () => new Response('{"error":"too_many_runs"}', { status: 429 }),
    });
    await expect(collect(refused.respond(turn('x')))).rejects.toMatchObject({
      message: 'Hermes refused the run (429)',
      status: 429,
    });
    const redirects: RequestInit['redirect'][] = [];
    const redirected = new HermesRunsAgent({
      baseUrl: 'http://hermes.test',
      apiKey: 'k',
      fetch: async (_url, init) => {
        redirects.push(init?.redirect);
        return new Response(null, { status: 307, headers: { location: 'http://elsewhere.test/' } });
      },
    });
    await expect(collect(redirected.respond(turn('x')))).rejects.toThrow('Hermes refused the run (307)');
    expect(redirects).toEqual(['manual']);
    const failed = new HermesRunsAgent({
      baseUrl: 'http://hermes.test',
      apiKey: 'k',
      fetch: stubHermes(sse({ event: 'run.failed', error: 'boom' })).fetch,
    });
    await expect(collect(failed.respond(turn('x')))).rejects.toThrow('Hermes run failed');
  });
});

/** One SSE frame as Hermes writes it. */
function sse(event: Record<string, unknown>): string {
  return `data: ${JSON.stringify(event)}\n\n`;
}

/** A Hermes API server stand-in as a fetch: run_9 starts, and its events are `events`. */
function stubHermes(events: string) {
  const requests: [string, string, string | undefined, string | undefined][] = [];
  const fetch = async (url: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const headers = new Headers(init?.headers);
    requests.push([
      init?.method ?? 'GET',
      String(url),
      headers.get('authorization') ?? undefined,
      headers.get('x-hermes-session-id') ?? undefined,
    ]);
    if (String(url).endsWith('/v1/runs')) return Response.json({ run_id: 'run_9', status: 'queued' }, { status: 202 });
    if (String(url).endsWith('/events'))
      return new Response(events, { headers: { 'content-type': 'text/event-stream' } });
    return Response.json({ status: 'stopping' });
  };
  return { fetch, requests };
}

describe('HermesRunsAgent client function tools', () => {
  const getTime = { type: 'function' as const, name: 'get_time', parameters: { type: 'object' } };

  it('a turn with client tools goes to chat completions in the call session, runs the call and continues', async () => {
    upstream = await startFakeUpstreams({
      reply: () => ({ toolCall: { name: 'get_time', arguments: '{"tz":"UTC"}' } }),
    });
    const agent = new HermesRunsAgent({ baseUrl: `${upstream.hermesBaseUrl}/`, apiKey: 'k' });
    const calls: [string, string][] = [];
    const { final } = await collect(
      agent.respond(
        turn('time?', {
          tools: [getTime],
          callTool: async (name, args) => {
            calls.push([name, args]);
            return '12:00';
          },
        }),
      ),
    );
    expect(calls).toEqual([['get_time', '{"tz":"UTC"}']]);
    expect(final).toBe('The tool said 12:00.');
    // Both requests in the call's Hermes session (the one its runs use); no run was started.
    expect(upstream.requests).toEqual(['POST /v1/chat/completions', 'POST /v1/chat/completions']);
    expect(upstream.chatSessions).toEqual(['call_a', 'call_a']);
    expect(upstream.bodies[0]).toEqual({
      model: 'hermes-agent',
      stream: true,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'time?' },
      ],
      tools: [{ type: 'function', function: { name: 'get_time', parameters: { type: 'object' } } }],
      tool_choice: 'auto',
    });
    // The second request is the same turn with the assistant's call and its result after it.
    expect((upstream.bodies[1] as { messages: unknown[] }).messages.slice(2)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_fake_1', type: 'function', function: { name: 'get_time', arguments: '{"tz":"UTC"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_fake_1', content: '12:00' },
    ]);
  });

  it('a turn without client tools, or with tool_choice none, still runs through /v1/runs', async () => {
    upstream = await startFakeUpstreams({ reply: (text) => ['Run answer to ', text, '.'] });
    const agent = new HermesRunsAgent({ baseUrl: upstream.hermesBaseUrl, apiKey: 'k' });
    expect((await collect(agent.respond(turn('hello')))).final).toBe('Run answer to hello.');
    const hidden = await collect(agent.respond(turn('again', { tools: [getTime], toolChoice: 'none' })));
    expect(hidden.final).toBe('Run answer to again.');
    expect(upstream.requests).toEqual([
      'POST /v1/runs',
      'GET /v1/runs/run_1/events',
      'POST /v1/runs',
      'GET /v1/runs/run_2/events',
    ]);
  });

  it('a Hermes with client tools off fails the turn with an error naming the setting, never the key', async () => {
    upstream = await startFakeUpstreams({ hermesClientTools: false });
    const agent = new HermesRunsAgent({ baseUrl: upstream.hermesBaseUrl, apiKey: 'secret-key' });
    const failure = await collect(agent.respond(turn('time?', { tools: [getTime] }))).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(AgentError);
    const { callerError, status } = failure as AgentError;
    expect(status).toBe(400);
    expect(callerError?.code).toBe('agent_tools_unavailable');
    expect(callerError?.message).toContain('client tools are disabled on this API server');
    expect(callerError?.message).toContain('gateway.platforms.api_server.client_tools');
    expect(callerError?.message).not.toMatch(/secret-key|127\.0\.0\.1/);
  });

  it('a wrong key on the tools route is a plain refusal, not blamed on the setting', async () => {
    upstream = await startFakeUpstreams({ apiKey: 'right' });
    const agent = new HermesRunsAgent({ baseUrl: upstream.hermesBaseUrl, apiKey: 'wrong' });
    const failure = await collect(agent.respond(turn('time?', { tools: [getTime] }))).catch((error: unknown) => error);
    expect(failure).toMatchObject({ message: 'Hermes chat completions answered 401', callerError: undefined });
  });
});

describe('HermesRunsAgent slash commands', () => {
  const command = (text: string, sessionKey = 'call_a', signal = new AbortController().signal) => ({
    sessionKey,
    command: typedCommand(text)!,
    signal,
  });

  it("run through the dashboard's slash.exec in the call's Hermes session, never as a run's input", async () => {
    upstream = await startFakeUpstreams();
    dashboard = await startFakeHermesDashboard({
      token: 'dash-token',
      knownSessions: ['call_a'],
      answer: (text) => ({ output: `${text}: reasoning effort set to low (this session).` }),
    });
    const agent = new HermesRunsAgent({
      baseUrl: upstream.hermesBaseUrl,
      apiKey: 'k',
      commands: { dashboardUrl: dashboard.url, token: 'dash-token' },
    });
    // The terminal's colour codes are not part of the answer.
    await expect(agent.runCommand(command('/reasoning low'))).resolves.toBe(
      '/reasoning low: reasoning effort set to low (this session).',
    );
    await expect(agent.runCommand(command('/help'))).resolves.toBe(
      '/help: reasoning effort set to low (this session).',
    );
    expect(dashboard.requests).toEqual([
      { method: 'session.resume', params: { session_id: 'call_a' } },
      { method: 'slash.exec', params: { session_id: 'tui1', command: '/reasoning low' } },
      // The call's session is bound once.
      { method: 'slash.exec', params: { session_id: 'tui1', command: '/help' } },
    ]);
    expect(upstream.requests).toEqual([]);
    agent.endSession('call_a');
    await vi.waitFor(() =>
      expect(dashboard?.requests.at(-1)).toEqual({ method: 'session.close', params: { session_id: 'tui1' } }),
    );
  });

  it("a call with no turn yet gets a fresh dashboard session; a refusal carries Hermes' reason", async () => {
    dashboard = await startFakeHermesDashboard({
      token: 't',
      answer: (text) => (text.startsWith('/model') ? { error: 'unknown model: nope' } : { output: 'ok' }),
    });
    const agent = new HermesRunsAgent({
      baseUrl: 'http://127.0.0.1:9',
      apiKey: '',
      commands: { dashboardUrl: dashboard.url, token: 't' },
    });
    await expect(agent.runCommand(command('/model nope', 'call_new'))).rejects.toMatchObject({
      name: 'CommandError',
      code: 'command_failed',
      message: 'Hermes did not run /model: unknown model: nope',
    });
    expect(dashboard.requests.map((r) => r.method)).toEqual(['session.resume', 'session.create', 'slash.exec']);
  });

  it('are refused without a dashboard, and an unreachable or refusing dashboard never shows its token', async () => {
    const none = new HermesRunsAgent({ baseUrl: 'http://127.0.0.1:9', apiKey: '' });
    await expect(none.runCommand(command('/reasoning low'))).rejects.toMatchObject({
      code: 'command_unavailable',
      message: expect.stringContaining('HERMES_REALTIME_AGENT_DASHBOARD_URL'),
    });
    dashboard = await startFakeHermesDashboard({ token: 'right-token' });
    const wrong = new HermesRunsAgent({
      baseUrl: 'http://127.0.0.1:9',
      apiKey: '',
      commands: { dashboardUrl: dashboard.url, token: 'wrong-secret-token' },
    });
    const refused = wrong.runCommand(command('/help'));
    await expect(refused).rejects.toMatchObject({ code: 'command_failed' });
    await expect(refused).rejects.not.toThrow(/wrong-secret-token|127\.0\.0\.1/);
    expect(dashboard.refused).toBe(1);
  });
});
