import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScriptedAgent } from '../../src/agent/scripted-agent.js';
import { EVENTS_TOPIC } from '../../src/conference/conference-session.js';
import { TOOLS_TOPIC } from '../../src/conference/remote-tools.js';
import { registryName } from '../../src/conference/tool-rules.js';
import {
  openConferenceRoom,
  type ConferenceRoom,
  type GatewayUnderTest,
  type TestParticipant,
} from './conference-harness.js';

const CONSENT_EXPIRES_AT = 2_000_000_000;
const TWELVE_MIB = 12 * 1024 * 1024;

function tool(name: string) {
  return {
    type: 'function',
    function: { name, description: `The ${name} tool.`, parameters: { type: 'object', properties: {} } },
  };
}

/**
 * Makes `owner`'s screen.capture answer with a byte-stream result (`livekit-byte-stream` v1 on a fresh
 * stream id); `open` then starts that stream towards the agent, with its total size when given.
 */
function byteStreamCapture(
  owner: TestParticipant,
  under: GatewayUnderTest,
  result: { mimeType: string; expectedSize: number; summary: string },
) {
  const streamId = randomBytes(16).toString('hex');
  const topic = `hermes-tool-result/${streamId}`;
  owner.local.registerRpcMethod('screen.capture', async () =>
    JSON.stringify({
      type: 'livekit-byte-stream',
      version: 1,
      owner_identity: owner.identity,
      stream_id: streamId,
      topic,
      mime_type: result.mimeType,
      expected_size: result.expectedSize,
      text_summary: result.summary,
    }),
  );
  const open = (totalSize?: number) =>
    owner.local.streamBytes({
      topic,
      streamId,
      mimeType: result.mimeType,
      ...(totalSize === undefined ? {} : { totalSize }),
      destinationIdentities: [under.gateway.agentIdentity],
    });
  return { streamId, topic, open };
}

describe('Conference mode: remote tools by native RPC, policy tiers and byte-stream results', () => {
  let room: ConferenceRoom;
  let under: GatewayUnderTest;
  let alice: TestParticipant;
  let bob: TestParticipant;
  let now = CONSENT_EXPIRES_AT - 60;
  /** Each turn's script is chosen by the typed text: `call <registry name> <json args>`. */
  const agent = new ScriptedAgent((text) => {
    const [, name, args] = /^call (\S+) (.*)$/.exec(text) ?? [];
    return name ? [{ tool: name, arguments: args ?? '{}', then: 'Done.' }] : [{ delta: 'Nothing to do.' }];
  });

  /** Alice types `text`; resolves with the tool output the agent received when the response is done. */
  async function turn(text: string): Promise<string | undefined> {
    const from = alice.events.length;
    const outputs = agent.toolOutputs.length;
    await alice.send(EVENTS_TOPIC, {
      type: 'conversation.item.create',
      item: { type: 'message', role: 'user', content: [{ type: 'input_text', text }] },
    });
    await alice.send(EVENTS_TOPIC, { type: 'response.create' });
    await alice.waitForType('response.done', from);
    return agent.toolOutputs.slice(outputs)[0];
  }

  /** Advertises a catalog and resolves with the agent's answer (registered or rejected). */
  async function register(who: TestParticipant, names: string[]): Promise<string> {
    const from = who.toolMessages.length;
    await who.send(TOOLS_TOPIC, { type: 'conference.tools.register', tools: names.map(tool) });
    return (await who.waitForToolMessage(null, from)).type;
  }

  beforeAll(async () => {
    const remoteToolPolicy = JSON.stringify({
      tools: [
        { participant_identity: 'alice', tool_name: 'camera.snapshot', tier: 1 },
        { participant_identity: 'alice', tool_name: 'screen.capture', tier: 1 },
        {
          participant_identity: 'alice',
          tool_name: 'desktop_notify',
          tier: 2,
          consent_expires_at: CONSENT_EXPIRES_AT,
        },
        { participant_identity: 'alice', tool_name: 'files.delete', tier: 3 },
      ],
    });
    room = await openConferenceRoom({ agent }, { config: { remoteToolPolicy }, gateway: { nowSeconds: () => now } });
    ({ under, alice } = room);
  });

  afterAll(() => room?.close());

  it('tier 1: a registered tool is called by RPC with the arguments as a JSON object, its result goes to the agent', async () => {
    const calls: { payload: string; caller: string }[] = [];
    alice.local.registerRpcMethod('camera.snapshot', async (data) => {
      calls.push({ payload: data.payload, caller: data.callerIdentity });
      return JSON.stringify({ seen: 'a cat', ok: true });
    });
    expect(await register(alice, ['camera.snapshot'])).toBe('conference.tools.registered');
    const name = registryName('alice', 'camera.snapshot');
    expect(under.gateway.session?.tools.list().map((t) => t.name)).toEqual([name]);
    const output = await turn(`call ${name} {"zoom": 2}`);
    expect(calls).toEqual([{ payload: '{"zoom":2}', caller: under.gateway.agentIdentity }]);
    expect(JSON.parse(output ?? '')).toEqual({ seen: 'a cat', ok: true });
    // The agent saw the tool under its registry name.
    expect(agent.turns.at(-1)?.tools.map((t) => t.name)).toContain(name);
  });

  it('tier 3 and unlisted tools reject the whole catalog (and clear the previous one); other participants are not told', async () => {
    expect(await register(alice, ['camera.snapshot', 'files.delete'])).toBe('conference.tools.rejected');
    expect(under.gateway.session?.tools.list()).toEqual([]);
    bob = await room.join('bob');
    expect(await register(bob, ['camera.snapshot'])).toBe('conference.tools.rejected');
    expect(alice.toolMessages.filter((m) => m.type === 'conference.tools.rejected')).toHaveLength(1);
    const audit = under.gateway.session?.tools.audit ?? [];
    expect(
      audit.filter((r) => r.event === 'policy').map((r) => [r.participant_identity, r.tool_name, r.outcome]),
    ).toEqual(
      expect.arrayContaining([
        ['alice', 'files.delete', 'tier3-denied'],
        ['bob', 'camera.snapshot', 'not-allowlisted'],
      ]),
    );
  });

  it('tier 2: allowed while consent is valid, denied at the call once it expired', async () => {
    let notified = 0;
    alice.local.registerRpcMethod('desktop_notify', async () => {
      notified += 1;
      return '"shown"';
    });
    expect(await register(alice, ['desktop_notify'])).toBe('conference.tools.registered');
    const name = registryName('alice', 'desktop_notify');
    expect(await turn(`call ${name} {}`)).toBe('"shown"');
    now = CONSENT_EXPIRES_AT;
    expect(JSON.parse((await turn(`call ${name} {}`)) ?? '')).toEqual({
      error: 'remote tool desktop_notify is not allowed (consent-expired)',
    });
    expect(notified).toBe(1);
    now = CONSENT_EXPIRES_AT - 60;
  });

  it('a 12 MiB byte-stream result: stream-ready to the owner, the bytes over a LiveKit byte stream, a bounded envelope to the agent', async () => {
    const { streamId, topic, open } = byteStreamCapture(alice, under, {
      mimeType: 'application/octet-stream',
      expectedSize: TWELVE_MIB,
      summary: 'A 12 MiB recording.',
    });
    expect(await register(alice, ['screen.capture', 'desktop_notify'])).toBe('conference.tools.registered');
    const from = alice.toolMessages.length;
    const output = turn(`call ${registryName('alice', 'screen.capture')} {}`);
    const ready = await alice.waitForToolMessage('agent:tool-result-stream-ready', from);
    expect(ready).toEqual({ type: 'agent:tool-result-stream-ready', stream_id: streamId, topic });
    const writer = await open(TWELVE_MIB);
    const chunk = new Uint8Array(1024 * 1024).fill(7);
    for (let sent = 0; sent < TWELVE_MIB; sent += chunk.length) await writer.write(chunk);
    await writer.close();
    expect(JSON.parse((await output) ?? '')).toEqual({
      binary_result: { mime_type: 'application/octet-stream', size: TWELVE_MIB, available_to_model: false },
      text_summary: 'A 12 MiB recording.',
    });
  });

  it('a byte stream that overruns its expected size is cancelled and the agent gets the failure', async () => {
    const { streamId, topic, open } = byteStreamCapture(alice, under, {
      mimeType: 'image/png',
      expectedSize: 1000,
      summary: 'A tiny image.',
    });
    const from = alice.toolMessages.length;
    const output = turn(`call ${registryName('alice', 'screen.capture')} {}`);
    await alice.waitForToolMessage('agent:tool-result-stream-ready', from);
    const writer = await open();
    await writer.write(new Uint8Array(1500));
    await writer.close();
    const cancel = await alice.waitForToolMessage('agent:tool-result-stream-cancel', from);
    expect(cancel).toEqual({ type: 'agent:tool-result-stream-cancel', stream_id: streamId, topic });
    expect(JSON.parse((await output) ?? '')).toEqual({ error: 'transfer_incomplete', text_summary: 'A tiny image.' });
  });

  it('an owner’s tools are removed when it leaves the room', async () => {
    expect(under.gateway.session?.tools.list().length).toBe(2);
    const session = under.gateway.session;
    const removed = under.logged(
      'the removal audit',
      (entry) =>
        entry.event === 'remote_tool_audit' && entry.outcome === 'removed' && entry.tool_name === 'screen.capture',
    );
    // Bob keeps the agent in the room.
    await alice.leave();
    await removed;
    expect(session?.tools.list()).toEqual([]);
    expect(
      session?.tools.audit
        .filter((r) => r.event === 'owner_disconnect')
        .map((r) => r.tool_name)
        .sort(),
    ).toEqual(['desktop_notify', 'screen.capture']);
  });
});

describe('Conference mode: a cancelled byte stream that never ends', () => {
  let room: ConferenceRoom;
  let under: GatewayUnderTest;
  let alice: TestParticipant;
  const agent = new ScriptedAgent((text) => [{ tool: text, arguments: '{}' }]);

  beforeAll(async () => {
    const remoteToolPolicy = JSON.stringify({
      tools: [{ participant_identity: 'alice', tool_name: 'screen.capture', tier: 1 }],
    });
    room = await openConferenceRoom({ agent }, { config: { remoteToolPolicy }, gateway: { drainLimitMs: 300 } });
    ({ under, alice } = room);
  });

  afterAll(() => room?.close());

  it('makes the gateway abandon the room generation and join again', async () => {
    const { open } = byteStreamCapture(alice, under, {
      mimeType: 'image/png',
      expectedSize: 1000,
      summary: 'A tiny image.',
    });
    const from = alice.toolMessages.length;
    await alice.send(TOOLS_TOPIC, { type: 'conference.tools.register', tools: [tool('screen.capture')] });
    await alice.waitForToolMessage('conference.tools.registered', from);
    const eventsFrom = alice.events.length;
    await alice.send(EVENTS_TOPIC, {
      type: 'conversation.item.create',
      item: {
        type: 'message',
        role: 'user',
        content: [{ type: 'input_text', text: registryName('alice', 'screen.capture') }],
      },
    });
    await alice.send(EVENTS_TOPIC, { type: 'response.create' });
    await alice.waitForToolMessage('agent:tool-result-stream-ready', from);
    const rejoining = under.reaches('joining');
    const writer = await open();
    // Too many bytes, and the stream is never closed: cancelled, then never drained to its end.
    await writer.write(new Uint8Array(1500));
    await alice.waitForToolMessage('agent:tool-result-stream-cancel', from);
    await rejoining;
    await under.reaches('joined');
    await under.logged('the stuck-stream warning', (entry) => entry.event === 'tool_result_stream_stuck');
    // A fresh session greets alice again; the old one's tools are gone with it.
    await alice.waitForEvent(
      'a second session.created',
      () => alice.types(eventsFrom).includes('session.created'),
      eventsFrom,
    );
    expect(under.gateway.session?.tools.list()).toEqual([]);
    await writer.close().catch(() => undefined);
  });
});
