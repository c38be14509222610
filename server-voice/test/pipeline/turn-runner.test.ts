import { afterEach, describe, expect, it } from 'vitest';
import type { ServerEvent } from '@conduit/contracts/voice/events';
import type { AgentBackend, AgentEvent, AgentTurn, CommandTurn } from '../../src/agent/agent-backend.js';
import { CommandError } from '../../src/agent/agent-backend.js';
import { HermesRunsAgent } from '../../src/agent/hermes-runs-agent.js';
import { ScriptedAgent } from '../../src/agent/scripted-agent.js';
import { typedCommand } from '../../src/agent/slash-command.js';
import { ManualFrameClock } from '../../src/media/frame-clock.js';
import { PacedOutput } from '../../src/media/paced-output.js';
import { TurnRunner } from '../../src/pipeline/turn-runner.js';
import { RealtimeProtocol } from '../../src/protocol/realtime-protocol.js';
import { ScriptedTextToSpeech } from '../../src/providers/scripted.js';
import type { TextToSpeech } from '../../src/providers/types.js';
import { startFakeUpstreams, type FakeUpstreams } from '../../src/testing/fake-upstreams.js';

/** An agent whose reply the test releases piece by piece. */
class GatedAgent implements AgentBackend {
  readonly label = 'gated';
  private readonly pieces: ((value: string | null) => void)[] = [];
  private readonly waiting: Promise<string | null>[] = [];

  constructor(count: number) {
    for (let i = 0; i < count; i += 1) this.waiting.push(new Promise((resolve) => this.pieces.push(resolve)));
  }

  release(index: number, text: string | null): void {
    this.pieces[index]?.(text);
  }

  async *respond(turn: AgentTurn): AsyncGenerator<AgentEvent, string, void> {
    let text = '';
    for (const piece of this.waiting) {
      const value = await piece;
      if (turn.signal.aborted) throw new Error('cancelled');
      if (value === null) break;
      text += value;
      yield { type: 'delta', text: value };
    }
    return text;
  }

  endSession(): void {}
}

/** An agent that starts its reply and then never finishes it (a stalled Hermes run). */
class StalledAgent implements AgentBackend {
  readonly label = 'stalled';
  signal: AbortSignal | null = null;

  async *respond(turn: AgentTurn): AsyncGenerator<AgentEvent, string, void> {
    this.signal = turn.signal;
    yield { type: 'delta', text: 'Let me think about that. ' };
    await new Promise<never>(() => undefined);
    return '';
  }

  endSession(): void {}
}

/** A Hermes-like agent whose commands answer from a table (or fail as Hermes refusing them). */
class CommandAgent extends ScriptedAgent {
  readonly commands: CommandTurn[] = [];

  constructor(private readonly answers: Record<string, string | CommandError>) {
    super(() => [{ delta: 'chat reply' }]);
  }

  runCommand(turn: CommandTurn): Promise<string> {
    this.commands.push(turn);
    const answer = this.answers[turn.command.text];
    if (answer instanceof CommandError) return Promise.reject(answer);
    return Promise.resolve(answer ?? 'Done.');
  }
}

interface ManualTimer {
  fn: () => void;
  ms: number;
  cancelled: boolean;
}

function setup(
  agent: AgentBackend,
  tts: TextToSpeech = new ScriptedTextToSpeech(),
  tools = false,
  options: { streamCaptions?: boolean; replyCompletionTimeoutMs?: number } = {},
) {
  const events: ServerEvent[] = [];
  /** The turn runner's timers: a test fires the completion timeout by hand instead of waiting for it. */
  const timers: ManualTimer[] = [];
  const clock = new ManualFrameClock();
  const sent: boolean[] = [];
  const output = new PacedOutput(clock, (_frame, info) => sent.push(info.silent));
  output.start();
  const speaking: boolean[] = [];
  let runner: TurnRunner | null = null;
  const protocol = new RealtimeProtocol({
    sessionId: 'call_t',
    publish: (event) => events.push(event),
    callbacks: {
      onTextInput: (text, _identity, responseId) => runner?.start(responseId, text),
      onResponseCancelled: () => runner?.cancel(),
    },
    instructions: '',
    tools: tools ? [{ type: 'function', name: 'get_time', parameters: { type: 'object' } }] : [],
    toolChoice: 'auto',
    nowMs: clock.now,
    randomHex: (bytes) => '0'.repeat(bytes * 2),
  });
  runner = new TurnRunner({
    protocol,
    agent,
    tts,
    output,
    sessionKey: 'call_t',
    trimLeadingSilence: false,
    onSpeaking: (value) => speaking.push(value),
    delay: () => Promise.resolve(),
    log: () => undefined,
    ...options,
    setTimer: (fn, ms) => {
      const timer: ManualTimer = { fn, ms, cancelled: false };
      timers.push(timer);
      return { cancel: () => (timer.cancelled = true) };
    },
  });
  const types = () => events.map((event) => event.type);
  /** Advances the pacing clock until `done()` or 30 simulated seconds. */
  const pump = async (done: () => boolean) => {
    for (let i = 0; i < 1500 && !done(); i += 1) {
      clock.advance(20);
      await new Promise((resolve) => setImmediate(resolve));
    }
    if (!done()) throw new Error(`never happened; events: ${types().join(', ')}`);
  };
  const say = (text: string) => {
    protocol.handleClientMessage(
      JSON.stringify({
        type: 'conversation.item.create',
        item: { type: 'message', role: 'user', content: [{ type: 'input_text', text }] },
      }),
      'c',
    );
    protocol.handleClientMessage('{"type":"response.create"}', 'c');
  };
  /** Like `pump`, for an agent behind real HTTP: real time passes between ticks (up to 5 s). */
  const pumpWithIo = async (done: () => boolean) => {
    const until = Date.now() + 5_000;
    while (!done() && Date.now() < until) {
      clock.advance(20);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    if (!done()) throw new Error(`never happened; events: ${types().join(', ')}`);
  };
  return {
    protocol,
    runner: runner as TurnRunner,
    output,
    events,
    types,
    pump,
    pumpWithIo,
    say,
    sent,
    speaking,
    timers,
  };
}

describe('TurnRunner', () => {
  it('speaks the first clause while the agent is still writing, and completes after the text', async () => {
    const agent = new GatedAgent(3);
    const tts = new ScriptedTextToSpeech();
    const t = setup(agent, tts);
    t.say('hello');
    agent.release(0, 'Hello there. ');
    agent.release(1, 'I am still thinking');
    await t.pump(() => t.types().includes('output_audio_buffer.started'));
    expect(tts.texts).toEqual(['Hello there.']);
    expect(t.types()).not.toContain('response.done');
    agent.release(2, ' about it.');
    await t.pump(() => t.types().includes('output_audio_buffer.stopped'));
    expect(tts.texts).toEqual(['Hello there.', 'I am still thinking about it.']);
    const done = t.events.find((e) => e.type === 'response.output_audio_transcript.done');
    expect(done).toMatchObject({ transcript: 'Hello there. I am still thinking about it.' });
    expect(t.types().indexOf('response.done')).toBeLessThan(t.types().indexOf('output_audio_buffer.stopped'));
    expect(t.speaking).toEqual([true, false]);
    // Speech frames were paced between silent ones, never more than one per tick.
    expect(t.sent.filter((silent) => !silent).length).toBeGreaterThan(10);
  });

  it('falls back to whole-reply synthesis when speech fails before anything was audible', async () => {
    let calls = 0;
    const good = new ScriptedTextToSpeech();
    const flaky: TextToSpeech = {
      label: 'flaky',
      sampleRateHz: 24_000,
      synthesize: (text, options) => {
        calls += 1;
        if (calls === 1) return new ScriptedTextToSpeech({ failure: { afterChunks: 0 } }).synthesize(text, options);
        return good.synthesize(text, options);
      },
    };
    const t = setup(new ScriptedAgent(() => [{ delta: 'One. ' }, { delta: 'Two.' }]), flaky);
    t.say('count');
    await t.pump(() => t.types().includes('output_audio_buffer.stopped'));
    expect(good.texts).toEqual(['One. Two.']);
    expect(t.events.find((e) => e.type === 'response.done')).toMatchObject({ response: { status: 'completed' } });
  });

  it('never replays from the start after audible speech failed', async () => {
    const tts = new ScriptedTextToSpeech({ failure: { afterChunks: 3 } });
    const t = setup(new ScriptedAgent(() => [{ delta: 'First sentence here. ' }, { delta: 'Second one.' }]), tts);
    t.say('go');
    await t.pump(() => t.types().includes('output_audio_buffer.stopped'));
    expect(tts.texts).toEqual(['First sentence here.']);
    expect(t.events.find((e) => e.type === 'response.done')).toMatchObject({ response: { status: 'completed' } });
  });

  it('fails the response when the agent fails', async () => {
    const t = setup(new ScriptedAgent(() => [{ delta: 'Hm' }, { fail: 'upstream 500' }]));
    t.say('x');
    await t.pump(() => t.types().includes('response.done'));
    expect(t.events.find((e) => e.type === 'response.done')).toMatchObject({ response: { status: 'failed' } });
  });

  it('response.cancel stops the agent and the speech at once and drops queued audio', async () => {
    const agent = new GatedAgent(2);
    const t = setup(agent);
    t.say('talk');
    agent.release(0, 'A long first sentence that takes a while to say out loud. ');
    await t.pump(() => t.types().includes('output_audio_buffer.started'));
    expect(t.output.queuedFrames).toBeGreaterThan(0);
    t.protocol.handleClientMessage('{"type":"response.cancel"}', 'c');
    expect(t.output.queuedFrames).toBe(0);
    expect(t.types().slice(-2)).toEqual(['response.done', 'output_audio_buffer.cleared']);
    const sentBefore = t.sent.length;
    agent.release(1, 'More text. ');
    await t.pump(() => t.sent.length > sentBefore + 10);
    expect(t.sent.slice(sentBefore).every((silent) => silent)).toBe(true);
    expect(t.types().filter((type) => type === 'response.done')).toHaveLength(1);
    expect(t.speaking.at(-1)).toBe(false);
  });

  it('routes a client function call and resumes the turn in the response the client opens', async () => {
    const agent = new ScriptedAgent(() => [
      { delta: 'Let me look. ' },
      { tool: 'get_time', arguments: '{}', then: 'It is {output}.' },
    ]);
    const t = setup(agent, new ScriptedTextToSpeech(), true);
    t.say('time?');
    await t.pump(() => t.types().includes('response.function_call_arguments.done'));
    const call = t.events.find((e) => e.type === 'response.function_call_arguments.done');
    const callId = call?.type === 'response.function_call_arguments.done' ? call.call_id : '';
    t.protocol.handleClientMessage(
      JSON.stringify({
        type: 'conversation.item.create',
        item: { type: 'function_call_output', call_id: callId, output: 'noon' },
      }),
      'c',
    );
    t.protocol.handleClientMessage('{"type":"response.create"}', 'c');
    await t.pump(() => t.events.filter((e) => e.type === 'response.done').length === 2);
    const dones = t.events.filter((e) => e.type === 'response.done');
    // What was said before the call is a completed message of that response, ahead of the call.
    expect(dones[0]).toMatchObject({
      response: {
        id: 'resp_call_t_1',
        output: [
          { type: 'message', status: 'completed', content: [{ transcript: 'Let me look. ' }] },
          { type: 'function_call', status: 'completed' },
        ],
      },
    });
    expect(t.events.find((e) => e.type === 'response.function_call_arguments.done')).toMatchObject({
      output_index: 1,
    });
    expect(dones[1]).toMatchObject({
      response: { id: 'resp_call_t_2', status: 'completed', output: [{ content: [{ transcript: 'It is noon.' }] }] },
    });
    expect(agent.toolOutputs).toEqual(['noon']);
  });
  it('a reply that never finishes ends with a response_timeout error after the completion timeout', async () => {
    const agent = new StalledAgent();
    const t = setup(agent, new ScriptedTextToSpeech(), false, { replyCompletionTimeoutMs: 45_000 });
    t.say('think hard');
    await t.pump(() => t.types().includes('output_audio_buffer.started'));
    expect(t.timers.map((timer) => [timer.ms, timer.cancelled])).toEqual([[45_000, false]]);
    expect(t.types()).not.toContain('response.done');
    t.timers[0]?.fn();
    const error = t.events.find((e) => e.type === 'error');
    expect(error).toMatchObject({
      type: 'error',
      error: {
        type: 'invalid_request_error',
        code: 'response_timeout',
        message: 'The reply did not finish within 45 s (tts.streaming.completion_timeout), so it was stopped.',
        param: null,
        event_id: null,
      },
    });
    expect(t.types().slice(t.types().indexOf('error'))).toEqual([
      'error',
      'response.output_audio.done',
      'response.output_audio_transcript.done',
      'response.content_part.done',
      'conversation.item.done',
      'response.output_item.done',
      'response.done',
      'output_audio_buffer.cleared',
    ]);
    expect(t.events.find((e) => e.type === 'response.done')).toMatchObject({
      response: {
        status: 'failed',
        output: [{ status: 'incomplete', content: [{ transcript: 'Let me think about that. ' }] }],
      },
    });
    // The run is stopped (Hermes gets /stop through the signal) and its speech is gone.
    expect(agent.signal?.aborted).toBe(true);
    expect(t.output.queuedFrames).toBe(0);
    expect(t.speaking.at(-1)).toBe(false);
    expect(t.runner.busy).toBe(false);
    const count = t.events.length;
    await t.pump(() => t.sent.length > 50);
    expect(t.events.length).toBe(count);
  });

  it('a reply that finishes in time disarms its completion timeout (default 120 s)', async () => {
    const t = setup(new ScriptedAgent(() => [{ delta: 'Quick answer.' }]));
    t.say('quick');
    await t.pump(() => t.types().includes('output_audio_buffer.stopped'));
    expect(t.timers.map((timer) => [timer.ms, timer.cancelled])).toEqual([[120_000, true]]);
    expect(t.types()).not.toContain('error');
  });

  it('final-only captions: no delta while the reply is written, the final transcript when it is done', async () => {
    for (const streamCaptions of [false, true]) {
      const agent = new GatedAgent(2);
      const t = setup(agent, new ScriptedTextToSpeech(), false, { streamCaptions });
      t.say('hello');
      agent.release(0, 'First part. ');
      await t.pump(() => t.types().includes('output_audio_buffer.started'));
      const deltasWhileWriting = t.events.filter((e) => e.type === 'response.output_audio_transcript.delta');
      agent.release(1, 'Second part.');
      await t.pump(() => t.types().includes('response.done'));
      const done = t.events.find((e) => e.type === 'response.output_audio_transcript.done');
      expect(done).toMatchObject({ transcript: 'First part. Second part.' });
      if (streamCaptions) {
        expect(deltasWhileWriting).toMatchObject([{ delta: 'First part. ' }]);
      } else {
        expect(deltasWhileWriting).toEqual([]);
        expect(t.types()).not.toContain('response.output_audio_transcript.delta');
      }
      // Speech is clause by clause either way.
      expect(t.sent.some((silent) => !silent)).toBe(true);
    }
  });

  it("runs a slash command where Hermes runs commands and speaks Hermes' answer as the reply", async () => {
    const agent = new CommandAgent({ '/reasoning low': 'Reasoning effort set to low for this session.' });
    const t = setup(agent);
    const responseId = t.protocol.openResponse('c');
    t.runner.startCommand(responseId, typedCommand('/reasoning low')!);
    await t.pump(() => t.types().includes('output_audio_buffer.stopped'));
    expect(agent.commands.map((turn) => [turn.sessionKey, turn.command.text])).toEqual([['call_t', '/reasoning low']]);
    // Never a chat turn.
    expect(agent.turns).toEqual([]);
    expect(t.events.find((e) => e.type === 'response.output_audio_transcript.delta')).toMatchObject({
      delta: 'Reasoning effort set to low for this session.',
    });
    expect(t.events.find((e) => e.type === 'response.done')).toMatchObject({
      response: {
        status: 'completed',
        output: [{ content: [{ transcript: 'Reasoning effort set to low for this session.' }] }],
      },
    });
  });

  it('a command Hermes refuses ends in an error event carrying its reason', async () => {
    const agent = new CommandAgent({
      '/model nope': new CommandError('command_failed', 'Hermes did not run /model: unknown model nope'),
    });
    const t = setup(agent);
    t.runner.startCommand(t.protocol.openResponse('c'), typedCommand('/model nope')!);
    await t.pump(() => t.types().includes('response.done'));
    expect(t.events.find((e) => e.type === 'error')).toMatchObject({
      error: { code: 'command_failed', message: 'Hermes did not run /model: unknown model nope' },
    });
    expect(t.events.find((e) => e.type === 'response.done')).toMatchObject({ response: { status: 'failed' } });
  });

  it('an agent that is not Hermes refuses a command with an error and never sends it as chat', async () => {
    const agent = new ScriptedAgent(() => [{ delta: 'I would have answered.' }]);
    const t = setup(agent);
    t.runner.startCommand(t.protocol.openResponse('c'), typedCommand('/model gpt-5.6')!);
    expect(t.types().slice(-3)).toEqual(['response.created', 'error', 'response.done']);
    expect(t.events.at(-2)).toMatchObject({
      error: {
        type: 'invalid_request_error',
        code: 'command_unavailable',
        message: "/model is a Hermes command, and this gateway's agent (scripted) is not Hermes, so it was not sent.",
        param: null,
      },
    });
    expect(t.events[2]).toMatchObject({ response: { status: 'failed', output: [] } });
    await t.pump(() => t.sent.length > 20);
    expect(agent.turns).toEqual([]);
    expect(t.sent.every((silent) => silent)).toBe(true);
  });
});

describe('TurnRunner with the Hermes agent and client function tools', () => {
  let upstream: FakeUpstreams | null = null;
  afterEach(async () => {
    await upstream?.close();
    upstream = null;
  });

  it('Hermes calls a client tool, the client answers, and the reply completes in the resumed response', async () => {
    upstream = await startFakeUpstreams({ reply: () => ({ toolCall: { name: 'get_time', arguments: '{}' } }) });
    const agent = new HermesRunsAgent({ baseUrl: upstream.hermesBaseUrl, apiKey: 'k' });
    const t = setup(agent, new ScriptedTextToSpeech(), true);
    t.say('time?');
    await t.pumpWithIo(() => t.types().includes('response.function_call_arguments.done'));
    const call = t.events.find((e) => e.type === 'response.function_call_arguments.done');
    expect(call).toMatchObject({ name: 'get_time', arguments: '{}' });
    const callId = call?.type === 'response.function_call_arguments.done' ? call.call_id : '';
    t.protocol.handleClientMessage(
      JSON.stringify({
        type: 'conversation.item.create',
        item: { type: 'function_call_output', call_id: callId, output: 'noon' },
      }),
      'c',
    );
    t.protocol.handleClientMessage('{"type":"response.create"}', 'c');
    await t.pumpWithIo(() => t.events.filter((e) => e.type === 'response.done').length === 2);
    expect(t.events.filter((e) => e.type === 'response.done').at(-1)).toMatchObject({
      response: {
        id: 'resp_call_t_2',
        status: 'completed',
        output: [{ content: [{ transcript: 'The tool said noon.' }] }],
      },
    });
    expect(upstream.requests).toEqual(['POST /v1/chat/completions', 'POST /v1/chat/completions']);
    expect(upstream.chatSessions).toEqual(['call_t', 'call_t']);
  });

  it('a Hermes with client tools off ends the response with an error naming the setting, not silence', async () => {
    upstream = await startFakeUpstreams({ hermesClientTools: false });
    const agent = new HermesRunsAgent({ baseUrl: upstream.hermesBaseUrl, apiKey: 'k' });
    const t = setup(agent, new ScriptedTextToSpeech(), true);
    t.say('time?');
    await t.pumpWithIo(() => t.types().includes('response.done'));
    expect(t.types().slice(-3)).toEqual(['response.created', 'error', 'response.done']);
    expect(t.events.at(-2)).toMatchObject({
      error: {
        code: 'agent_tools_unavailable',
        message: expect.stringContaining('gateway.platforms.api_server.client_tools must not be false') as unknown,
      },
    });
    expect(t.events.at(-1)).toMatchObject({ response: { status: 'failed' } });
  });
});
