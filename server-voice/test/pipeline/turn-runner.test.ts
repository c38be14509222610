import { describe, expect, it } from 'vitest';
import type { ServerEvent } from '@conduit/contracts/voice/events';
import type { AgentBackend, AgentEvent, AgentTurn } from '../../src/agent/agent-backend.js';
import { ScriptedAgent } from '../../src/agent/scripted-agent.js';
import { ManualFrameClock } from '../../src/media/frame-clock.js';
import { PacedOutput } from '../../src/media/paced-output.js';
import { TurnRunner } from '../../src/pipeline/turn-runner.js';
import { RealtimeProtocol } from '../../src/protocol/realtime-protocol.js';
import { ScriptedTextToSpeech } from '../../src/providers/scripted.js';
import type { TextToSpeech } from '../../src/providers/types.js';

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

function setup(agent: AgentBackend, tts: TextToSpeech = new ScriptedTextToSpeech(), tools = false) {
  const events: ServerEvent[] = [];
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
  return { protocol, runner, output, events, types, pump, say, sent, speaking };
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
});
