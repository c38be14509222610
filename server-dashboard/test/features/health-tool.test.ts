import path from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { connectMcp } from '../support/mcp-client.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HEALTH_LABEL } from '@conduit/contracts/dashboard/health';
import type { Host } from '../../src/app.js';
import { readOrCreateMcpToken } from '../../src/mcp/mcp-token.js';
import { ManualClock, tempHermesHome, testConfig } from '../support/config.js';
import { callHook } from '../support/hook-call.js';
import { startHost } from '../support/host.js';
import { PhoneStandIn } from '../support/phone-stand-in.js';

/**
 * conduit_health through the MCP SDK's own client, as Hermes reaches it (the pre_tool_call hook signs
 * the calling turn first): offered only once a phone has synced Health data, read only, refused to a
 * subagent and to a call whose turn cannot be proved.
 */
const TOOL = 'mcp_conduit_conduit_health';
const DAY = 1_780_000_000 - (1_780_000_000 % 86_400);
const home = tempHermesHome();
const clock = new ManualClock((DAY + 12 * 3600) * 1000);
let host: Host & { url: string };
let mcpToken: string;

beforeAll(async () => {
  host = await startHost(testConfig(home.root, { clock }));
  mcpToken = await readOrCreateMcpToken(path.join(home.root, 'conduit-host'));
});
afterAll(async () => {
  await host.app.close();
  home.cleanup();
});

async function tools(): Promise<string[]> {
  const client = await mcp();
  try {
    return (await client.listTools()).tools.map((tool) => tool.name);
  } finally {
    await client.close();
  }
}

function mcp(): Promise<Client> {
  return connectMcp(host.url, mcpToken);
}

/** The hook first (it signs the calling turn into the arguments), then the tool, as Hermes does. */
async function toolCall(sessionId: string, args: Record<string, unknown>) {
  const hooked = await callHook(host.url, host.hookToken, {
    hook_event_name: 'pre_tool_call',
    profile: 'default',
    session_id: sessionId,
    tool_name: TOOL,
    tool_input: args,
    extra: { turn_id: `t-${sessionId}`, tool_call_id: 'tc-1' },
  });
  const answer = hooked.answer as { action: string; args: Record<string, unknown> };
  expect(answer.action).toBe('modify');
  const client = await mcp();
  try {
    return await client.callTool({ name: 'conduit_health', arguments: answer.args });
  } finally {
    await client.close();
  }
}

function preLlmCall(profile: string, sessionId: string) {
  return callHook(host.url, host.hookToken, {
    hook_event_name: 'pre_llm_call',
    profile,
    session_id: sessionId,
    extra: { turn_id: `t-${sessionId}` },
  });
}

const textOf = (result: Awaited<ReturnType<typeof toolCall>>) =>
  (result.content as { type: string; text: string }[])[0]?.text ?? '';

describe('conduit_health', () => {
  it('is not offered before a phone has synced Health data, and is once one has', async () => {
    expect(await tools()).not.toContain('conduit_health');
    // Nothing shared: no "Conduit first" line either.
    expect((await preLlmCall('default', 'chat-0')).answer).toBeNull();
    const phone = new PhoneStandIn(host.url, 'health', HEALTH_LABEL, 'iphone-1');
    expect((await phone.agree()).status).toBe(200);
    // A key alone shares nothing yet.
    expect(await tools()).not.toContain('conduit_health');
    const sent = await phone.send({
      v: 1,
      items: [
        {
          kind: 'total',
          window: 'day',
          metric: 'stepCount',
          start: DAY,
          value: 8123,
          unit: 'count',
          computed_at: DAY + 3600,
        },
      ],
    });
    expect(sent.status).toBe(200);
    expect(await tools()).toContain('conduit_health');
    // What is shared is looked up at most once a minute: the next minute's turn names it.
    clock.advance(60_000);
    expect((await preLlmCall('default', 'chat-0')).answer).toEqual({
      context:
        "Conduit: the user's phone shares health data with this profile. For that data use the Conduit tool (conduit_health) before other tools, skills or CLIs.",
    });
    // Another profile shares nothing; a subagent's turn gets no line.
    expect((await preLlmCall('work', 'work-chat')).answer).toBeNull();
    await callHook(host.url, host.hookToken, {
      hook_event_name: 'subagent_start',
      profile: 'default',
      session_id: 'chat-0',
      extra: { child_session_id: 'child-0', parent_session_id: 'chat-0' },
    });
    expect((await preLlmCall('default', 'child-0')).answer).toBeNull();
  });

  it("reads the shared data for the main chat's turn", async () => {
    const result = await toolCall('chat-1', { action: 'daily', metric: 'stepCount', days: 1 });
    expect(result.isError).toBeFalsy();
    expect(JSON.parse(textOf(result))).toMatchObject({ ok: true, totals: [expect.objectContaining({ value: 8123 })] });
    const tooLong = await toolCall('chat-1', {
      action: 'daily',
      days: 92,
      start_date: '2026-01-01',
      end_date: '2026-06-30',
    });
    expect(tooLong.isError).toBe(true);
    expect(textOf(tooLong)).toBe('A read covers at most 92 days');
  });

  it('refuses a subagent and a call whose turn it cannot prove', async () => {
    const client = await mcp();
    const unproved = await client.callTool({ name: 'conduit_health', arguments: { action: 'overview' } });
    await client.close();
    expect(unproved.isError).toBe(true);
    expect(textOf(unproved)).toContain('conduit setup-hermes');
    await callHook(host.url, host.hookToken, {
      hook_event_name: 'subagent_start',
      profile: 'default',
      session_id: 'parent',
      extra: { child_session_id: 'child-1', parent_session_id: 'parent' },
    });
    const child = await toolCall('child-1', { action: 'overview' });
    expect(child.isError).toBe(true);
    expect(textOf(child)).toContain('not available to subagents');
  });
});
