import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Host } from '../../src/app.js';
import { toolCategory } from '../../src/features/live-activities/reporter.js';
import { ManualTimers } from '../../src/kernel/timers.js';
import { ManualClock, tempHermesHome, testConfig } from '../support/config.js';
import { FakeRelay } from '../support/fake-relay.js';
import { callHook } from '../support/hook-call.js';
import { startHost } from '../support/host.js';
import { writePairing } from '../support/pairing.js';

/**
 * Lock Screen progress through the host: Hermes' hooks (as the bridge posts them) become reports on
 * the relay's POST /v1/live-activities/progress, coalesced and paced as the seed says. Time moves by
 * hand (clock and timers); nothing waits on the wall clock.
 */
let home: ReturnType<typeof tempHermesHome>;
let relay: FakeRelay;
let clock: ManualClock;
let timers: ManualTimers;
let host: Host & { url: string };

beforeEach(async () => {
  home = tempHermesHome();
  relay = new FakeRelay();
  await relay.start();
  writePairing(home.root, relay.url);
  clock = new ManualClock(Date.UTC(2026, 11, 4, 9, 0, 0));
  timers = new ManualTimers();
  host = await startHost(testConfig(home.root, { clock, timers }), { sleep: async () => {} });
});
afterEach(async () => {
  await host.app.close();
  await relay.stop();
  home.cleanup();
});

async function hook(name: string, sessionId: string, fields: Record<string, unknown> = {}) {
  await callHook(host.url, host.hookToken, {
    hook_event_name: name,
    profile: 'default',
    session_id: sessionId,
    ...fields,
  });
  await host.progress.settled();
}

/** Moves the clock and the timers together, then waits for the reports that fired. */
async function advance(ms: number) {
  clock.advance(ms);
  timers.advance(ms);
  await host.progress.settled();
}

const STARTED = Math.floor(Date.UTC(2026, 11, 4, 9, 0, 0) / 1000);

describe('Live Activity reports', () => {
  it('reports the start at once, coalesces changes to one report per 5 s, and sends the end at once', async () => {
    (relay.liveActivities as Set<string>).add('chat-1');
    await hook('pre_llm_call', 'chat-1', { extra: { turn_id: 't1' } });
    expect(relay.progress).toEqual([{ session_id: 'chat-1', phase: 'thinking', tool_count: 0, started_at: STARTED }]);
    await hook('pre_tool_call', 'chat-1', { tool_name: 'terminal', tool_input: { command: 'make' } });
    await hook('pre_tool_call', 'chat-1', { tool_name: 'read_file', tool_input: { path: 'a' } });
    expect(relay.progress).toHaveLength(1);
    await advance(5_000);
    expect(relay.progress[1]).toEqual({
      session_id: 'chat-1',
      phase: 'tool',
      tool_category: 'files',
      tool_count: 2,
      started_at: STARTED,
    });
    await hook('pre_approval_request', 'chat-1', { extra: { session_key: 'k', description: 'Deploy', turn_id: 't1' } });
    await advance(5_000);
    expect(relay.progress[2]).toMatchObject({ phase: 'approval', tool_count: 2 });
    await hook('post_llm_call', 'chat-1', { extra: { assistant_response: 'Done.', turn_id: 't1' } });
    await hook('on_session_end', 'chat-1', { extra: { completed: true, turn_id: 't1' } });
    expect(relay.progress.at(-1)).toEqual({
      session_id: 'chat-1',
      phase: 'done',
      tool_count: 2,
      started_at: STARTED,
      end: true,
    });
    expect(host.progress.following).toBe(0);
  });

  it('asks about a turn nobody watches only every 15 s', async () => {
    await hook('pre_llm_call', 'unwatched');
    expect(relay.progress).toHaveLength(1);
    await hook('pre_tool_call', 'unwatched', { tool_name: 'web_search' });
    await advance(5_000);
    expect(relay.progress).toHaveLength(1);
    await advance(10_000);
    expect(relay.progress).toHaveLength(2);
    expect(relay.progress[1]).toMatchObject({ phase: 'tool', tool_category: 'web' });
  });

  it('a relay without the route is left alone for 30 minutes', async () => {
    relay.liveActivities = false;
    await hook('pre_llm_call', 'old-relay');
    await hook('on_session_end', 'old-relay', { extra: { completed: true } });
    await hook('pre_llm_call', 'old-relay-2');
    expect(relay.progress).toEqual([]);
    relay.liveActivities = new Set();
    await advance(29 * 60_000);
    await hook('pre_llm_call', 'old-relay-3');
    expect(relay.progress).toEqual([]);
    await advance(61_000);
    await hook('pre_llm_call', 'old-relay-4');
    expect(relay.progress).toEqual([
      { session_id: 'old-relay-4', phase: 'thinking', tool_count: 0, started_at: expect.any(Number) },
    ]);
  });

  it('redact on leaves the tool category out; subagents report nothing of their own', async () => {
    writePairing(home.root, relay.url, { redact_content: true });
    (relay.liveActivities as Set<string>).add('private');
    await hook('pre_llm_call', 'private');
    await hook('pre_tool_call', 'private', { tool_name: 'browser_navigate' });
    await advance(5_000);
    expect(relay.progress[1]).toEqual({ session_id: 'private', phase: 'tool', tool_count: 1, started_at: STARTED });
    await hook('subagent_start', 'private', { extra: { child_session_id: 'kid', parent_session_id: 'private' } });
    await hook('pre_llm_call', 'kid');
    await hook('on_session_end', 'kid', { extra: { completed: true } });
    expect(relay.progress.filter((report) => report.session_id === 'kid')).toEqual([]);
  });

  it('a failed or stopped turn ends the activity with that phase', async () => {
    await hook('pre_llm_call', 'f');
    await hook('on_session_end', 'f', { extra: { completed: false } });
    await hook('pre_llm_call', 's');
    await hook('on_session_end', 's', { extra: { interrupted: true } });
    expect(relay.progress.filter((report) => report.end).map((report) => [report.session_id, report.phase])).toEqual([
      ['f', 'failed'],
      ['s', 'stopped'],
    ]);
  });
});

describe('context use (Hermes with pre_api_request / post_api_request)', () => {
  it('reports how full the context is, coalesced with the rest, and carries it into the next turn', async () => {
    (relay.liveActivities as Set<string>).add('ctx');
    await hook('pre_llm_call', 'ctx', { extra: { turn_id: 't1' } });
    expect(relay.progress).toEqual([{ session_id: 'ctx', phase: 'thinking', tool_count: 0, started_at: STARTED }]);
    // The request's own estimate, then what the provider counted (cached prompt tokens fill it too).
    await hook('pre_api_request', 'ctx', { extra: { approx_input_tokens: 30_000, context_length: 200_000 } });
    await hook('post_api_request', 'ctx', {
      extra: {
        usage: { input_tokens: 10_000, cache_read_tokens: 40_000, output_tokens: 900 },
        context_length: 200_000,
      },
    });
    expect(relay.progress).toHaveLength(1);
    await advance(5_000);
    expect(relay.progress[1]).toEqual({
      session_id: 'ctx',
      phase: 'thinking',
      tool_count: 0,
      context_pct: 25,
      started_at: STARTED,
    });
    // A request that names no window is measured against the one an earlier request named.
    await hook('pre_tool_call', 'ctx', { tool_name: 'terminal' });
    await hook('pre_api_request', 'ctx', { extra: { approx_input_tokens: 100_000 } });
    await advance(5_000);
    expect(relay.progress[2]).toMatchObject({ phase: 'tool', tool_count: 1, context_pct: 50 });
    // The same percentage again makes no report of its own.
    await hook('post_api_request', 'ctx', { extra: { usage: { prompt_tokens: 100_400 } } });
    await advance(5_000);
    expect(relay.progress).toHaveLength(3);
    await hook('on_session_end', 'ctx', { extra: { completed: true } });
    expect(relay.progress.at(-1)).toMatchObject({ phase: 'done', context_pct: 50, end: true });
    await hook('pre_llm_call', 'ctx', { extra: { turn_id: 't2' } });
    expect(relay.progress.at(-1)).toMatchObject({ phase: 'thinking', tool_count: 0, context_pct: 50 });
  });

  it("a subagent's model requests do not move its parent's Live Activity", async () => {
    await hook('pre_llm_call', 'parent');
    await hook('subagent_start', 'parent', { extra: { child_session_id: 'kid', parent_session_id: 'parent' } });
    await hook('post_api_request', 'kid', { extra: { usage: { prompt_tokens: 90_000 }, context_length: 100_000 } });
    await advance(60_000);
    expect(relay.progress.some((report) => 'context_pct' in report)).toBe(false);
  });
});

describe('tool categories', () => {
  it.each([
    ['terminal', 'terminal'],
    ['execute_code', 'terminal'],
    ['write_file', 'files'],
    ['patch', 'files'],
    ['web_search', 'web'],
    ['browser_click', 'browser'],
    ['mcp_github_list_pull_requests', 'connector'],
    ['memory', 'memory'],
    ['image_generate', 'media'],
    ['delegate_task', 'agent'],
    ['session_search', 'memory'],
    ['read_thread', 'files'],
    ['spreadsheet', 'other'],
    ['something_new', 'other'],
  ])('%s is %s', (tool, category) => {
    expect(toolCategory(tool)).toBe(category);
  });
});
