import { writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HermesRunsAgent } from '../../src/agent/hermes-runs-agent.js';
import { EVENTS_TOPIC } from '../../src/conference/conference-session.js';
import { TOOLS_TOPIC } from '../../src/conference/remote-tools.js';
import { registryName } from '../../src/conference/tool-rules.js';
import { ScriptedSpeechToText, ScriptedTextToSpeech } from '../../src/providers/scripted.js';
import { startFakeUpstreams, type FakeUpstreams } from '../../src/testing/fake-upstreams.js';
import { startLiveKitTestServer, type LiveKitTestServer } from '../livekit-server/livekit-test-server.js';
import {
  API_KEY,
  API_SECRET,
  TOOLSET_ENABLED_YAML,
  TestParticipant,
  conferenceConfig,
  profileConfigFile,
  startGateway,
  type GatewayUnderTest,
} from './conference-harness.js';

const SNAPSHOT_TOOL = {
  type: 'function',
  function: {
    name: 'camera.snapshot',
    description: 'What the camera sees.',
    parameters: { type: 'object', properties: { zoom: { type: 'number' } } },
  },
};

type ChatBody = { tools?: { type: string; function: { name: string } }[]; messages: { role: string }[] };

/**
 * The `hermes-livekit-tools` switch, end to end: the real gateway in a room of the test LiveKit server, a real
 * participant registering a tool, and the gateway's real Hermes agent backend talking HTTP to a fake Hermes API
 * server. What the model is offered is what Hermes receives: `/v1/chat/completions` with `tools`, or a plain
 * `/v1/runs` turn without them.
 */
describe('Conference mode: remote tools reach the model only with hermes-livekit-tools enabled', () => {
  let server: LiveKitTestServer;
  let upstream: FakeUpstreams;
  let under: GatewayUnderTest;
  let alice: TestParticipant;
  let configFile = '';
  const rpcCalls: string[] = [];
  const name = registryName('alice', 'camera.snapshot');

  /** Alice types `text`; resolves when the response is done. */
  async function turn(text: string): Promise<void> {
    const from = alice.events.length;
    await alice.send(EVENTS_TOPIC, {
      type: 'conversation.item.create',
      item: { type: 'message', role: 'user', content: [{ type: 'input_text', text }] },
    });
    await alice.send(EVENTS_TOPIC, { type: 'response.create' });
    await alice.waitForType('response.done', from);
  }

  async function register(): Promise<string> {
    const from = alice.toolMessages.length;
    await alice.send(TOOLS_TOPIC, { type: 'conference.tools.register', tools: [SNAPSHOT_TOOL] });
    return (await alice.waitForToolMessage(null, from)).type;
  }

  const hiddenLines = (): Record<string, unknown>[] =>
    under.logger.lines
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((entry) => entry.event === 'remote_tools_hidden');

  beforeAll(async () => {
    server = await startLiveKitTestServer({ apiKey: API_KEY, apiSecret: API_SECRET });
    // Hermes answers `call <tool> <args>` with that tool call, anything else with text.
    upstream = await startFakeUpstreams({
      reply: (text) => {
        const [, tool, args] = /^call (\S+) (.*)$/.exec(text) ?? [];
        return tool ? { toolCall: { name: tool, arguments: args ?? '{}' } } : ['Plain answer.'];
      },
    });
    // The profile enables other toolsets for livekit, but not this one.
    configFile = profileConfigFile('platform_toolsets:\n  livekit:\n    - web\n    - terminal\n');
    const conference = conferenceConfig(server.url, {
      profileConfigFile: configFile,
      remoteToolPolicy: JSON.stringify({
        tools: [{ participant_identity: 'alice', tool_name: 'camera.snapshot', tier: 1 }],
      }),
    });
    under = startGateway(conference, {
      agent: new HermesRunsAgent({ baseUrl: upstream.hermesBaseUrl, apiKey: 'hermes-key' }),
      stt: new ScriptedSpeechToText(['unused']),
      tts: new ScriptedTextToSpeech(),
    });
    alice = await TestParticipant.join(server, 'alice', conference.room);
    await under.reaches('joined');
    await alice.waitForType('session.created');
    alice.local.registerRpcMethod('camera.snapshot', async (data) => {
      rpcCalls.push(data.payload);
      return JSON.stringify({ seen: 'a cat' });
    });
  });

  afterAll(async () => {
    await under?.gateway.stop();
    await alice?.leave();
    await server?.close();
    await upstream?.close();
  });

  it('off: registration still succeeds, the model is not offered the tool, and the log says once how to enable it', async () => {
    expect(await register()).toBe('conference.tools.registered');
    expect(under.gateway.session?.tools.list().map((tool) => tool.name)).toEqual([name]);
    const hidden = await under.logged('the hidden-tools hint', (entry) => entry.event === 'remote_tools_hidden');
    expect(hidden.level).toBe('warn');
    expect(hidden.hint).toContain('add hermes-livekit-tools to platform_toolsets.livekit in');
    expect(hidden.hint).toContain(configFile);

    await turn(`call ${name} {}`);
    // A turn without client tools: Hermes' /v1/runs, no tools, no chat request, no RPC.
    expect(upstream.requests.filter((request) => request.startsWith('POST'))).toEqual(['POST /v1/runs']);
    expect(upstream.bodies.at(-1)).toMatchObject({ input: `call ${name} {}` });
    expect(rpcCalls).toEqual([]);
    expect(under.gateway.session?.offeredTools()).toEqual([]);

    // Registering again and another turn: still hidden, still told only once.
    expect(await register()).toBe('conference.tools.registered');
    await turn('anything else');
    expect(upstream.requests.filter((request) => request.startsWith('POST'))).toEqual([
      'POST /v1/runs',
      'POST /v1/runs',
    ]);
    expect(hiddenLines()).toHaveLength(1);
  });

  it('on: the operator lists hermes-livekit-tools, and the next turn offers the tool to the model and runs it by RPC', async () => {
    writeFileSync(configFile, `platform_toolsets:\n  livekit: [web, terminal, hermes-livekit-tools]\n`);
    const chatFrom = upstream.bodies.length;
    await turn(`call ${name} {"zoom": 3}`);
    const chats = upstream.bodies.slice(chatFrom) as ChatBody[];
    expect(upstream.requests.filter((request) => request.startsWith('POST')).slice(2)).toEqual([
      'POST /v1/chat/completions',
      'POST /v1/chat/completions',
    ]);
    expect(chats[0]?.tools).toEqual([
      {
        type: 'function',
        function: {
          name,
          description: 'What the camera sees.',
          parameters: { type: 'object', properties: { zoom: { type: 'number' } } },
        },
      },
    ]);
    expect(rpcCalls).toEqual(['{"zoom":3}']);
    // The tool's result went back to Hermes in the same turn.
    expect(chats[1]?.messages.at(-1)).toEqual({
      role: 'tool',
      tool_call_id: 'call_fake_1',
      content: '{"seen":"a cat"}',
    });
    expect(hiddenLines()).toHaveLength(1);
  });

  it('off again: removing the entry hides the tool from the next turn', async () => {
    writeFileSync(configFile, TOOLSET_ENABLED_YAML.replace('hermes-livekit-tools', 'web-and-more-tools'));
    const requestsFrom = upstream.requests.length;
    await turn(`call ${name} {}`);
    expect(upstream.requests.slice(requestsFrom).filter((request) => request.startsWith('POST'))).toEqual([
      'POST /v1/runs',
    ]);
    expect(rpcCalls).toHaveLength(1);
    expect(under.gateway.session?.tools.list().map((tool) => tool.name)).toEqual([name]);
  });
});
