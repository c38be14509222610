/**
 * conduit_maps navigate through the MCP SDK's own client (after the pre_tool_call hook, as Hermes calls
 * it), wired to present exactly as the service wires it (presentMapsNavigator): with a Conduit that
 * advertised maps-navigate in its present exchange, a confirm prompt carrying `maps` in the present
 * store, returned by the phone's next exchange and nudged through a stand-in of the relay's POST
 * /v1/events; without it, an Apple Maps link for a text chat. Time is a ManualClock; nothing sleeps.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Host } from '../../src/app.js';
import { presentMapsNavigator } from '../../src/features/index.js';
import { mapsFeature, type SharedFix } from '../../src/features/maps/index.js';
import { navigateDestination } from '../../src/features/maps/maps-navigate.js';
import { PlaceCache } from '../../src/features/maps/place-cache.js';
import { presentFeature, readPrompt } from '../../src/features/present/index.js';
import { readOrCreateMcpToken } from '../../src/mcp/mcp-token.js';
import { ManualClock, TEST_TOKEN, tempHermesHome, testConfig } from '../support/config.js';
import { FakeRelay } from '../support/fake-relay.js';
import { callHook } from '../support/hook-call.js';
import { startHost } from '../support/host.js';
import { connectMcp } from '../support/mcp-client.js';
import { writePairing } from '../support/pairing.js';

const home = tempHermesHome();
mkdirSync(path.join(home.root, 'profiles', 'solo'), { recursive: true });
const clock = new ManualClock(Date.UTC(2026, 11, 4, 9, 0, 0));
const relay = new FakeRelay();
let host: Host & { url: string };
let mcpToken: string;

/** The user's last shared fix: it must never reach a link or a prompt. */
const fix: SharedFix = { lat: 48.858372, lon: 2.294481, detail: 'precise' };
const reads: { profile: string; action: string; chat: string }[] = [];

beforeAll(async () => {
  await relay.start();
  writePairing(home.root, relay.url);
  host = await startHost(testConfig(home.root, { clock }), {
    features: [
      mapsFeature({
        origin: { me: () => fix, savedPlaceNames: () => ['Home', 'Work'] },
        readLog: { record: (profile, entry) => void reads.push({ profile: profile.name, ...entry }) },
        navigator: presentMapsNavigator,
        // navigate asks neither Apple nor the relay's token route: any answer from either fails the test.
        appleOrigin: 'http://127.0.0.1:9',
        relayFetch: () => Promise.reject(new Error('navigate asked the relay for a Maps token')),
      }),
      presentFeature(),
    ],
  });
  mcpToken = await readOrCreateMcpToken(path.join(home.root, 'conduit-host'));
});
afterAll(async () => {
  await host.app.close();
  await relay.stop();
  home.cleanup();
});

async function tools(profile = 'default'): Promise<string[]> {
  const client = await connectMcp(host.url, mcpToken, profile);
  try {
    return (await client.listTools()).tools.map((tool) => tool.name);
  } finally {
    await client.close();
  }
}

let turn = 0;
/** The hook first (it signs the calling turn into the arguments), then the tool, as Hermes does. */
async function maps(args: Record<string, unknown>, options: { profile?: string; chat?: string } = {}) {
  const profile = options.profile ?? 'default';
  turn++;
  const hooked = await callHook(host.url, host.hookToken, {
    hook_event_name: 'pre_tool_call',
    profile,
    session_id: options.chat ?? 'chat-1',
    tool_name: 'mcp_conduit_conduit_maps',
    tool_input: args,
    extra: { turn_id: `t-${turn}`, tool_call_id: `tc-${turn}` },
  });
  const answer = hooked.answer as { action: string; args: Record<string, unknown> };
  expect(answer.action).toBe('modify');
  const client: Client = await connectMcp(host.url, mcpToken, profile);
  try {
    const result = await client.callTool({ name: 'conduit_maps', arguments: answer.args });
    const text = (result.content as { type: string; text: string }[])[0]?.text ?? '';
    return { isError: result.isError === true, text, json: () => JSON.parse(text) as Record<string, unknown> };
  } finally {
    await client.close();
  }
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
  maps?: { to: string; mode: string };
}

/** Conduit's present exchange: what it can do in, the waiting prompts out. */
async function exchange(features: string[], profile = 'default'): Promise<PhonePrompt[]> {
  const response = await fetch(`${host.url}/api/plugins/conduit_push/present/exchange?profile=${profile}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_TOKEN}` },
    body: JSON.stringify({ installation_id: 'inst-1', device: 'iPhone', app_version: '1.47', features, results: [] }),
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { prompts: PhonePrompt[] }).prompts;
}

describe('conduit_maps navigate without maps-navigate', () => {
  it('answers an Apple Maps link with the mode as dirflg, keeps no prompt and wakes no phone', async () => {
    await exchange(['present-v1']);
    const cases: [Record<string, unknown>, string][] = [
      [{ to: 'Gare de Lyon, Paris' }, 'https://maps.apple.com/?daddr=Gare%20de%20Lyon%2C%20Paris&dirflg=d'],
      [
        { to: 'Gare de Lyon, Paris', mode: 'walking' },
        'https://maps.apple.com/?daddr=Gare%20de%20Lyon%2C%20Paris&dirflg=w',
      ],
      [{ to: '48.8443, 2.3744', mode: 'transit' }, 'https://maps.apple.com/?daddr=48.8443%2C2.3744&dirflg=r'],
      // Apple documents no cycling dirflg: Maps opens in the user's preferred mode.
      [{ to: 'Musée du Louvre', mode: 'cycling' }, 'https://maps.apple.com/?daddr=Mus%C3%A9e%20du%20Louvre'],
    ];
    for (const [args, link] of cases) {
      const answer = await maps({ action: 'navigate', ...args });
      expect(answer.isError, answer.text).toBe(false);
      expect(answer.json()).toMatchObject({ navigate: 'link', link, mode: args.mode ?? 'automobile' });
      // The link starts from wherever the phone is: no saddr, and never the user's own coordinates.
      expect(answer.text).not.toContain('saddr');
      expect(answer.text).not.toContain(String(fix.lat));
    }
    expect((await maps({ action: 'navigate', to: 'Musée du Louvre', mode: 'cycling' })).json().note).toMatch(
      /cannot preselect cycling/,
    );
    expect(await exchange(['present-v1'])).toEqual([]);
    expect(relay.events).toHaveLength(0);
  });
});

describe('conduit_maps navigate with a Conduit that opens Maps', () => {
  it('keeps a Go prompt carrying maps {to, mode}, nudges the phone, and the next exchange returns it', async () => {
    await exchange(['present-v1', 'maps-navigate']);
    const asked = await maps({ action: 'navigate', to: '48.8443,2.3744', mode: 'walking' });
    expect(asked.isError, asked.text).toBe(false);
    const answer = asked.json();
    expect(answer).toMatchObject({
      navigate: 'phone',
      to: '48.8443,2.3744',
      mode: 'walking',
      phone_notified: true,
      expires_at: new Date(clock.now() + 30 * 60_000).toISOString(),
    });
    expect(answer.note).toMatch(/Go button/);
    expect(answer).not.toHaveProperty('link');
    const id = String(answer.prompt_id);

    const [prompt, ...others] = await exchange(['present-v1', 'maps-navigate']);
    expect(others).toEqual([]);
    expect(prompt).toMatchObject({
      id,
      title: 'Directions to 48.8443,2.3744',
      action_label: 'Go',
      spoken_yes: ['go'],
      session_id: 'chat-1',
      maps: { to: '48.8443,2.3744', mode: 'walking' },
    });
    expect(prompt?.preview).toContain('**48.8443,2.3744**');
    expect(prompt?.preview).toContain('on foot');
    expect((prompt?.expires_at ?? 0) - (prompt?.created_at ?? 0)).toBe(30 * 60);
    expect(await readPrompt(home.root, id, clock.now() / 1000)).toMatchObject({
      state: 'waiting',
      maps: { to: '48.8443,2.3744', mode: 'walking' },
    });

    // The nudge is present's: a phone.changes alert with the prompt's event id.
    expect(relay.events.map((event) => event.body)).toEqual([
      expect.objectContaining({ type: 'phone.changes', event_id: `present:${id}`, mode: 'alert' }),
    ]);
  });

  it("opens a saved place by the phone's name for it, with the model's title, and logs navigate without the place", async () => {
    const before = reads.length;
    const asked = await maps({ action: 'navigate', to: 'work', title: 'Off to the office' }, { chat: 'chat-2' });
    expect(asked.isError, asked.text).toBe(false);
    const id = String(asked.json().prompt_id);
    const prompt = (await exchange(['present-v1', 'maps-navigate'])).find((waiting) => waiting.id === id);
    expect(prompt).toMatchObject({
      title: 'Off to the office',
      session_id: 'chat-2',
      maps: { to: 'Work', mode: 'automobile' },
    });
    expect(reads.slice(before)).toEqual([
      expect.objectContaining({ profile: 'default', action: 'navigate', chat: 'chat-2' }),
    ]);
    expect(JSON.stringify(reads)).not.toMatch(/Work|48\.8443|Gare de Lyon/);
  });

  it('answers a subagent as the rest of conduit_maps does', async () => {
    await callHook(host.url, host.hookToken, {
      hook_event_name: 'subagent_start',
      profile: 'default',
      session_id: 'chat-1',
      extra: { child_session_id: 'child-1', parent_session_id: 'chat-1' },
    });
    const child = await maps({ action: 'navigate', to: 'Gare de Lyon' }, { chat: 'child-1' });
    expect(child.isError, child.text).toBe(false);
    expect(child.json()).toMatchObject({ navigate: 'phone', to: 'Gare de Lyon', mode: 'automobile' });
  });

  it('is offered to a profile that is not paired once its Conduit opens Maps, and keeps the prompt unnudged', async () => {
    expect(await tools('solo')).not.toContain('conduit_maps');
    await exchange(['present-v1', 'maps-navigate'], 'solo');
    expect(await tools('solo')).toContain('conduit_maps');
    const events = relay.events.length;
    const asked = await maps({ action: 'navigate', to: 'Gare de Lyon' }, { profile: 'solo', chat: 'solo-chat' });
    expect(asked.json()).toMatchObject({ navigate: 'phone', phone_notified: false });
    expect(relay.events).toHaveLength(events);
    expect(await exchange(['present-v1', 'maps-navigate'], 'solo')).toEqual([
      expect.objectContaining({ maps: { to: 'Gare de Lyon', mode: 'automobile' } }),
    ]);
  });

  it('refuses a bad to, mode or title with a clear sentence, keeping no prompt', async () => {
    const waiting = (await exchange(['present-v1', 'maps-navigate'])).length;
    const events = relay.events.length;
    const cases: [Record<string, unknown>, RegExp][] = [
      [{}, /to is required/],
      [{ to: '   ' }, /A place is empty/],
      [{ to: 'me' }, /navigate needs a destination other than "me"/],
      [{ to: '91.5,2.3' }, /latitude within ±90/],
      [{ to: 'place_id:NoSuchPlace1' }, /place_id:NoSuchPlace1 is not one this profile was given/],
      // The SDK checks the schema first: its sentence names the argument and what it takes.
      [{ to: 'Gare de Lyon', mode: 'flying' }, /"automobile"\|"walking"\|"transit"\|"cycling" at mode/],
      [{ to: 'Gare de Lyon', title: 'x'.repeat(81) }, /<=80 characters at title/],
    ];
    for (const [args, expected] of cases) {
      const answer = await maps({ action: 'navigate', ...args });
      expect(answer.isError, JSON.stringify(args)).toBe(true);
      expect(answer.text).toMatch(expected);
    }
    expect(await exchange(['present-v1', 'maps-navigate'])).toHaveLength(waiting);
    expect(relay.events).toHaveLength(events);
  });
});

describe("navigate's destination", () => {
  it('opens a place an earlier answer named by its address, or its coordinates when it has none', () => {
    const places = new PlaceCache();
    const louvre = places.remember(home.root, {
      name: 'Musée du Louvre',
      address: 'Rue de Rivoli, 75001 Paris, France',
      lat: 48.8606,
      lon: 2.3376,
    });
    const pin = places.remember(home.root, { name: 'Dropped pin', address: null, lat: 48.85, lon: 2.35 });
    expect(navigateDestination(home.root, { kind: 'place_id', id: louvre }, places, [])).toEqual({
      to: 'Rue de Rivoli, 75001 Paris, France',
      label: 'Musée du Louvre',
    });
    expect(navigateDestination(home.root, { kind: 'place_id', id: pin }, places, [])).toEqual({
      to: '48.85,2.35',
      label: 'Dropped pin',
    });
    // Another profile was never given that place.
    expect(
      navigateDestination(path.join(home.root, 'profiles', 'solo'), { kind: 'place_id', id: louvre }, places, []),
    ).toMatchObject({ error: expect.stringContaining(`place_id:${louvre}`) });
  });
});
