import path from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HEALTH_LABEL } from '@conduit/contracts/dashboard/health';
import { PHONE_LABEL } from '@conduit/contracts/dashboard/phone';
import type { Host } from '../../src/app.js';
import { PHONE_SHAPE } from '../../src/features/phone/index.js';
import { PhoneDataStore } from '../../src/kernel/phone-data/store.js';
import { readOrCreateMcpToken } from '../../src/mcp/mcp-token.js';
import { ManualClock, TEST_TOKEN, tempHermesHome, testConfig } from '../support/config.js';
import { callHook } from '../support/hook-call.js';
import { startHost } from '../support/host.js';
import { connectMcp } from '../support/mcp-client.js';
import { chachaOpen, chachaSeal, PhoneStandIn, voiceAadOf, type Answer } from '../support/phone-stand-in.js';

/**
 * conduit_calendar and conduit_phone through the MCP SDK's own client (the pre_tool_call hook signs the
 * calling turn first, as Hermes does), and as voice reads sealed with the phone's key: each offered
 * only once a phone shares what it reads, every read action answered "as of" the last sync, refused
 * to subagents and unproved calls, and a voice read answering for the asking phone alone.
 */
const home = tempHermesHome();
const DAY = 1_780_000_000 - (1_780_000_000 % 86_400);
const NOW = DAY + 8 * 3600;
const clock = new ManualClock(NOW * 1000);
const DAY_DATE = new Date(DAY * 1000).toISOString().slice(0, 10);
let host: Host & { url: string };
let mcpToken: string;
let iphone: PhoneStandIn;
let ipad: PhoneStandIn;

const sharing = (over: Record<string, unknown> = {}) => ({
  calendars: { on: true, modes: { 'cal-home': 'read', 'cal-work': 'add_only' } },
  reminders: { on: true, modes: { 'list-todo': 'read' } },
  include_details: false,
  past_days: 1,
  future_days: 14,
  focus: false,
  status: false,
  ...over,
});
const event = (id: string, start: number, hours = 1, over: Record<string, unknown> = {}) => ({
  id,
  calendar_id: 'cal-home',
  title: `Title ${id}`,
  start,
  end: start + hours * 3600,
  ...over,
});

beforeAll(async () => {
  host = await startHost(testConfig(home.root, { clock }));
  mcpToken = await readOrCreateMcpToken(path.join(home.root, 'conduit-host'));
  iphone = new PhoneStandIn(host.url, 'phone', PHONE_LABEL, 'iphone-1');
  ipad = new PhoneStandIn(host.url, 'phone', PHONE_LABEL, 'ipad-2');
});
afterAll(async () => {
  await host.app.close();
  home.cleanup();
});

const mcp = (): Promise<Client> => connectMcp(host.url, mcpToken);

async function tools(): Promise<string[]> {
  const client = await mcp();
  try {
    return (await client.listTools()).tools.map((tool) => tool.name);
  } finally {
    await client.close();
  }
}

/** The hook first (it signs the calling turn into the arguments), then the tool, as Hermes does. */
async function toolCall(tool: string, sessionId: string, args: Record<string, unknown>) {
  const hooked = await callHook(host.url, host.hookToken, {
    hook_event_name: 'pre_tool_call',
    profile: 'default',
    session_id: sessionId,
    tool_name: `mcp_conduit_${tool}`,
    tool_input: args,
    extra: { turn_id: `t-${sessionId}`, tool_call_id: 'tc-1' },
  });
  const answer = hooked.answer as { action: string; args: Record<string, unknown> };
  expect(answer.action).toBe('modify');
  const client = await mcp();
  try {
    return await client.callTool({ name: tool, arguments: answer.args });
  } finally {
    await client.close();
  }
}

const textOf = (result: Awaited<ReturnType<typeof toolCall>>) =>
  (result.content as { type: string; text: string }[])[0]?.text ?? '';
const read = async (tool: string, args: Record<string, unknown>) => {
  const result = await toolCall(tool, 'chat-1', args);
  expect(result.isError, textOf(result)).toBeFalsy();
  return JSON.parse(textOf(result)) as Record<string, unknown>;
};

function preLlmCall(sessionId: string) {
  return callHook(host.url, host.hookToken, {
    hook_event_name: 'pre_llm_call',
    profile: 'default',
    session_id: sessionId,
    extra: { turn_id: `t-${sessionId}` },
  });
}

describe('conduit_calendar and conduit_phone over MCP', () => {
  it('are offered only once a phone shares what each reads, and the "Conduit first" line names them', async () => {
    expect(await tools()).not.toContain('conduit_calendar');
    await iphone.agree();
    // A key alone shares nothing yet.
    expect(await tools()).not.toContain('conduit_calendar');
    // Calendars shared, status not: only conduit_calendar.
    await iphone.send({
      v: 1,
      sharing: sharing(),
      calendars: [
        { id: 'cal-home', title: 'Home' },
        { id: 'cal-work', title: 'Work' },
      ],
      events: [
        event('dentist', DAY + 10 * 3600),
        event('lunch', DAY + 12 * 3600, 1, { availability: 'free' }),
        event('review', DAY + 14 * 3600, 2, { location: 'Room 4' }),
        event('holiday', DAY + 86_400, 24, { all_day: true }),
        event('yesterday', DAY - 20 * 3600),
      ],
      lists: [{ id: 'list-todo', title: 'To do' }],
      reminders: [
        { id: 'call-mum', list_id: 'list-todo', title: 'Call mum', due: DAY + 18 * 3600 },
        { id: 'overdue', list_id: 'list-todo', title: 'Pay bill', due: DAY + 3600 },
        { id: 'done', list_id: 'list-todo', title: 'Done thing', completed: true, completed_at: NOW - 600 },
      ],
    });
    let listed = await tools();
    expect(listed).toContain('conduit_calendar');
    expect(listed).not.toContain('conduit_phone');
    clock.advance(60_000);
    expect((await preLlmCall('chat-0')).answer).toEqual({
      context:
        "Conduit: the user's phone shares calendars and reminders with this profile. For that data use the Conduit tool (conduit_calendar) before other tools, skills or CLIs.",
    });
    // Status and Focus shared too (from the iPad): both, and the line names both.
    await ipad.agree();
    await ipad.send({
      v: 1,
      sharing: sharing({ calendars: { on: false }, reminders: { on: false }, status: true, focus: true }),
      status: { at: NOW, battery_level: 0.15, charging: false, low_power: true, carplay: false, motion: 'walking' },
      focus: { at: NOW, active: true, name: 'Work' },
    });
    listed = await tools();
    expect(listed).toEqual(expect.arrayContaining(['conduit_calendar', 'conduit_phone']));
    clock.advance(60_000);
    expect((await preLlmCall('chat-0')).answer).toEqual({
      context:
        "Conduit: the user's phone shares calendars and reminders, phone status and Focus with this profile. For that data use the Conduit tool (conduit_calendar, conduit_phone) before other tools, skills or CLIs.",
    });
    const client = await mcp();
    const described = (await client.listTools()).tools.find((tool) => tool.name === 'conduit_calendar');
    await client.close();
    expect(described?.description).toContain('use this Conduit tool before other tools, skills or CLIs');
    // Its writes queue pending changes the phone applies, so it is no longer read-only.
    expect(described?.annotations?.readOnlyHint).toBe(false);
  });

  it('answers every read action as of the last sync', async () => {
    const asOf = new Date(NOW * 1000).toISOString().replace('.000Z', 'Z');
    const overview = await read('conduit_calendar', { action: 'overview' });
    expect(overview).toMatchObject({
      ok: true,
      as_of: asOf,
      calendars: 2,
      reminder_lists: 1,
      events_today: 3,
      next_event: { id: 'dentist', title: 'Title dentist', calendar: 'Home' },
      reminders_open: 2,
      reminders_overdue: 1,
      devices: [{ device_id: 'iphone-1', calendars: true, reminders: true, past_days: 1, future_days: 14 }],
    });
    const calendars = await read('conduit_calendar', { action: 'calendars' });
    expect(calendars.calendars).toEqual([
      expect.objectContaining({ id: 'cal-home', mode: 'read', shared: false }),
      expect.objectContaining({ id: 'cal-work', mode: 'add_only' }),
    ]);
    expect(calendars.lists).toEqual([expect.objectContaining({ id: 'list-todo', title: 'To do' })]);

    const events = await read('conduit_calendar', { action: 'events', start_date: DAY_DATE, days: 2 });
    expect((events.events as { id: string }[]).map((e) => e.id)).toEqual(['dentist', 'lunch', 'review', 'holiday']);
    expect(events).toMatchObject({ as_of: asOf, truncated: false });
    const searched = await read('conduit_calendar', { action: 'events', start_date: DAY_DATE, query: 'room' });
    expect((searched.events as { id: string }[]).map((e) => e.id)).toEqual(['review']);

    // Busy: the dentist and the review (lunch is marked free, the holiday is all day); free gaps of an hour.
    const freeBusy = await read('conduit_calendar', { action: 'free_busy', start_date: DAY_DATE, min_minutes: 60 });
    const at = (hour: number) => new Date((DAY + hour * 3600) * 1000).toISOString().replace('.000Z', 'Z');
    expect(freeBusy.busy).toEqual([
      { start: at(10), end: at(11) },
      { start: at(14), end: at(16) },
    ]);
    expect(freeBusy.free).toEqual([
      { start: at(0), end: at(10) },
      { start: at(11), end: at(14) },
      { start: at(16), end: at(24) },
    ]);

    const next = await read('conduit_calendar', { action: 'next', count: 2 });
    expect((next.events as { id: string }[]).map((e) => e.id)).toEqual(['dentist', 'lunch']);

    const reminders = await read('conduit_calendar', { action: 'reminders' });
    expect((reminders.reminders as { id: string }[]).map((r) => r.id)).toEqual(['overdue', 'call-mum']);
    const withDone = await read('conduit_calendar', { action: 'reminders', include_completed: true });
    expect((withDone.reminders as { id: string }[]).map((r) => r.id)).toEqual(['overdue', 'call-mum', 'done']);

    const status = await read('conduit_phone', { action: 'status' });
    expect(status).toMatchObject({
      ok: true,
      phones: [
        {
          device_id: 'ipad-2',
          status: { battery_level: 0.15, low_power: true, charging: false, carplay: false, motion: 'walking' },
          focus: { active: true, name: 'Work' },
        },
      ],
    });

    const refused = await toolCall('conduit_calendar', 'chat-1', { action: 'events', days: 100 });
    expect(refused.isError).toBe(true);
    // The MCP input schema refuses it before the handler (which checks again for voice reads).
    expect(textOf(refused)).toContain('days');
  });

  it('refuses a subagent and a call whose turn it cannot prove', async () => {
    for (const [tool, action] of [
      ['conduit_calendar', 'overview'],
      ['conduit_phone', 'status'],
    ] as const) {
      const client = await mcp();
      const unproved = await client.callTool({ name: tool, arguments: { action } });
      await client.close();
      expect(unproved.isError).toBe(true);
      expect(textOf(unproved)).toContain('conduit setup-hermes');
    }
    await callHook(host.url, host.hookToken, {
      hook_event_name: 'subagent_start',
      profile: 'default',
      session_id: 'parent',
      extra: { child_session_id: 'child-1', parent_session_id: 'parent' },
    });
    const calendar = await toolCall('conduit_calendar', 'child-1', { action: 'overview' });
    expect(calendar.isError).toBe(true);
    expect(textOf(calendar)).toContain('not available to subagents');
    const phone = await toolCall('conduit_phone', 'child-1', { action: 'status' });
    expect(phone.isError).toBe(true);
    expect(textOf(phone)).toContain('not available to subagents');
  });
});

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64url');

/** A voice call sealed as Conduit seals a voice model's tool call, with the device's phone key. */
function voiceCall(
  device: PhoneStandIn,
  callId: string,
  tool: string,
  args: Record<string, unknown>,
  label = PHONE_LABEL,
) {
  const kid = device.kid ?? '';
  const nonce = Buffer.alloc(12, callId.length);
  const plain = Buffer.from(JSON.stringify({ call_id: callId, tool, args, provider: 'gemini-live' }));
  const aad = voiceAadOf(label, tool, kid, device.deviceId, callId);
  const ct = chachaSeal(device.key('voice device-to-host'), nonce, aad, plain);
  return { v: 1, device_id: device.deviceId, kid, call_id: callId, tool, nonce: b64(nonce), ct: b64(ct) };
}

async function post(body: unknown): Promise<Answer> {
  const response = await fetch(`${host.url}/api/plugins/conduit_push/voice-tools/call`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TEST_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

function opened(answer: Answer, device: PhoneStandIn): { call_id: string; result: Record<string, unknown> } | null {
  const body = answer.body;
  const aad = voiceAadOf(
    PHONE_LABEL,
    String(body.tool),
    String(body.kid),
    String(body.device_id),
    String(body.call_id),
  );
  const plain = chachaOpen(
    device.key('voice host-to-device'),
    Buffer.from(String(body.nonce), 'base64url'),
    aad,
    Buffer.from(String(body.ct), 'base64url'),
  );
  return plain === null
    ? null
    : (JSON.parse(plain.toString('utf8')) as { call_id: string; result: Record<string, unknown> });
}

describe('conduit_calendar and conduit_phone as voice reads (key phone)', () => {
  it('are listed for a device only for what it shares, with the phone key and without device', async () => {
    const listing = async (deviceId: string) => {
      const response = await fetch(`${host.url}/api/plugins/conduit_push/voice-tools?device_id=${deviceId}`, {
        headers: { authorization: `Bearer ${TEST_TOKEN}` },
      });
      return ((await response.json()) as { tools: { name: string; key: string; parameters: unknown }[] }).tools;
    };
    const mine = await listing('iphone-1');
    expect(mine.map((tool) => [tool.name, tool.key])).toEqual([['conduit_calendar', 'phone']]);
    expect(JSON.stringify(mine[0]?.parameters)).not.toMatch(/_conduit_context|"device"/);
    expect((await listing('ipad-2')).map((tool) => [tool.name, tool.key])).toEqual([['conduit_phone', 'phone']]);
    expect(await listing('stranger')).toEqual([]);
  });

  it("answers sealed for the asking phone alone, with only that phone's data, and logs the read", async () => {
    const answer = await post(voiceCall(iphone, 'call-1', 'conduit_calendar', { action: 'next', count: 1 }));
    expect(answer.status).toBe(200);
    expect(opened(answer, iphone)).toMatchObject({
      call_id: 'call-1',
      result: { ok: true, events: [{ id: 'dentist', device_id: 'iphone-1' }] },
    });
    // Only the asking device's key opens it.
    expect(opened(answer, ipad)).toBeNull();
    // The iPad shares no calendar: its own read finds nothing, never the iPhone's events.
    const ipadRead = opened(await post(voiceCall(ipad, 'call-2', 'conduit_calendar', { action: 'overview' })), ipad);
    expect(ipadRead?.result).toEqual({
      ok: false,
      error: 'No calendars or reminders have been shared with this profile',
    });
    const status = opened(await post(voiceCall(ipad, 'call-3', 'conduit_phone', { action: 'status' })), ipad);
    expect(status?.result).toMatchObject({ ok: true, phones: [{ device_id: 'ipad-2', focus: { name: 'Work' } }] });
    const store = PhoneDataStore.open(home.root, PHONE_SHAPE, false);
    try {
      expect(store?.readsSince(0).at(-1)).toMatchObject({
        deviceId: 'ipad-2',
        action: 'status',
        via: 'Gemini Live call',
      });
    } finally {
      store?.close();
    }
  });

  it('refuses a device argument, and a call sealed with another feature key', async () => {
    const named = await post(voiceCall(iphone, 'call-4', 'conduit_calendar', { action: 'overview', device: 'ipad-2' }));
    expect(named).toEqual({
      status: 400,
      body: { detail: 'device is not an argument of a conduit_calendar voice read' },
    });
    // The same device with a health key: a phone tool's call does not open under it.
    const health = new PhoneStandIn(host.url, 'health', HEALTH_LABEL, 'iphone-1', { secret: iphone.secret });
    await health.agree();
    const underHealth = voiceCall(health, 'call-5', 'conduit_calendar', { action: 'overview' }, HEALTH_LABEL);
    expect((await post({ ...underHealth, kid: iphone.kid })).status).toBe(400);
    expect((await post(underHealth)).status).toBe(412);
  });
});

describe("days in the phone's time zone", () => {
  it("reads a day as the phone's local day and says each time locally too", async () => {
    await iphone.send({ v: 1, sharing: sharing({ time_zone: 'America/New_York' }) });
    const events = await read('conduit_calendar', { action: 'events', start_date: DAY_DATE, days: 1 });
    // New York is four hours behind UTC in summer: its day starts at 04:00 UTC.
    expect(events.from).toBe(new Date((DAY + 4 * 3600) * 1000).toISOString().replace('.000Z', 'Z'));
    expect(events.time_zone).toBe('America/New_York');
    expect(events.events).toContainEqual(
      expect.objectContaining({ id: 'dentist', start_local: `${DAY_DATE} 06:00`, end_local: `${DAY_DATE} 07:00` }),
    );
  });
});
