import path from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { connectMcp } from '../support/mcp-client.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Host } from '../../src/app.js';
import { readOrCreateMcpToken } from '../../src/mcp/mcp-token.js';
import { ManualClock, TEST_TOKEN, tempHermesHome, testConfig } from '../support/config.js';
import { FakeRelay } from '../support/fake-relay.js';
import { callHook } from '../support/hook-call.js';
import { startHost } from '../support/host.js';
import { writePairing } from '../support/pairing.js';

/**
 * conduit_call_user through the MCP SDK's own client, as Hermes reaches it: Hermes' pre_tool_call hook
 * for `mcp_conduit_conduit_call_user` goes through the bridge first and its answer (modified arguments
 * carrying the signed calling turn) is what the tool receives.
 */
const TOOL = 'mcp_conduit_conduit_call_user';
let home: ReturnType<typeof tempHermesHome>;
let relay: FakeRelay;
let clock: ManualClock;
let host: Host & { url: string };
let mcpToken: string;

beforeEach(async () => {
  home = tempHermesHome();
  relay = new FakeRelay();
  await relay.start();
  writePairing(home.root, relay.url);
  clock = new ManualClock(Date.UTC(2026, 11, 4, 9, 0, 0));
  host = await startHost(testConfig(home.root, { clock }), { sleep: async () => {} });
  mcpToken = await readOrCreateMcpToken(path.join(home.root, 'conduit-host'));
});
afterEach(async () => {
  await host.app.close();
  await relay.stop();
  home.cleanup();
});

function mcp(): Promise<Client> {
  return connectMcp(host.url, mcpToken);
}

async function settings(values: Record<string, unknown>): Promise<void> {
  const response = await fetch(`${host.url}/api/plugins/conduit_push/calls`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${TEST_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ settings: values }),
  });
  expect(response.status).toBe(200);
}

/** What Hermes does for one tool call: the hook first (its answer may modify the arguments), then the tool. */
async function toolCall(sessionId: string, args: Record<string, unknown>) {
  const hooked = await callHook(host.url, host.hookToken, {
    hook_event_name: 'pre_tool_call',
    profile: 'default',
    session_id: sessionId,
    tool_name: TOOL,
    tool_input: args,
    extra: { turn_id: `t-${sessionId}`, tool_call_id: 'tc-1' },
  });
  expect(hooked.status).toBe(200);
  const answer = hooked.answer as { action: string; args: Record<string, unknown> };
  expect(answer.action).toBe('modify');
  const client = await mcp();
  try {
    const result = await client.callTool({ name: 'conduit_call_user', arguments: answer.args });
    return { result, structured: result.structuredContent as Record<string, unknown> };
  } finally {
    await client.close();
  }
}

async function turnEnds(sessionId: string) {
  await callHook(host.url, host.hookToken, {
    hook_event_name: 'post_llm_call',
    profile: 'default',
    session_id: sessionId,
    extra: { turn_id: `t-${sessionId}`, assistant_response: 'Here is the summary.' },
  });
  await callHook(host.url, host.hookToken, {
    hook_event_name: 'on_session_end',
    profile: 'default',
    session_id: sessionId,
    extra: { turn_id: `t-${sessionId}`, completed: true },
  });
  await host.calls.settled();
  await host.queue.whenIdle();
}

describe('conduit_call_user', () => {
  it('is offered while paired, and rings when the asking turn ends, with the reason said first', async () => {
    await settings({ enabled: true });
    const client = await mcp();
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual([
      'conduit_status',
      'conduit_call_user',
      'conduit_watch_report',
      'conduit_maps',
    ]);
    await client.close();

    const { structured } = await toolCall('chat-1', {
      reason: 'The deploy finished and needs a look.',
      asked_by_user: true,
    });
    expect(structured).toEqual({ status: 'will_call', when: 'when this turn ends' });
    expect(relay.events).toEqual([]);
    await turnEnds('chat-1');
    expect(relay.events.map((event) => event.body.type)).toEqual(['call.requested']);
    expect(relay.events[0]?.body).toMatchObject({
      session_id: 'chat-1',
      body: 'The deploy finished and needs a look.',
      call: { kind: 'done', session_ids: ['chat-1'], reason: 'The deploy finished and needs a look.' },
    });
  });

  it('is not offered to an unpaired profile', async () => {
    const client = await connectMcp(host.url, mcpToken, 'work');
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(['conduit_status']);
    await client.close();
  });

  it('answers calls_off with the settings link when calls (or the kind of call) are off', async () => {
    const off = await toolCall('chat-2', { reason: 'Done.', asked_by_user: true });
    expect(off.structured).toMatchObject({ status: 'calls_off', link: 'conduit://settings/calls' });
    await settings({ enabled: true, decides: false });
    const decides = await toolCall('chat-2', { reason: 'Worth a call.', asked_by_user: false });
    expect(decides.structured).toMatchObject({
      status: 'calls_off',
      message: expect.stringContaining('Hermes decides'),
    });
    await turnEnds('chat-2');
    expect(relay.events.map((event) => event.body.type)).toEqual(['response.ready']);
  });

  it('a call Hermes decides on first answers check_rules; fits_rules within 10 minutes in the same chat places it', async () => {
    await settings({ enabled: true, decides: true, rules: 'Only if production is down.' });
    const first = await toolCall('ops', { reason: 'Production is down.', asked_by_user: false, fits_rules: true });
    expect(first.structured).toMatchObject({ status: 'check_rules', rules: 'Only if production is down.' });
    // Another chat's confirmation does not count.
    const elsewhere = await toolCall('other', {
      reason: 'Production is down.',
      asked_by_user: false,
      fits_rules: true,
    });
    expect(elsewhere.structured).toMatchObject({ status: 'check_rules' });
    clock.advance(5 * 60_000);
    const confirmed = await toolCall('ops', { reason: 'Production is down.', asked_by_user: false, fits_rules: true });
    expect(confirmed.structured).toMatchObject({ status: 'will_call' });
  });

  it('an old confirmation, or rules changed since, ask again', async () => {
    await settings({ enabled: true, decides: true, rules: 'Only for outages.' });
    await toolCall('ops', { reason: 'Outage.', asked_by_user: false });
    clock.advance(11 * 60_000);
    expect(
      (await toolCall('ops', { reason: 'Outage.', asked_by_user: false, fits_rules: true })).structured,
    ).toMatchObject({
      status: 'check_rules',
    });
    await settings({ rules: 'Only for outages longer than 5 minutes.' });
    expect(
      (await toolCall('ops', { reason: 'Outage.', asked_by_user: false, fits_rules: true })).structured,
    ).toMatchObject({
      status: 'check_rules',
      rules: 'Only for outages longer than 5 minutes.',
    });
  });

  it('a call the user asked for skips the rules', async () => {
    await settings({ enabled: true, rules: 'Only if production is down.' });
    expect((await toolCall('chat-3', { reason: 'As you asked.', asked_by_user: true })).structured).toMatchObject({
      status: 'will_call',
    });
  });

  it('refuses a call whose calling turn it cannot prove (no hook, forged or foreign context), and a subagent', async () => {
    await settings({ enabled: true });
    const client = await mcp();
    for (const context of [undefined, 'forged.token', 'eyJoIjoiLyJ9.AAAA']) {
      const result = await client.callTool({
        name: 'conduit_call_user',
        arguments: { reason: 'Hi.', asked_by_user: true, ...(context ? { _conduit_context: context } : {}) },
      });
      expect(result.isError).toBe(true);
      expect((result.structuredContent as { status: string }).status).toBe('refused');
    }
    await client.close();
    await callHook(host.url, host.hookToken, {
      hook_event_name: 'subagent_start',
      profile: 'default',
      session_id: 'parent',
      extra: { child_session_id: 'child-1', parent_session_id: 'parent' },
    });
    const child = await toolCall('child-1', { reason: 'Hi.', asked_by_user: true });
    expect(child.structured).toMatchObject({ status: 'refused', message: expect.stringContaining('Subagents') });
    expect(
      (await fetch(`${host.url}/api/plugins/conduit_push/calls`, {
        headers: { authorization: `Bearer ${TEST_TOKEN}` },
      }).then((r) => r.json())) as { watches: number },
    ).toMatchObject({ watches: 0 });
  });

  it('a context minted for one profile does not work for another', async () => {
    await settings({ enabled: true });
    writePairing(path.join(home.root, 'profiles', 'work'), relay.url);
    const hooked = await callHook(host.url, host.hookToken, {
      hook_event_name: 'pre_tool_call',
      profile: 'default',
      session_id: 'chat-x',
      tool_name: TOOL,
      tool_input: { reason: 'Hi.', asked_by_user: true },
      extra: { turn_id: 't' },
    });
    const args = (hooked.answer as { args: Record<string, unknown> }).args;
    const client = await connectMcp(host.url, mcpToken, 'work');
    const result = await client.callTool({ name: 'conduit_call_user', arguments: args });
    await client.close();
    expect((result.structuredContent as { status: string }).status).toBe('refused');
  });

  it('leaves every other tool call to Hermes unchanged', async () => {
    const other = await callHook(host.url, host.hookToken, {
      hook_event_name: 'pre_tool_call',
      profile: 'default',
      session_id: 'chat-4',
      tool_name: 'terminal',
      tool_input: { command: 'ls' },
    });
    expect(other).toEqual({ status: 204, answer: null });
  });
});
