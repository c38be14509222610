/**
 * Confirm prompts (`present`) through the MCP SDK's own client, as Hermes reaches them (the
 * pre_tool_call hook signs the calling turn first), and POST /present/exchange as Conduit calls it.
 * The nudge goes to a stand-in of the relay's POST /v1/events (the real relay, with sealing, is in
 * present-relay.test.ts). Time moves by hand: a wait ends on the exchange's answer, or on the
 * prompt's expiry or the wait's end fired by the test's timers, never by sleeping.
 */
import { mkdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Host } from '../../src/app.js';
import { httpRelayGateway } from '../../src/delivery/relay-gateway.js';
import { ManualTimers } from '../../src/kernel/timers.js';
import { readOrCreateMcpToken } from '../../src/mcp/mcp-token.js';
import {
  createPrompt,
  lastExchangeAdvertises,
  PRESENT_FILE,
  presentFeature,
  readPrompt,
  relayPresentNudge,
  waitForAnswer,
} from '../../src/features/present/index.js';
import { ManualClock, TEST_TOKEN, tempHermesHome, testConfig } from '../support/config.js';
import { FakeRelay } from '../support/fake-relay.js';
import { callHook } from '../support/hook-call.js';
import { startHost } from '../support/host.js';
import { callToolAsHermes, connectMcp, listToolNames } from '../support/mcp-client.js';
import { writePairing } from '../support/pairing.js';

const TOOL = 'conduit_present';
const home = tempHermesHome();
const clock = new ManualClock(Date.UTC(2026, 11, 4, 9, 0, 0));
const timers = new ManualTimers();
const relay = new FakeRelay();
let host: Host & { url: string };
let mcpToken: string;

beforeAll(async () => {
  mkdirSync(path.join(home.root, 'profiles', 'limits'), { recursive: true });
  await relay.start();
  writePairing(home.root, relay.url);
  const nudge = relayPresentNudge({
    gateway: httpRelayGateway({ userAgent: 'Conduit-Host/test', timeoutMs: 10_000 }),
    clock,
    pluginVersion: '0.1.0',
  });
  host = await startHost(testConfig(home.root, { clock, timers }), { features: [presentFeature({ nudge })] });
  mcpToken = await readOrCreateMcpToken(path.join(home.root, 'conduit-host'));
});
afterAll(async () => {
  await host.app.close();
  await relay.stop();
  home.cleanup();
});

/** Moves the host's clock and fires the timers due by then, as time passing would. */
function pass(ms: number): void {
  clock.advance(ms);
  timers.advance(ms);
}

interface ModelPrompt {
  id: string;
  state: string;
  go_ahead: boolean;
  title: string;
  session_id: string;
  created_at: string;
  expires_at: string;
  finished_at?: string;
  via?: string;
  edit_text?: string;
  note: string;
}
interface ToolAnswer {
  ok: boolean;
  error?: string;
  prompt?: ModelPrompt;
  prompts?: ModelPrompt[];
  phone_notified?: boolean;
  nudge?: string;
}

const listTools = (profile = 'default') => listToolNames(host.url, mcpToken, profile);

/** The hook first (it signs the calling turn into the arguments), then the tool, as Hermes does. */
async function tool(
  args: Record<string, unknown>,
  options: { session?: string; profile?: string; child?: boolean } = {},
): Promise<{ isError: boolean; body: ToolAnswer }> {
  const session = options.session ?? 'chat-1';
  const answer = await callToolAsHermes(host, mcpToken, TOOL, args, {
    profile: options.profile ?? 'default',
    session,
    turn: `t-${session}`,
    toolCall: `tc-${Math.random()}`,
  });
  expect(answer.hookAction).toBe('modify');
  return { isError: answer.isError, body: JSON.parse(answer.text) as ToolAnswer };
}

interface ExchangeResult {
  id: string;
  outcome: 'confirmed' | 'declined' | 'edit';
  via: 'tap' | 'voice';
  edit_text?: string;
}
interface PhonePrompt {
  id: string;
  title: string;
  preview: string;
  action_label: string;
  spoken_yes: string[];
  session_id: string;
  created_at: number;
  expires_at: number;
  maps?: unknown;
}

/** Conduit's exchange: its answers in, the waiting prompts out. */
async function exchange(
  results: ExchangeResult[] = [],
  options: { profile?: string; features?: string[]; bearer?: string | null } = {},
): Promise<{ status: number; body: { ok?: boolean; prompts?: PhonePrompt[]; detail?: string } }> {
  const bearer = options.bearer === undefined ? TEST_TOKEN : options.bearer;
  const response = await fetch(
    `${host.url}/api/plugins/conduit_push/present/exchange?profile=${options.profile ?? 'default'}`,
    {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) },
      body: JSON.stringify({
        installation_id: 'inst-1',
        device: 'iPhone',
        app_version: '1.40',
        features: options.features ?? ['present-v1'],
        results,
      }),
    },
  );
  return { status: response.status, body: (await response.json()) as { prompts?: PhonePrompt[]; detail?: string } };
}

const confirmArgs = (extra: Record<string, unknown> = {}) => ({
  action: 'confirm',
  title: 'Send the reply to Anna',
  preview: '**To:** Anna\n\nSee you at five!',
  action_label: 'Send',
  spoken_yes: ['send it'],
  ...extra,
});

/** Starts a confirm that waits, and resolves once the tool is waiting on the answer (its timer is set). */
async function waitingConfirm(extra: Record<string, unknown>, options: { session?: string } = {}) {
  const before = timers.waiting;
  const call = tool(confirmArgs(extra), options);
  await Promise.race([timers.untilWaiting(before + 1), call]);
  const waiting = (await exchange()).body.prompts ?? [];
  const prompt = waiting[waiting.length - 1];
  if (!prompt) throw new Error(`the confirm did not wait: ${JSON.stringify(await call)}`);
  return { call, prompt };
}

describe('conduit_present: visibility and the exchange route', () => {
  it('is offered only once a Conduit with present-v1 has exchanged with the profile', async () => {
    expect(await listTools()).not.toContain(TOOL);
    expect((await exchange([], { features: [] })).status).toBe(200);
    expect(await listTools()).not.toContain(TOOL);
    const first = await exchange([], { features: ['present-v1'] });
    expect(first).toEqual({ status: 200, body: { ok: true, prompts: [] } });
    expect(await listTools()).toContain(TOOL);
    // Another profile has no such Conduit yet.
    expect(await listTools('work')).not.toContain(TOOL);
  });

  it('tells other features whether the last exchange advertised maps-navigate', async () => {
    const nowS = clock.now() / 1000;
    expect(await lastExchangeAdvertises(home.root, 'maps-navigate', nowS)).toBe(false);
    await exchange([], { features: ['present-v1', 'maps-navigate'] });
    expect(await lastExchangeAdvertises(home.root, 'maps-navigate', nowS)).toBe(true);
    await exchange([], { features: ['present-v1'] });
    expect(await lastExchangeAdvertises(home.root, 'maps-navigate', nowS)).toBe(false);
  });

  it("carries another feature's maps payload to the phone (navigate's prompt), and its wait wakes on the answer", async () => {
    const nowS = clock.now() / 1000;
    const created = await createPrompt(
      home.root,
      {
        title: 'Directions to Dishoom',
        preview: 'Open Apple Maps with **driving** directions to Dishoom.',
        actionLabel: 'Go',
        spokenYes: ['go'],
        sessionId: 'chat-maps',
        ttlMinutes: 10,
        maps: { to: 'place_id:I7C250D2CDCB364A', mode: 'automobile' },
      },
      nowS,
    );
    if (!created.ok) throw new Error(created.message);
    const waiting = (await exchange()).body.prompts ?? [];
    expect(waiting).toEqual([
      expect.objectContaining({
        id: created.prompt.id,
        action_label: 'Go',
        maps: { to: 'place_id:I7C250D2CDCB364A', mode: 'automobile' },
      }),
    ]);
    const answered = waitForAnswer(home.root, created.prompt.id, { waitMs: 30_000, clock, timers });
    await exchange([{ id: created.prompt.id, outcome: 'confirmed', via: 'voice' }]);
    expect(await answered).toMatchObject({ state: 'confirmed', via: 'voice' });
  });

  it('answers 401 to a caller without the dashboard credential, and 400 to a malformed body', async () => {
    const refused = await exchange([], { bearer: null });
    expect(refused.status).toBe(401);
    expect((await exchange([], { bearer: 'wrong-token-wrong-token-wrong' })).status).toBe(401);
    const malformed = await fetch(`${host.url}/api/plugins/conduit_push/present/exchange`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_TOKEN}` },
      body: JSON.stringify({ installation_id: 'inst-1', device: 'iPhone', app_version: '1', results: [{ id: 'x' }] }),
    });
    expect(malformed.status).toBe(400);
    expect(((await malformed.json()) as { detail: string }).detail).toMatch(/^Invalid exchange: results\.0\./);
  });

  it('refuses a subagent and a call whose turn it cannot prove', async () => {
    await callHook(host.url, host.hookToken, {
      hook_event_name: 'subagent_start',
      profile: 'default',
      session_id: 'chat-1',
      extra: { child_session_id: 'child-1', parent_session_id: 'chat-1' },
    });
    const child = await tool(confirmArgs(), { session: 'child-1' });
    expect(child.isError).toBe(true);
    expect(child.body.error).toBe('conduit_present is not available to subagents; the main chat can ask the user.');
    const client = await connectMcp(host.url, mcpToken);
    const unproved = await client.callTool({ name: TOOL, arguments: confirmArgs() });
    await client.close();
    expect(unproved.isError).toBe(true);
    expect(JSON.stringify(unproved.content)).toContain('conduit setup-hermes');
    expect((await exchange()).body.prompts).toEqual([]);
  });
});

describe('conduit_present: confirm and the answers', () => {
  it('nudges the phone with phone.changes present:<id>, and a tap while Hermes waits confirms', async () => {
    const before = relay.events.length;
    const { call, prompt } = await waitingConfirm({ wait_seconds: 120 });
    expect(prompt).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{24}$/),
      title: 'Send the reply to Anna',
      preview: '**To:** Anna\n\nSee you at five!',
      action_label: 'Send',
      spoken_yes: ['send it'],
      session_id: 'chat-1',
      created_at: clock.now() / 1000,
      expires_at: clock.now() / 1000 + 30 * 60,
    });
    const nudges = relay.events.slice(before);
    expect(nudges).toHaveLength(1);
    expect(nudges[0]?.body).toMatchObject({
      type: 'phone.changes',
      mode: 'alert',
      event_id: `present:${prompt.id}`,
      title: 'Send the reply to Anna',
      session_id: 'chat-1',
      profile: 'default',
    });

    pass(5_000);
    const answered = await exchange([{ id: prompt.id, outcome: 'confirmed', via: 'tap' }]);
    expect(answered.body.prompts).toEqual([]);
    const result = await call;
    expect(result.isError).toBe(false);
    expect(result.body).toMatchObject({
      ok: true,
      phone_notified: true,
      prompt: { id: prompt.id, state: 'confirmed', go_ahead: true, via: 'tap' },
    });
    expect(result.body.prompt?.note).toContain('Go ahead');
    // Told once: status has nothing new for this chat.
    expect((await tool({ action: 'status' })).body.prompts).toEqual([]);
    const file = statSync(path.join(home.root, PRESENT_FILE));
    expect(file.mode & 0o777).toBe(0o600);
  });

  it('confirms by voice in a call while Hermes waits', async () => {
    const { call, prompt } = await waitingConfirm({ wait_seconds: 60 });
    await exchange([{ id: prompt.id, outcome: 'confirmed', via: 'voice' }]);
    expect((await call).body.prompt).toMatchObject({ state: 'confirmed', go_ahead: true, via: 'voice' });
  });

  it('a decline is not a go-ahead', async () => {
    const { call, prompt } = await waitingConfirm({ wait_seconds: 60 });
    await exchange([{ id: prompt.id, outcome: 'declined', via: 'tap' }]);
    const result = (await call).body.prompt;
    expect(result).toMatchObject({ state: 'declined', go_ahead: false });
    expect(result?.note).toBe('The user declined. Do not go ahead.');
  });

  it('an edit carries the corrected request and is not a go-ahead', async () => {
    const { call, prompt } = await waitingConfirm({ wait_seconds: 60 });
    await exchange([{ id: prompt.id, outcome: 'edit', edit_text: ' Say six, not five ', via: 'voice' }]);
    expect((await call).body.prompt).toMatchObject({
      state: 'edit',
      go_ahead: false,
      edit_text: 'Say six, not five',
      via: 'voice',
    });
  });

  it('expires while Hermes waits, then the phone no longer gets it and a late answer is ignored', async () => {
    const { call, prompt } = await waitingConfirm({ wait_seconds: 120, ttl_minutes: 1 });
    pass(60_000);
    const result = (await call).body.prompt;
    expect(result).toMatchObject({ id: prompt.id, state: 'expired', go_ahead: false });
    expect((await exchange([{ id: prompt.id, outcome: 'confirmed', via: 'tap' }])).body.prompts).toEqual([]);
    expect((await tool({ action: 'status', id: prompt.id })).body.prompt?.state).toBe('expired');
  });

  it('a wait that ends unanswered says waiting, and status tells the answer once it comes', async () => {
    const { call, prompt } = await waitingConfirm({ wait_seconds: 10 }, { session: 'chat-2' });
    pass(10_000);
    const waited = (await call).body.prompt;
    expect(waited).toMatchObject({ state: 'waiting', go_ahead: false });
    expect(waited?.note).toContain('Do not go ahead');
    // status lists this chat's waiting prompts (another chat's are not its business).
    expect((await tool({ action: 'status' }, { session: 'chat-2' })).body.prompts?.map((p) => p.id)).toEqual([
      prompt.id,
    ]);
    expect((await tool({ action: 'status' }, { session: 'chat-3' })).body.prompts).toEqual([]);
    await exchange([{ id: prompt.id, outcome: 'declined', via: 'tap' }]);
    const told = await tool({ action: 'status' }, { session: 'chat-2' });
    expect(told.body.prompts?.map((p) => [p.id, p.state])).toEqual([[prompt.id, 'declined']]);
    // Seen now: not repeated, but still readable by id for a week.
    expect((await tool({ action: 'status' }, { session: 'chat-2' })).body.prompts).toEqual([]);
    expect((await tool({ action: 'status', id: prompt.id }, { session: 'chat-9' })).body.prompt?.state).toBe(
      'declined',
    );
  });

  it('cancel takes a prompt back, wakes a wait on it, and a later answer is ignored', async () => {
    const { call, prompt } = await waitingConfirm({ wait_seconds: 120 });
    const cancelled = await tool({ action: 'cancel', id: prompt.id }, { session: 'chat-5' });
    expect(cancelled.body.prompt).toMatchObject({ state: 'cancelled', go_ahead: false });
    expect((await call).body.prompt).toMatchObject({ id: prompt.id, state: 'cancelled', go_ahead: false });
    expect((await exchange([{ id: prompt.id, outcome: 'confirmed', via: 'tap' }])).body.prompts).toEqual([]);
    expect((await tool({ action: 'status', id: prompt.id })).body.prompt?.state).toBe('cancelled');
    // A finished prompt keeps its state; an unknown id is refused.
    expect((await tool({ action: 'cancel', id: prompt.id })).body.prompt?.state).toBe('cancelled');
    const unknown = await tool({ action: 'cancel', id: 'nope' });
    expect(unknown).toEqual({
      isError: true,
      body: { ok: false, error: 'No confirm prompt nope (answers are kept a week).' },
    });
  });

  it('the first answer wins; answers for unknown or finished prompts are ignored', async () => {
    const a = (await tool(confirmArgs())).body.prompt?.id ?? '';
    const b = (await tool(confirmArgs())).body.prompt?.id ?? '';
    const first = await exchange([
      { id: a, outcome: 'declined', via: 'tap' },
      { id: 'unknown-prompt', outcome: 'confirmed', via: 'tap' },
    ]);
    expect(first.status).toBe(200);
    expect(first.body.prompts?.map((p) => p.id)).toEqual([b]);
    await exchange([{ id: a, outcome: 'confirmed', via: 'voice' }]);
    expect((await readPrompt(home.root, a, clock.now() / 1000))?.state).toBe('declined');

    // Two phones answering at once: one answer is kept, whole.
    const both = await Promise.all([
      exchange([{ id: b, outcome: 'confirmed', via: 'tap' }]),
      exchange([{ id: b, outcome: 'edit', edit_text: 'later', via: 'voice' }]),
    ]);
    expect(both.map((answer) => answer.status)).toEqual([200, 200]);
    const kept = await readPrompt(home.root, b, clock.now() / 1000);
    expect([
      ['confirmed', 'tap', null],
      ['edit', 'voice', 'later'],
    ]).toContainEqual([kept?.state, kept?.via, kept?.edit_text]);
  });

  it('keeps answers a week', async () => {
    const id = (await tool(confirmArgs())).body.prompt?.id ?? '';
    await exchange([{ id, outcome: 'confirmed', via: 'tap' }]);
    pass(7 * 24 * 3600_000 - 1000);
    expect((await tool({ action: 'status', id })).body.prompt?.state).toBe('confirmed');
    pass(1000);
    expect((await tool({ action: 'status', id })).body).toEqual({
      ok: false,
      error: `No confirm prompt ${id} (answers are kept a week).`,
    });
  });
});

describe('conduit_present: a relay that refuses phone.changes', () => {
  it('leaves the prompt waiting for the phone to find on its next exchange', async () => {
    relay.scripted.push({ status: 400, body: { error: 'invalid_event_type' } });
    const created = await tool(confirmArgs({ title: 'Buy the tickets' }));
    expect(created.isError).toBe(false);
    expect(created.body).toMatchObject({ ok: true, phone_notified: false, prompt: { state: 'waiting' } });
    expect(created.body.nudge).toContain("doesn't support this notification");
    const found = await exchange();
    expect(found.body.prompts?.map((p) => p.title)).toContain('Buy the tickets');
    await tool({ action: 'cancel', id: created.body.prompt?.id });
  });

  it('an unpaired profile still keeps the prompt for the exchange', async () => {
    await exchange([], { profile: 'work' });
    const created = await tool(confirmArgs(), { profile: 'work' });
    expect(created.body).toMatchObject({ ok: true, phone_notified: false, prompt: { state: 'waiting' } });
    expect((await exchange([], { profile: 'work' })).body.prompts).toHaveLength(1);
  });
});

describe('conduit_present: limits at their boundaries', () => {
  const limitsHome = path.join(home.root, 'profiles', 'limits');
  const refused = async (extra: Record<string, unknown>) => {
    const answer = await tool(confirmArgs(extra), { profile: 'limits' });
    expect(answer.isError).toBe(true);
    return answer.body.error;
  };
  const accepted = async (extra: Record<string, unknown>) => {
    const answer = await tool(confirmArgs(extra), { profile: 'limits' });
    expect(answer.body.error).toBeUndefined();
    const id = answer.body.prompt?.id ?? '';
    await tool({ action: 'cancel', id }, { profile: 'limits' });
    return answer.body.prompt;
  };

  it('bounds every field the phone shows', async () => {
    pass(3600_000);
    await exchange([], { profile: 'limits' });
    expect(await accepted({ title: 'T'.repeat(80) })).toMatchObject({ title: 'T'.repeat(80) });
    expect(await refused({ title: 'T'.repeat(81) })).toBe('title must be at most 80 characters');
    expect(await refused({ title: '   ' })).toBe('title must not be empty');
    await accepted({ preview: 'p'.repeat(2000) });
    expect(await refused({ preview: 'p'.repeat(2001) })).toBe('preview must be at most 2000 characters');
    await accepted({ action_label: 'a'.repeat(24) });
    expect(await refused({ action_label: 'a'.repeat(25) })).toBe('action_label must be at most 24 characters');
    await accepted({ spoken_yes: ['one', 'two', 'three', 'four', 'five'] });
    expect(await refused({ spoken_yes: ['one', 'two', 'three', 'four', 'five', 'six'] })).toBe(
      'spoken_yes takes at most 5 phrases',
    );
    await accepted({ spoken_yes: ['y'.repeat(40)] });
    expect(await refused({ spoken_yes: ['y'.repeat(41)] })).toBe(
      'each spoken_yes phrase must be at most 40 characters',
    );
    const day = await accepted({ ttl_minutes: 1440 });
    expect(Date.parse(day?.expires_at ?? '') - Date.parse(day?.created_at ?? '')).toBe(1440 * 60_000);
    const standard = await accepted({});
    expect(Date.parse(standard?.expires_at ?? '') - Date.parse(standard?.created_at ?? '')).toBe(30 * 60_000);
    expect(await refused({ ttl_minutes: 1441 })).toBe('ttl_minutes must be at most 1440');
    expect(await refused({ ttl_minutes: 0 })).toBe('ttl_minutes must be at least 1');
    expect(await refused({ wait_seconds: 121 })).toBe('wait_seconds must be at most 120');
    expect(await refused({ wait_seconds: -1 })).toBe('wait_seconds must be 0 or more');
  });

  it('bounds what the phone sends: an edit of 2,000 characters is kept, one of 2,001 is a 400', async () => {
    const id = (await tool(confirmArgs(), { profile: 'limits' })).body.prompt?.id ?? '';
    const long = await exchange([{ id: 'not-a-prompt', outcome: 'edit', edit_text: 'e'.repeat(2001), via: 'tap' }], {
      profile: 'limits',
    });
    expect(long.status).toBe(400);
    expect(long.body.detail).toMatch(/^Invalid exchange: results\.0\.edit_text /);
    expect((await readPrompt(limitsHome, id, clock.now() / 1000))?.state).toBe('waiting');
    const edited = await exchange([{ id, outcome: 'edit', edit_text: 'e'.repeat(2000), via: 'tap' }], {
      profile: 'limits',
    });
    expect(edited.status).toBe(200);
    expect((await tool({ action: 'status', id }, { profile: 'limits' })).body.prompt).toMatchObject({
      state: 'edit',
      edit_text: 'e'.repeat(2000),
    });
  });

  it('waits at most 120 seconds: still waiting at 119.999 s, answered "waiting" at 120 s', async () => {
    // At 119.999 s the wait is still on: an answer then is the one Hermes gets.
    let before = timers.waiting;
    const answeredLate = tool(confirmArgs({ wait_seconds: 120 }), { profile: 'limits' });
    await timers.untilWaiting(before + 1);
    pass(119_999);
    const late = ((await exchange([], { profile: 'limits' })).body.prompts ?? []).at(-1);
    await exchange([{ id: late?.id ?? '', outcome: 'confirmed', via: 'tap' }], { profile: 'limits' });
    expect((await answeredLate).body.prompt).toMatchObject({ id: late?.id, state: 'confirmed', go_ahead: true });

    // At 120 s it ends unanswered, and an answer after that is for status to tell.
    before = timers.waiting;
    const call = tool(confirmArgs({ wait_seconds: 120 }), { profile: 'limits' });
    await timers.untilWaiting(before + 1);
    pass(119_999);
    pass(1);
    const answer = await call;
    expect(answer.body.prompt?.state).toBe('waiting');
    await tool({ action: 'cancel', id: answer.body.prompt?.id }, { profile: 'limits' });
  });

  it('a prompt waits 30 minutes by default: the phone gets it until then, and it is expired at 30', async () => {
    const created = await tool(confirmArgs({ title: 'Default wait' }), { profile: 'limits', session: 'chat-ttl' });
    const id = created.body.prompt?.id ?? '';
    pass(30 * 60_000 - 1000);
    expect((await exchange([], { profile: 'limits' })).body.prompts?.map((p) => p.id)).toContain(id);
    pass(1000);
    expect((await exchange([], { profile: 'limits' })).body.prompts?.map((p) => p.id)).not.toContain(id);
    expect((await tool({ action: 'status', id }, { profile: 'limits' })).body.prompt).toMatchObject({
      state: 'expired',
      go_ahead: false,
    });
    // An answer after the expiry is ignored.
    await exchange([{ id, outcome: 'confirmed', via: 'voice' }], { profile: 'limits' });
    expect((await readPrompt(limitsHome, id, clock.now() / 1000))?.state).toBe('expired');
  });

  it('takes 20 prompts an hour and holds 20 waiting at once', async () => {
    pass(3600_000);
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      const answer = await tool(confirmArgs({ ttl_minutes: 1440 }), { profile: 'limits' });
      expect(answer.body.error).toBeUndefined();
      ids.push(answer.body.prompt?.id ?? '');
      pass(1000);
    }
    expect(await refused({})).toMatch(/^This profile asked 20 confirm prompts in the last hour/);
    // The oldest leaves the hour: the 20 still waiting are the bound now.
    pass(3600_000 - 20_000 + 1000);
    expect(await refused({})).toMatch(/^20 confirm prompts are already waiting/);
    await tool({ action: 'cancel', id: ids[0] }, { profile: 'limits' });
    await accepted({});
    for (const id of ids) await tool({ action: 'cancel', id }, { profile: 'limits' });
  });

  it('takes 60 exchanges a minute per profile, then 429 with a clear detail', async () => {
    pass(60_000);
    for (let i = 0; i < 60; i++) expect((await exchange([], { profile: 'limits' })).status).toBe(200);
    const over = await exchange([], { profile: 'limits' });
    expect(over).toEqual({
      status: 429,
      body: { detail: 'Too many present exchanges for this profile (at most 60 a minute); try again shortly' },
    });
    // Another profile has its own minute.
    expect((await exchange([], { profile: 'work' })).status).toBe(200);
    pass(60_000);
    expect((await exchange([], { profile: 'limits' })).status).toBe(200);
  });
});
