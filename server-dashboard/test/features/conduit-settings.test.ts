/**
 * Settings requests (`conduit-settings`) through the MCP SDK's own client, as Hermes reaches them (the
 * pre_tool_call hook signs the calling turn first), and PUT /conduit-settings as Conduit calls it, on a
 * real host over HTTP. Time moves by hand (ManualClock): the hour, the day and the 30 days are crossed
 * by advancing the host's clock, never by sleeping.
 */
import { mkdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Host } from '../../src/app.js';
import { readOrCreateMcpToken } from '../../src/mcp/mcp-token.js';
import {
  conduitSettingsFeature,
  deviceHandle,
  hermesSettingRefusal,
  SETTINGS_FILE,
} from '../../src/features/conduit-settings/index.js';
import { ManualClock, TEST_TOKEN, tempHermesHome, testConfig } from '../support/config.js';
import { callHook } from '../support/hook-call.js';
import { startHost } from '../support/host.js';
import { callToolAsHermes, connectMcp, listToolNames } from '../support/mcp-client.js';

const TOOL = 'conduit_settings';
const PROFILES = ['modes', 'limits', 'hourly', 'household', 'expiry', 'uploads', 'hermes'];
const home = tempHermesHome();
const clock = new ManualClock(Date.UTC(2026, 11, 4, 9, 0, 0));
let host: Host & { url: string };
let mcpToken: string;

beforeAll(async () => {
  for (const name of PROFILES) mkdirSync(path.join(home.root, 'profiles', name), { recursive: true });
  host = await startHost(testConfig(home.root, { clock }), { features: [conduitSettingsFeature()] });
  mcpToken = await readOrCreateMcpToken(path.join(home.root, 'conduit-host'));
});
afterAll(async () => {
  await host.app.close();
  home.cleanup();
});
// Each test starts in a fresh minute, so the upload route's 60-a-minute bound is met only where a test means to.
beforeEach(() => clock.advance(61_000));

type Value = string | number | boolean;
interface Setting {
  key: string;
  title: string;
  meaning: string;
  choices: { value: Value; title?: string }[];
  value: Value;
  tier: 'small' | 'other';
}

const SETTINGS: Setting[] = [
  {
    key: 'live.call_style',
    title: 'Call style',
    meaning: 'How live calls sound: lively, relaxed or brisk.',
    choices: [{ value: 'lively', title: 'Lively' }, { value: 'relaxed', title: 'Relaxed' }, { value: 'brisk' }],
    value: 'lively',
    tier: 'small',
  },
  {
    key: 'live.engine',
    title: 'Live mode',
    meaning: 'Which live voice mode a call uses.',
    choices: [{ value: 'gemini_live' }, { value: 'grok_live' }],
    value: 'grok_live',
    tier: 'other',
  },
  {
    key: 'gemini_live.memory',
    title: 'Use memory in Gemini Live',
    meaning: "Whether Gemini Live gets Hermes' memory.",
    choices: [{ value: true }, { value: false }],
    value: false,
    tier: 'other',
  },
  {
    key: 'live.speed',
    title: 'Speaking speed',
    meaning: 'How fast the voice speaks.',
    choices: [{ value: 0.9 }, { value: 1 }, { value: 1.1 }],
    value: 1,
    tier: 'small',
  },
];

interface Upload {
  installation_id?: string;
  device?: string;
  app_version?: string;
  mode?: 'ask' | 'small_without_asking' | 'off';
  settings?: Setting[];
  outcomes?: { id: string; outcome: string; value?: Value; note?: string }[];
}
interface HandedRequest {
  id: string;
  key: string;
  value: Value;
  seen_value: Value;
  reason: string;
  session_id: string;
  requested_at: number;
  expires_at: number;
}
interface UploadAnswer {
  status: number;
  body: { ok?: boolean; requests?: HandedRequest[]; ignored_keys?: string[]; detail?: string };
}

/** Conduit's upload: what it shares and its mode, its outcomes in; the requests for it out. */
async function upload(
  fields: Upload = {},
  options: { profile?: string; bearer?: string | null; raw?: string } = {},
): Promise<UploadAnswer> {
  const bearer = options.bearer === undefined ? TEST_TOKEN : options.bearer;
  const body = {
    installation_id: fields.installation_id ?? 'inst-phone',
    device: fields.device ?? "Anna's iPhone",
    app_version: fields.app_version ?? '1.42',
    mode: fields.mode ?? 'ask',
    settings: fields.settings ?? SETTINGS,
    outcomes: fields.outcomes ?? [],
  };
  const response = await fetch(
    `${host.url}/api/plugins/conduit_push/conduit-settings?profile=${options.profile ?? 'default'}`,
    {
      method: 'PUT',
      headers: { 'content-type': 'application/json', ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) },
      body: options.raw ?? JSON.stringify(body),
    },
  );
  return { status: response.status, body: (await response.json()) as UploadAnswer['body'] };
}

interface ModelRequest {
  id: string;
  device: string;
  key: string;
  value: Value;
  seen_value: Value;
  reason: string;
  state: string;
  requested_at: string;
  expires_at?: string;
  finished_at?: string;
  value_now?: Value;
  note?: string;
  meaning: string;
  what_happens?: string;
}
interface ModelDevice {
  id: string;
  name: string;
  mode: string;
  mode_note: string;
  synced_at: string;
  settings: (Omit<Setting, 'choices'> & { choices: { value: Value; title?: string }[]; open_request?: string })[];
}
interface ToolAnswer {
  ok: boolean;
  error?: string;
  devices?: ModelDevice[];
  open_requests?: ModelRequest[];
  outcomes?: ModelRequest[];
  device?: { id: string; name: string; mode: string };
  requests?: ModelRequest[];
  request?: ModelRequest;
  replaced?: string[];
  note?: string;
}

const listTools = (profile = 'default') => listToolNames(host.url, mcpToken, profile);

let turns = 0;
/** The hook first (it signs the calling turn into the arguments), then the tool, as Hermes does. */
async function tool(
  args: Record<string, unknown>,
  options: { session?: string; profile?: string; turn?: string } = {},
): Promise<{ isError: boolean; body: ToolAnswer }> {
  const answer = await callToolAsHermes(host, mcpToken, TOOL, args, {
    profile: options.profile ?? 'default',
    session: options.session ?? 'chat-1',
    // A new turn per call unless the test names one.
    turn: options.turn ?? `turn-${++turns}`,
    toolCall: `tc-${turns}-${Math.random()}`,
  });
  expect(answer.hookAction).toBe('modify');
  return { isError: answer.isError, body: JSON.parse(answer.text) as ToolAnswer };
}

const change = (changes: { key: string; value: Value; reason?: string }[], options: Parameters<typeof tool>[1] = {}) =>
  tool({ action: 'change', changes: changes.map((one) => ({ reason: 'The user asked for it', ...one })) }, options);

const PHONE = deviceHandle('inst-phone');

describe('conduit_settings: visibility, the caller and the upload route', () => {
  it('is offered only once a Conduit has uploaded its settings to the profile', async () => {
    expect(await listTools()).not.toContain(TOOL);
    const first = await upload();
    expect(first).toEqual({ status: 200, body: { ok: true, requests: [], ignored_keys: [] } });
    expect(await listTools()).toContain(TOOL);
    // Another profile has no Conduit yet.
    expect(await listTools('work')).not.toContain(TOOL);
    const file = statSync(path.join(home.root, SETTINGS_FILE));
    expect(file.mode & 0o777).toBe(0o600);
  });

  it('refuses a subagent and a call whose turn it cannot prove', async () => {
    await callHook(host.url, host.hookToken, {
      hook_event_name: 'subagent_start',
      profile: 'default',
      session_id: 'chat-1',
      extra: { child_session_id: 'child-1', parent_session_id: 'chat-1' },
    });
    const child = await change([{ key: 'live.call_style', value: 'relaxed' }], { session: 'child-1' });
    expect(child).toEqual({
      isError: true,
      body: {
        ok: false,
        error: 'conduit_settings is not available to subagents; the main chat can ask for the change.',
      },
    });
    const client = await connectMcp(host.url, mcpToken);
    const unproved = await client.callTool({ name: TOOL, arguments: { action: 'get' } });
    await client.close();
    expect(unproved.isError).toBe(true);
    expect(JSON.stringify(unproved.content)).toContain('conduit setup-hermes');
    expect((await upload()).body.requests).toEqual([]);
  });

  it('answers 401 without the dashboard credential, 503 for a profile that does not exist', async () => {
    expect((await upload({}, { bearer: null })).status).toBe(401);
    expect((await upload({}, { bearer: 'wrong-token-wrong-token-wrong' })).status).toBe(401);
    const missing = await upload({}, { profile: 'nobody' });
    expect(missing.status).toBe(503);
  });

  it('validates every field with a clear 400, before anything is stored', async () => {
    const refusal = async (fields: Upload | string) => {
      const answer =
        typeof fields === 'string'
          ? await upload({}, { raw: fields, profile: 'uploads' })
          : await upload(fields, { profile: 'uploads' });
      expect(answer.status).toBe(400);
      return answer.body.detail;
    };
    const setting = (extra: Partial<Setting>): Setting => ({ ...(SETTINGS[0] as Setting), ...extra });
    expect(await refusal('{not json')).toBe('Request body is not JSON');
    expect(await refusal({ mode: 'sometimes' as 'ask' })).toBe(
      'Invalid settings upload: mode: mode must be ask, small_without_asking or off',
    );
    expect(await refusal({ installation_id: '' })).toBe(
      'Invalid settings upload: installation_id: installation_id must not be empty',
    );
    expect(await refusal({ settings: [setting({ value: 'shouting' })] })).toBe(
      'Invalid settings upload: settings.0.value: value must be one of the choices',
    );
    expect(await refusal({ settings: [setting({ choices: [] })] })).toBe(
      'Invalid settings upload: settings.0.choices: choices must list at least one value',
    );
    expect(
      await refusal({ settings: [setting({ choices: [{ value: 'lively' }, { value: 'lively' }], value: 'lively' })] }),
    ).toBe('Invalid settings upload: settings.0.choices: choices must not repeat a value');
    expect(await refusal({ settings: [setting({}), setting({})] })).toBe(
      'Invalid settings upload: settings.1.key: key is listed twice',
    );
    expect(await refusal({ settings: [setting({ key: '../etc' })] })).toBe(
      'Invalid settings upload: settings.0.key: key may hold only letters, digits, _, - and . (starting with a letter or a digit)',
    );
    expect(await refusal({ settings: [setting({ tier: 'huge' as 'small' })] })).toBe(
      'Invalid settings upload: settings.0.tier: tier must be small or other',
    );
    expect(
      await refusal({
        settings: [setting({ choices: [{ value: { nested: 1 } as unknown as Value }], value: 'lively' })],
      }),
    ).toBe('Invalid settings upload: settings.0.choices.0.value: must be a string, a number or a boolean');
    expect(await refusal({ outcomes: [{ id: 'x', outcome: 'maybe' }] })).toBe(
      'Invalid settings upload: outcomes.0.outcome: outcome must be applied, dismissed, conflict, refused or undone',
    );
    // Nothing was stored for the profile: the tool is still not offered there.
    expect(await listTools('uploads')).not.toContain(TOOL);
  });

  it('bounds every size at its limit', async () => {
    const many = (count: number): Setting[] =>
      Array.from({ length: count }, (_, i) => ({ ...(SETTINGS[0] as Setting), key: `s.k${i}` }));
    const at = async (fields: Upload) => upload(fields, { profile: 'uploads' });
    const base = SETTINGS[0] as Setting;
    expect((await at({ settings: many(64) })).status).toBe(200);
    expect((await at({ settings: many(65) })).body.detail).toBe(
      'Invalid settings upload: settings: settings must list at most 64 settings',
    );
    expect((await at({ settings: [{ ...base, key: 'k'.repeat(64) }] })).status).toBe(200);
    expect((await at({ settings: [{ ...base, key: 'k'.repeat(65) }] })).body.detail).toBe(
      'Invalid settings upload: settings.0.key: key must be at most 64 characters',
    );
    expect((await at({ settings: [{ ...base, title: 't'.repeat(80) }] })).status).toBe(200);
    expect((await at({ settings: [{ ...base, title: 't'.repeat(81) }] })).body.detail).toBe(
      'Invalid settings upload: settings.0.title: title must be at most 80 characters',
    );
    expect((await at({ settings: [{ ...base, meaning: 'm'.repeat(500) }] })).status).toBe(200);
    expect((await at({ settings: [{ ...base, meaning: 'm'.repeat(501) }] })).body.detail).toBe(
      'Invalid settings upload: settings.0.meaning: meaning must be at most 500 characters',
    );
    const choices = (count: number) => Array.from({ length: count }, (_, i) => ({ value: `c${i}` }));
    expect((await at({ settings: [{ ...base, choices: choices(24), value: 'c0' }] })).status).toBe(200);
    expect((await at({ settings: [{ ...base, choices: choices(25), value: 'c0' }] })).body.detail).toBe(
      'Invalid settings upload: settings.0.choices: choices must list at most 24 values',
    );
    const long = 'v'.repeat(100);
    expect((await at({ settings: [{ ...base, choices: [{ value: long }], value: long }] })).status).toBe(200);
    expect(
      (await at({ settings: [{ ...base, choices: [{ value: `${long}v` }], value: `${long}v` }] })).body.detail,
    ).toBe('Invalid settings upload: settings.0.choices.0.value: must be at most 100 characters');
    const outcomes = (count: number) => Array.from({ length: count }, (_, i) => ({ id: `r${i}`, outcome: 'applied' }));
    expect((await at({ outcomes: outcomes(200) })).status).toBe(200);
    // The largest valid upload fits the 512 KiB body bound; more is a 413 before any parsing.
    const tooLarge = await upload({}, { profile: 'uploads', raw: JSON.stringify({ pad: 'x'.repeat(512 * 1024) }) });
    expect(tooLarge).toEqual({ status: 413, body: { detail: 'Request body is too large' } });
    expect((await at({ outcomes: outcomes(201) })).body.detail).toBe(
      'Invalid settings upload: outcomes: outcomes must list at most 200 outcomes',
    );
  });

  it('takes 60 uploads a minute per profile, then 429 with a clear detail', async () => {
    for (let i = 0; i < 60; i++) expect((await upload({}, { profile: 'uploads' })).status).toBe(200);
    expect(await upload({}, { profile: 'uploads' })).toEqual({
      status: 429,
      body: { detail: 'Too many settings uploads for this profile (at most 60 a minute); try again shortly' },
    });
    clock.advance(60_000);
    expect((await upload({}, { profile: 'uploads' })).status).toBe(200);
  });
});

describe('conduit_settings: get, change, cancel and the outcomes', () => {
  it('get lists the shared settings, the mode and the device', async () => {
    await upload();
    const got = await tool({ action: 'get' });
    expect(got.isError).toBe(false);
    expect(got.body.devices).toEqual([
      {
        id: PHONE,
        name: "Anna's iPhone",
        mode: 'ask',
        mode_note: 'Ask me every time: each change waits for the user to tap Apply.',
        synced_at: new Date(clock.now()).toISOString(),
        settings: SETTINGS.map((setting) => ({
          key: setting.key,
          title: setting.title,
          meaning: setting.meaning,
          tier: setting.tier,
          value: setting.value,
          choices: setting.choices,
        })),
      },
    ]);
    // The installation id Conduit uses with the relay never reaches the model.
    expect(JSON.stringify(got.body)).not.toContain('inst-phone');
  });

  it('change keeps a request with the value Hermes saw; the next upload hands it over; its outcome is shown once', async () => {
    await upload();
    const asked = await tool(
      { action: 'change', key: 'live.call_style', value: 'relaxed', reason: 'You asked for calmer calls' },
      { session: 'chat-7' },
    );
    expect(asked.isError).toBe(false);
    expect(asked.body.device).toEqual({ id: PHONE, name: "Anna's iPhone", mode: 'ask' });
    const request = asked.body.requests?.[0];
    expect(request).toMatchObject({
      device: PHONE,
      key: 'live.call_style',
      value: 'relaxed',
      seen_value: 'lively',
      reason: 'You asked for calmer calls',
      state: 'waiting',
      what_happens: 'The user is asked to Apply it in Conduit.',
    });
    expect(Date.parse(request?.expires_at ?? '') - Date.parse(request?.requested_at ?? '')).toBe(24 * 3600_000);
    const stored = JSON.parse(readFileSync(path.join(home.root, SETTINGS_FILE), 'utf8')) as {
      requests: { id: string; seen_value: Value; state: string }[];
    };
    expect(stored.requests.find((one) => one.id === request?.id)).toMatchObject({
      seen_value: 'lively',
      state: 'waiting',
    });

    const handed = await upload();
    expect(handed.body.requests).toEqual([
      {
        id: request?.id,
        key: 'live.call_style',
        value: 'relaxed',
        seen_value: 'lively',
        reason: 'You asked for calmer calls',
        session_id: 'chat-7',
        requested_at: clock.now() / 1000,
        expires_at: clock.now() / 1000 + 24 * 3600,
      },
    ]);
    // Handed over again until Conduit reports (a lost answer loses nothing), and get shows it open.
    expect((await upload()).body.requests?.map((one) => one.id)).toEqual([request?.id]);
    const open = await tool({ action: 'get' });
    expect(open.body.open_requests?.map((one) => [one.id, one.state])).toEqual([[request?.id, 'picked_up']]);
    expect(open.body.devices?.[0]?.settings[0]?.open_request).toBe(request?.id);
    expect(open.body.outcomes).toEqual([]);

    const applied = await upload({
      settings: SETTINGS.map((setting) =>
        setting.key === 'live.call_style' ? { ...setting, value: 'relaxed' } : setting,
      ),
      outcomes: [{ id: request?.id ?? '', outcome: 'applied', value: 'relaxed' }],
    });
    expect(applied.body.requests).toEqual([]);
    const told = await tool({ action: 'get' });
    expect(told.body.outcomes).toEqual([
      expect.objectContaining({
        id: request?.id,
        state: 'applied',
        value_now: 'relaxed',
        meaning: 'Applied on the device.',
      }),
    ]);
    expect(told.body.devices?.[0]?.settings[0]?.value).toBe('relaxed');
    // Shown once: the next get has nothing new, and the same outcome sent again is not news.
    expect((await tool({ action: 'get' })).body.outcomes).toEqual([]);
    await upload({ outcomes: [{ id: request?.id ?? '', outcome: 'applied', value: 'relaxed' }] });
    expect((await tool({ action: 'get' })).body.outcomes).toEqual([]);
    // An Undo later is news again.
    await upload({ outcomes: [{ id: request?.id ?? '', outcome: 'undone', value: 'lively' }] });
    expect((await tool({ action: 'get' })).body.outcomes?.map((one) => [one.id, one.state, one.value_now])).toEqual([
      [request?.id, 'undone', 'lively'],
    ]);
    expect((await tool({ action: 'get' })).body.outcomes).toEqual([]);
  });

  it('reports dismissed, conflict and refused with Conduit notes; outcomes for unknown or other requests are ignored', async () => {
    await upload({ installation_id: 'inst-ipad', device: 'iPad' });
    // Without a device, change asks the one that synced most recently.
    await upload();
    const asked = await change(
      [
        { key: 'live.call_style', value: 'brisk' },
        { key: 'live.engine', value: 'gemini_live' },
        { key: 'gemini_live.memory', value: true },
      ],
      { session: 'chat-8' },
    );
    expect(asked.body.device?.id).toBe(PHONE);
    const [style, engine, memory] = (asked.body.requests ?? []).map((one) => one.id);
    // Another device cannot report this device's requests, and an unknown id is ignored.
    await upload({
      installation_id: 'inst-ipad',
      device: 'iPad',
      outcomes: [{ id: style ?? '', outcome: 'dismissed' }],
    });
    // Not yet handed over: an outcome for it is ignored too.
    await upload({
      outcomes: [
        { id: style ?? '', outcome: 'dismissed' },
        { id: 'no-such', outcome: 'applied' },
      ],
    });
    expect((await tool({ action: 'get' })).body.outcomes).toEqual([]);
    await upload({
      outcomes: [
        { id: style ?? '', outcome: 'dismissed' },
        {
          id: engine ?? '',
          outcome: 'conflict',
          value: 'grok_live',
          note: 'You chose Grok Live after Hermes read it.',
        },
        { id: memory ?? '', outcome: 'refused', note: 'Memory needs the Gemini key on this phone.' },
      ],
    });
    const told = (await tool({ action: 'get', device: PHONE })).body.outcomes ?? [];
    expect(told.map((one) => [one.id, one.state, one.value_now ?? null, one.note ?? null])).toEqual([
      [style, 'dismissed', null, null],
      [engine, 'conflict', 'grok_live', 'You chose Grok Live after Hermes read it.'],
      [memory, 'refused', null, 'Memory needs the Gemini key on this phone.'],
    ]);
    expect(told[1]?.meaning).toBe('The user changed this setting after you read it, so their value was kept.');
  });

  it('cancel takes back a request Conduit has not picked up, but not one it has', async () => {
    await upload();
    const first = (await change([{ key: 'live.speed', value: 1.1 }])).body.requests?.[0]?.id ?? '';
    const cancelled = await tool({ action: 'cancel', id: first });
    expect(cancelled.isError).toBe(false);
    expect(cancelled.body.request).toMatchObject({ id: first, state: 'cancelled' });
    expect((await upload()).body.requests).toEqual([]);
    expect(await tool({ action: 'cancel', id: first })).toEqual({
      isError: true,
      body: { ok: false, error: `Request ${first} has already finished (cancelled); nothing to cancel.` },
    });
    // A cancel is Hermes' own doing, not an outcome to tell it.
    expect((await tool({ action: 'get' })).body.outcomes).toEqual([]);

    const second = (await change([{ key: 'live.speed', value: 0.9 }])).body.requests?.[0]?.id ?? '';
    expect((await upload()).body.requests?.map((one) => one.id)).toEqual([second]);
    expect(await tool({ action: 'cancel', id: second })).toEqual({
      isError: true,
      body: {
        ok: false,
        error: `Conduit has already picked up request ${second}, so it can no longer be taken back; get shows what the user did.`,
      },
    });
    expect((await tool({ action: 'cancel', id: 'nope' })).body.error).toBe(
      'No settings request nope (finished requests are kept a week).',
    );
    await upload({ outcomes: [{ id: second, outcome: 'dismissed' }] });
  });

  it('a newer request for the same setting replaces one still waiting', async () => {
    await upload();
    const first = (await change([{ key: 'live.engine', value: 'gemini_live', reason: 'first' }])).body.requests?.[0]
      ?.id;
    const again = await change([{ key: 'live.engine', value: 'gemini_live', reason: 'second' }]);
    expect(again.body.replaced).toEqual([first]);
    const handed = (await upload()).body.requests ?? [];
    expect(handed.map((one) => [one.key, one.reason])).toEqual([['live.engine', 'second']]);
    await upload({ outcomes: [{ id: handed[0]?.id ?? '', outcome: 'dismissed' }] });
  });

  it('checks each change against what the device shares now', async () => {
    await upload();
    const refused = async (changes: { key: string; value: Value }[]) => {
      const answer = await change(changes);
      expect(answer.isError).toBe(true);
      return answer.body.error;
    };
    expect(await refused([{ key: 'calls.from_hermes', value: true }])).toBe(
      "calls.from_hermes is not a setting Anna's iPhone shares with Hermes, so it is out of your reach (get lists the ones it shares; the user changes the others in Conduit).",
    );
    expect(await refused([{ key: 'live.call_style', value: 'shouting' }])).toBe(
      '"shouting" is not a choice of live.call_style; its choices are "lively", "relaxed", "brisk".',
    );
    // A value of the wrong type is not that choice ("1" is not 1).
    expect(await refused([{ key: 'live.speed', value: '1.1' }])).toBe(
      '"1.1" is not a choice of live.speed; its choices are 0.9, 1, 1.1.',
    );
    expect(await refused([{ key: 'live.engine', value: 'grok_live' }])).toBe(
      'live.engine is already "grok_live" on Anna\'s iPhone; nothing to change.',
    );
    expect(
      await refused([
        { key: 'live.speed', value: 0.9 },
        { key: 'live.speed', value: 1.1 },
      ]),
    ).toBe('live.speed is asked for twice in this call; ask for one value.');
    // A batch is all or nothing: the valid change beside a refused one is not kept.
    expect(
      await refused([
        { key: 'live.speed', value: 0.9 },
        { key: 'live.call_style', value: 'shouting' },
      ]),
    ).toContain('is not a choice of live.call_style');
    expect(
      (await tool({ action: 'change', changes: [{ key: 'live.speed', value: 0.9, reason: '  ' }] })).body.error,
    ).toBe('each change needs a reason, shown to the user');
    expect((await tool({ action: 'change', key: 'live.speed', reason: 'faster' })).body.error).toBe(
      "each change needs a value: one of the setting's choices (text, a number or true/false)",
    );
    expect((await tool({ action: 'change', changes: [] })).body.error).toBe('change needs at least one change');
    expect((await tool({ action: 'change' })).body.error).toBe(
      'change needs changes: [{key, value, reason}] (or key, value and reason)',
    );
    expect((await tool({ action: 'get', device: 'nope' })).body.error).toBe(
      'No device nope shares settings with this profile; get without device lists them.',
    );
    expect((await change([{ key: 'live.speed', value: 0.9 }], {})).body).toMatchObject({ ok: true });
    const handed = (await upload()).body.requests ?? [];
    expect(handed.map((one) => one.key)).toEqual(['live.speed']);
    await upload({ outcomes: [{ id: handed[0]?.id ?? '', outcome: 'dismissed' }] });
  });
});

describe("conduit_settings: Hermes' own settings", () => {
  const shared: Setting[] = [
    ...SETTINGS,
    {
      ...(SETTINGS[0] as Setting),
      key: 'tts.provider',
      choices: [{ value: 'openai' }, { value: 'edge' }],
      value: 'edge',
    },
    {
      ...(SETTINGS[0] as Setting),
      key: 'voice.gpt_live.voice',
      choices: [{ value: 'marin' }, { value: 'cove' }],
      value: 'cove',
    },
    { ...(SETTINGS[0] as Setting), key: 'gemini_live.model', choices: [{ value: 'a' }, { value: 'b' }], value: 'a' },
  ];

  it('are left out of what a Conduit shares, and the upload says which', async () => {
    const answer = await upload({ settings: shared }, { profile: 'hermes' });
    expect(answer.body.ignored_keys).toEqual(['tts.provider', 'voice.gpt_live.voice', 'gemini_live.model']);
    const keys = (await tool({ action: 'get' }, { profile: 'hermes' })).body.devices?.[0]?.settings.map((s) => s.key);
    expect(keys).toEqual(SETTINGS.map((setting) => setting.key));
  });

  it('are refused with a message telling Hermes to change them in its own config, shared or not', async () => {
    await upload({ settings: shared }, { profile: 'hermes' });
    for (const [key, value] of [
      ['tts.provider', 'openai'],
      ['voice.gpt_live.voice', 'marin'],
      ['gemini_live.model', 'b'],
      ['stt.provider', 'local'],
      ['openai_api_key', 'sk-x'],
      ['live.voice_model', 'x'],
      ['model', 'gpt-5'],
    ] as const) {
      const answer = await change([{ key, value }], { profile: 'hermes' });
      expect([key, answer.isError, answer.body.error]).toEqual([key, true, hermesSettingRefusal(key)]);
    }
    expect(hermesSettingRefusal('tts.provider')).toBe(
      "tts.provider is a Hermes setting, not Conduit's: speech providers and their keys, voice.gpt_live and models belong to this Hermes profile. Change it in Hermes' own config yourself (the profile's config.yaml, keys in its .env), not with conduit_settings.",
    );
    // Conduit's own settings with similar words are still Conduit's.
    expect((await change([{ key: 'live.call_style', value: 'brisk' }], { profile: 'hermes' })).isError).toBe(false);
    expect((await upload({ settings: shared }, { profile: 'hermes' })).body.requests?.map((r) => r.key)).toEqual([
      'live.call_style',
    ]);
  });
});

describe('conduit_settings: each mode', () => {
  const opts = { profile: 'modes' };

  it('ask: every change waits for Apply, and is handed over', async () => {
    await upload({ mode: 'ask' }, opts);
    const asked = await change(
      [
        { key: 'live.call_style', value: 'relaxed' },
        { key: 'live.engine', value: 'gemini_live' },
      ],
      opts,
    );
    expect(asked.body.requests?.map((one) => one.what_happens)).toEqual([
      'The user is asked to Apply it in Conduit.',
      'The user is asked to Apply it in Conduit.',
    ]);
    const handed = (await upload({ mode: 'ask' }, opts)).body.requests ?? [];
    expect(handed.map((one) => one.key)).toEqual(['live.call_style', 'live.engine']);
    await upload({ outcomes: handed.map((one) => ({ id: one.id, outcome: 'dismissed' })) }, opts);
    await tool({ action: 'get' }, opts);
  });

  it('small_without_asking: the small tier applies with an Undo, the rest still asks; both are handed over', async () => {
    await upload({ mode: 'small_without_asking' }, opts);
    const got = await tool({ action: 'get' }, opts);
    expect(got.body.devices?.[0]?.mode_note).toBe(
      'Small changes without asking: small changes (how calls sound, voices) apply at once with an Undo; others wait for Apply.',
    );
    const asked = await change(
      [
        { key: 'live.call_style', value: 'relaxed' },
        { key: 'live.engine', value: 'gemini_live' },
      ],
      opts,
    );
    expect(asked.body.requests?.map((one) => [one.key, one.what_happens])).toEqual([
      ['live.call_style', 'Conduit applies it without asking, with an Undo.'],
      ['live.engine', 'The user is asked to Apply it in Conduit.'],
    ]);
    const handed = (await upload({ mode: 'small_without_asking' }, opts)).body.requests ?? [];
    expect(handed.map((one) => one.key)).toEqual(['live.call_style', 'live.engine']);
    await upload({ outcomes: handed.map((one) => ({ id: one.id, outcome: 'dismissed' })) }, opts);
    await tool({ action: 'get' }, opts);
  });

  it('off: change is refused, open requests are refused on the next upload and nothing is handed over', async () => {
    await upload({ mode: 'ask' }, opts);
    const pickedUp = (await change([{ key: 'live.engine', value: 'gemini_live' }], opts)).body.requests?.[0]?.id;
    expect((await upload({ mode: 'ask' }, opts)).body.requests?.map((one) => one.id)).toEqual([pickedUp]);
    const waiting = (await change([{ key: 'live.speed', value: 0.9 }], opts)).body.requests?.[0]?.id;

    const off = await upload({ mode: 'off' }, opts);
    expect(off.body.requests).toEqual([]);
    const told = (await tool({ action: 'get' }, opts)).body;
    expect(told.devices?.[0]?.mode).toBe('off');
    expect(told.open_requests).toEqual([]);
    expect(told.outcomes?.map((one) => [one.id, one.state, one.note])).toEqual([
      [pickedUp, 'refused', `The user has turned "Let Hermes change settings" off on Anna's iPhone.`],
      [waiting, 'refused', `The user has turned "Let Hermes change settings" off on Anna's iPhone.`],
    ]);
    expect(await change([{ key: 'live.speed', value: 1.1 }], opts)).toEqual({
      isError: true,
      body: {
        ok: false,
        error: `On Anna's iPhone the user has turned "Let Hermes change settings" off, so Conduit refuses every change; tell the user where to change it in Conduit's Settings instead.`,
      },
    });
    // Back on: nothing old comes back.
    expect((await upload({ mode: 'ask' }, opts)).body.requests).toEqual([]);
  });

  it('a waiting request whose setting is no longer shared, or whose value is no longer a choice, is refused', async () => {
    await upload({ mode: 'ask' }, opts);
    const gone = (await change([{ key: 'gemini_live.memory', value: true }], opts)).body.requests?.[0]?.id;
    const value = (await change([{ key: 'live.call_style', value: 'brisk' }], opts)).body.requests?.[0]?.id;
    const narrowed = SETTINGS.filter((setting) => setting.key !== 'gemini_live.memory').map((setting) =>
      setting.key === 'live.call_style' ? { ...setting, choices: setting.choices.slice(0, 2) } : setting,
    );
    expect((await upload({ mode: 'ask', settings: narrowed }, opts)).body.requests).toEqual([]);
    expect((await tool({ action: 'get' }, opts)).body.outcomes?.map((one) => [one.id, one.state, one.note])).toEqual([
      [gone, 'refused', 'gemini_live.memory is no longer shared with Hermes.'],
      [value, 'refused', '"brisk" is no longer one of the choices of live.call_style.'],
    ]);
  });
});

describe('conduit_settings: limits at their boundaries', () => {
  it('takes 10 changes in one call, and 10 in one turn across its calls', async () => {
    const opts = { profile: 'limits' };
    const settings: Setting[] = Array.from({ length: 12 }, (_, i) => ({
      ...(SETTINGS[0] as Setting),
      key: `s.k${i}`,
    }));
    await upload({ settings }, opts);
    const asks = (from: number, count: number) =>
      Array.from({ length: count }, (_, i) => ({ key: `s.k${from + i}`, value: 'relaxed' }));
    expect((await change(asks(0, 11), opts)).body.error).toBe(
      'change takes at most 10 changes in one call; ask for the most important ones',
    );
    const ten = await change(asks(0, 10), opts);
    expect(ten.body.requests).toHaveLength(10);

    // One turn: 6 in one call, then 5 more is one too many, 4 fit (an hour on, so the hourly bound is not met).
    clock.advance(3600_000);
    expect((await change(asks(0, 6), { ...opts, turn: 'turn-limits' })).body.requests).toHaveLength(6);
    expect((await change(asks(6, 5), { ...opts, turn: 'turn-limits' })).body.error).toBe(
      'At most 10 changes may be asked for in one turn; this turn has asked for 6 already.',
    );
    expect((await change(asks(6, 4), { ...opts, turn: 'turn-limits' })).body.requests).toHaveLength(4);
    expect((await change(asks(10, 1), { ...opts, turn: 'turn-limits' })).body.error).toBe(
      'At most 10 changes may be asked for in one turn; this turn has asked for 10 already.',
    );
    // The next turn has its own ten.
    expect((await change(asks(10, 1), opts)).isError).toBe(false);
  });

  it('takes 20 requested changes per device per hour, counted over a sliding hour', async () => {
    const opts = { profile: 'hourly' };
    await upload({ installation_id: 'inst-ipad', device: 'iPad' }, opts);
    await upload({}, opts);
    const start = clock.now();
    for (let i = 0; i < 20; i++) {
      // The same setting each time: a replaced request still counts as asked.
      const answer = await change([{ key: 'live.speed', value: i % 2 === 0 ? 0.9 : 1.1 }], { ...opts });
      expect(answer.body.error).toBeUndefined();
      clock.advance(60_000);
    }
    expect((await change([{ key: 'live.speed', value: 0.9 }], opts)).body.error).toBe(
      'At most 20 changes an hour may be asked of one device; 20 were asked in the last hour, so 0 more fit now. Try again later.',
    );
    // Another device of the profile has its own hour.
    expect(
      (
        await tool(
          { action: 'change', device: deviceHandle('inst-ipad'), key: 'live.speed', value: 0.9, reason: 'r' },
          opts,
        )
      ).isError,
    ).toBe(false);
    // One second before the first request leaves the hour it is still counted; at the hour it is not.
    clock.advance(start + 3600_000 - 1000 - clock.now());
    expect((await change([{ key: 'live.speed', value: 0.9 }], opts)).isError).toBe(true);
    clock.advance(1000);
    expect((await change([{ key: 'live.speed', value: 0.9 }], opts)).isError).toBe(false);
    expect((await change([{ key: 'live.speed', value: 1.1 }], opts)).body.error).toMatch(/^At most 20 changes an hour/);
    // A batch that would cross the bound is refused whole.
    clock.advance(60_000);
    const two = await change(
      [
        { key: 'live.speed', value: 0.9 },
        { key: 'live.call_style', value: 'brisk' },
      ],
      opts,
    );
    expect(two.body.error).toBe(
      'At most 20 changes an hour may be asked of one device; 19 were asked in the last hour, so 1 more fit now. Try again later.',
    );
  });

  it('takes 8 devices per profile; a ninth is refused until one has been silent for 30 days', async () => {
    const opts = { profile: 'household' };
    for (let i = 0; i < 7; i++) {
      expect((await upload({ installation_id: `inst-${i}`, device: `Phone ${i}` }, opts)).status).toBe(200);
    }
    clock.advance(24 * 3600_000);
    expect((await upload({ installation_id: 'inst-7', device: 'Phone 7' }, opts)).status).toBe(200);
    const ninth = await upload({ installation_id: 'inst-8', device: 'Phone 8' }, opts);
    expect(ninth).toEqual({
      status: 409,
      body: {
        detail:
          'This profile already has 8 devices sharing settings with Hermes; a device is forgotten 30 days after its last upload',
      },
    });
    // A device already known keeps uploading.
    expect((await upload({ installation_id: 'inst-3', device: 'Phone 3' }, opts)).status).toBe(200);
    expect((await tool({ action: 'get' }, opts)).body.devices).toHaveLength(8);
    // 30 days after inst-0..2, 4..6 last uploaded they are forgotten, and the ninth fits.
    clock.advance(29 * 24 * 3600_000 - 60_000);
    expect((await upload({ installation_id: 'inst-8', device: 'Phone 8' }, opts)).status).toBe(409);
    clock.advance(60_000);
    expect((await upload({ installation_id: 'inst-8', device: 'Phone 8' }, opts)).status).toBe(200);
    expect((await tool({ action: 'get' }, opts)).body.devices?.map((device) => device.name).sort()).toEqual([
      'Phone 3',
      'Phone 7',
      'Phone 8',
    ]);
  });

  it('a request waits a day: handed over until then, expired at the day, and told once', async () => {
    const opts = { profile: 'expiry' };
    await upload({}, opts);
    const first = (await change([{ key: 'live.speed', value: 0.9 }], opts)).body.requests?.[0]?.id ?? '';
    const second = (await change([{ key: 'live.engine', value: 'gemini_live' }], opts)).body.requests?.[0]?.id ?? '';
    expect((await upload({}, opts)).body.requests?.map((r) => r.id)).toEqual([first, second]);
    clock.advance(1000);
    // Never picked up: Conduit does not sync again within its day.
    const never = (await change([{ key: 'live.call_style', value: 'brisk' }], opts)).body.requests?.[0]?.id ?? '';
    clock.advance(24 * 3600_000 - 2000);
    // One second before their day the requests are still open.
    expect((await tool({ action: 'get' }, opts)).body.open_requests?.map((r) => [r.id, r.state])).toEqual([
      [first, 'picked_up'],
      [second, 'picked_up'],
      [never, 'waiting'],
    ]);
    clock.advance(1000);
    expect((await tool({ action: 'get' }, opts)).body.outcomes?.map((r) => [r.id, r.state])).toEqual([
      [first, 'expired'],
      [second, 'expired'],
    ]);
    clock.advance(1000);
    const after = await tool({ action: 'get' }, opts);
    expect(after.body.outcomes?.map((r) => [r.id, r.state, r.meaning])).toEqual([
      [never, 'expired', 'Nobody acted on it within a day.'],
    ]);
    expect(after.body.open_requests).toEqual([]);
    // The phone gets nothing expired, and an outcome for a request it never had is ignored.
    expect((await upload({ outcomes: [{ id: never, outcome: 'applied' }] }, opts)).body.requests).toEqual([]);
    expect((await tool({ action: 'cancel', id: never }, opts)).body.error).toBe(
      `Request ${never} has already finished (expired); nothing to cancel.`,
    );
    // Conduit acted on a picked-up one before it heard of the expiry: the truth is kept and told.
    await upload({ outcomes: [{ id: second, outcome: 'applied', value: 'gemini_live' }] }, opts);
    expect((await tool({ action: 'get' }, opts)).body.outcomes?.map((r) => [r.id, r.state])).toEqual([
      [second, 'applied'],
    ]);
  });
});
