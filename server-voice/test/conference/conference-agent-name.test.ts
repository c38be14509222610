import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { AgentBackend, AgentEvent, AgentTurn } from '../../src/agent/agent-backend.js';
import { HermesRunsAgent } from '../../src/agent/hermes-runs-agent.js';
import {
  NAME_QUESTION,
  NAME_QUESTION_TIMEOUT_MS,
  agentNameFromAnswer,
  askAgentName,
} from '../../src/conference/agent-name.js';
import type { SetTimer } from '../../src/protocol/realtime-protocol.js';
import { ScriptedSpeechToText, ScriptedTextToSpeech } from '../../src/providers/scripted.js';
import { startFakeUpstreams, type FakeUpstreams } from '../../src/testing/fake-upstreams.js';
import { startLiveKitTestServer, type LiveKitTestServer } from '../livekit-server/livekit-test-server.js';
import {
  API_KEY,
  API_SECRET,
  TestParticipant,
  conferenceConfig,
  startGateway,
  within,
  type GatewayUnderTest,
} from './conference-harness.js';

/** A timer fired by hand: records what was armed. */
function manualTimer() {
  const armed: { fn: () => void; ms: number; cancelled: boolean }[] = [];
  const setTimer: SetTimer = (fn, ms) => {
    const entry = { fn, ms, cancelled: false };
    armed.push(entry);
    return { cancel: () => (entry.cancelled = true) };
  };
  return { armed, setTimer };
}

/** An agent that is asked and never answers (nor honours the abort): only the deadline ends the question. */
class SilentAgent implements AgentBackend {
  readonly label = 'silent';
  readonly asked: AgentTurn[] = [];
  readonly ended: string[] = [];
  private readonly listeners = new Set<() => void>();

  async *respond(turn: AgentTurn): AsyncGenerator<AgentEvent, string, void> {
    this.asked.push(turn);
    for (const listener of [...this.listeners]) listener();
    await new Promise<void>(() => undefined);
    // Never reached: had it been, this valid name would have been used.
    yield { type: 'delta', text: 'Mira' };
    return 'Mira';
  }

  endSession(sessionKey: string): void {
    this.ended.push(sessionKey);
  }

  /** Resolves once the agent was asked. */
  wasAsked(): Promise<void> {
    return within('the name question', (report) => {
      if (this.asked.length > 0) report(undefined);
      const listener = (): void => report(undefined);
      this.listeners.add(listener);
      return () => this.listeners.delete(listener);
    });
  }
}

describe('the name answer check', () => {
  it('takes one word of letters, at most 32, forgiving quotes and a closing full stop', () => {
    expect(agentNameFromAnswer('Mira')).toBe('Mira');
    expect(agentNameFromAnswer('  "Mira."\n')).toBe('Mira');
    expect(agentNameFromAnswer('Zoë!')).toBe('Zoë');
    expect(agentNameFromAnswer('A'.repeat(32))).toBe('A'.repeat(32));
    expect(agentNameFromAnswer('A'.repeat(33))).toBeNull();
    expect(agentNameFromAnswer('Mira Jones')).toBeNull();
    expect(agentNameFromAnswer('I am Mira.')).toBeNull();
    expect(agentNameFromAnswer('R2D2')).toBeNull();
    expect(agentNameFromAnswer('mira-bot')).toBeNull();
    expect(agentNameFromAnswer('')).toBeNull();
  });

  it('falls back to Hermes when the agent fails, and forgets the question’s conversation', async () => {
    const ended: string[] = [];
    const failing: AgentBackend = {
      label: 'failing',
      // eslint-disable-next-line require-yield
      async *respond(): AsyncGenerator<AgentEvent, string, void> {
        throw new Error('upstream down');
      },
      endSession: (key) => ended.push(key),
    };
    const { armed, setTimer } = manualTimer();
    expect(await askAgentName(failing, { sessionKey: 'livekit-name:x', setTimer })).toEqual({
      name: 'Hermes',
      source: 'fallback',
      reason: 'failed',
    });
    expect(ended).toEqual(['livekit-name:x']);
    expect(armed.map((timer) => [timer.ms, timer.cancelled])).toEqual([[NAME_QUESTION_TIMEOUT_MS, true]]);
  });
});

describe('Conference mode: the agent’s name when LIVEKIT_AGENT_NAME is unset', () => {
  let server: LiveKitTestServer;
  let upstream: FakeUpstreams | null = null;
  let under: GatewayUnderTest | null = null;
  let participants: TestParticipant[] = [];

  const stt = new ScriptedSpeechToText(['unused']);
  const tts = new ScriptedTextToSpeech();
  const nameQuestions = (): { input: string; session_id: string }[] =>
    (upstream?.bodies ?? []).filter(
      (body): body is { input: string; session_id: string } => (body as { input?: unknown }).input === NAME_QUESTION,
    );

  async function join(identity: string, room: string): Promise<TestParticipant> {
    const participant = await TestParticipant.join(server, identity, room);
    participants.push(participant);
    return participant;
  }

  /** The gateway's providers with the Hermes runs API of `hermes` as its agent (the name is asked there). */
  const askingHermes = (hermes: FakeUpstreams) => ({
    agent: new HermesRunsAgent({ baseUrl: hermes.hermesBaseUrl, apiKey: 'hermes-key' }),
    stt,
    tts,
  });

  /** Alice joins `room`; resolves with her once the gateway has joined it and she sees the agent as `identity`. */
  async function aliceMeets(gateway: GatewayUnderTest, room: string, identity: string): Promise<TestParticipant> {
    const alice = await join('alice', room);
    await gateway.reaches('joined');
    await alice.sees(identity);
    return alice;
  }

  beforeAll(async () => {
    server = await startLiveKitTestServer({ apiKey: API_KEY, apiSecret: API_SECRET });
  });

  afterEach(async () => {
    await under?.gateway.stop();
    await Promise.allSettled(participants.map((participant) => participant.leave()));
    await upstream?.close();
    under = null;
    upstream = null;
    participants = [];
  });

  afterAll(async () => {
    await server?.close();
  });

  it('asks the configured model once, joins under the name it chose, and keeps it for every later join', async () => {
    upstream = await startFakeUpstreams({
      reply: (text) => (text === NAME_QUESTION ? ['Mi', 'ra', '.'] : ['Hello.']),
    });
    const config = conferenceConfig(server.url, { agentName: null });
    under = startGateway(config, askingHermes(upstream));
    const alice = await aliceMeets(under, config.room, 'hermes-mira');
    expect(alice.room.remoteParticipants.get('hermes-mira')?.name).toBe('Mira');
    expect(under.gateway.agentIdentity).toBe('hermes-mira');
    // Asked through the gateway's Hermes backend, in a conversation of its own (not the room's).
    expect(nameQuestions()).toEqual([expect.objectContaining({ session_id: `livekit-name:${config.room}` })]);
    const named = await under.logged('the name log', (entry) => entry.event === 'conference_agent_name');
    expect(named).toMatchObject({ name: 'Mira', identity: 'hermes-mira', source: 'model' });

    // The room empties (the agent leaves) and fills again: the agent rejoins as Mira without asking again.
    const gone = under.reaches('watching');
    await alice.leave();
    await gone;
    const again = await aliceMeets(under, config.room, 'hermes-mira');
    expect(again.room.remoteParticipants.get('hermes-mira')?.name).toBe('Mira');
    expect(again.room.remoteParticipants.has('hermes-hermes')).toBe(false);
    expect(nameQuestions()).toHaveLength(1);
    // The question itself is the only non-room request: the room's conversation has not been touched.
    expect(upstream.requests.filter((request) => request === 'POST /v1/runs')).toHaveLength(1);
  });

  it('an answer that is not a single name falls back to Hermes', async () => {
    upstream = await startFakeUpstreams({ reply: () => ['I am Mira, ', 'nice to meet you.'] });
    const config = conferenceConfig(server.url, { agentName: null });
    under = startGateway(config, askingHermes(upstream));
    const alice = await aliceMeets(under, config.room, 'hermes-hermes');
    expect(alice.room.remoteParticipants.get('hermes-hermes')?.name).toBe('Hermes');
    expect(nameQuestions()).toHaveLength(1);
    const named = await under.logged('the name log', (entry) => entry.event === 'conference_agent_name');
    expect(named).toMatchObject({ name: 'Hermes', source: 'fallback', reason: 'invalid' });
    expect(named.hint).toContain('LIVEKIT_AGENT_NAME');
  });

  it('a model that does not answer in time: the join waits for the deadline, then goes ahead as Hermes', async () => {
    const agent = new SilentAgent();
    const { armed, setTimer } = manualTimer();
    const config = conferenceConfig(server.url, { agentName: null });
    under = startGateway(config, { agent, stt, tts }, { nameTimer: setTimer });
    const alice = await join('alice', config.room);
    await agent.wasAsked();
    expect(agent.asked[0]).toMatchObject({ text: NAME_QUESTION, tools: [], sessionKey: `livekit-name:${config.room}` });
    expect(under.gateway.state).toBe('joining');
    expect(alice.room.remoteParticipants.size).toBe(0);
    const deadline = armed.find((timer) => timer.ms === NAME_QUESTION_TIMEOUT_MS);
    expect(deadline?.cancelled).toBe(false);
    deadline?.fn();
    await under.reaches('joined');
    await alice.sees('hermes-hermes');
    expect(alice.room.remoteParticipants.get('hermes-hermes')?.name).toBe('Hermes');
    expect(agent.asked[0]?.signal.aborted).toBe(true);
    expect(agent.ended).toEqual([`livekit-name:${config.room}`]);
    const named = await under.logged('the name log', (entry) => entry.event === 'conference_agent_name');
    expect(named).toMatchObject({ name: 'Hermes', source: 'fallback', reason: 'timeout' });
  });

  it('a configured LIVEKIT_AGENT_NAME is used as it is, and the model is not asked', async () => {
    const agent = new SilentAgent();
    const config = conferenceConfig(server.url, { agentName: 'Orla' });
    under = startGateway(config, { agent, stt, tts });
    const alice = await aliceMeets(under, config.room, 'hermes-orla');
    expect(alice.room.remoteParticipants.get('hermes-orla')?.name).toBe('Orla');
    expect(agent.asked).toEqual([]);
  });
});
