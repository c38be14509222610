import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCATION_LABEL, locationRequestInner } from '@conduit/contracts/dashboard/location';
import type { Host } from '../../src/app.js';
import { httpRelayGateway } from '../../src/delivery/relay-gateway.js';
import {
  locationFeature,
  relayLocationPush,
  type LocationPushOutcome,
  type LocationRelay,
} from '../../src/features/location/index.js';
import { ManualTimers } from '../../src/kernel/timers.js';
import { readOrCreateMcpToken } from '../../src/mcp/mcp-token.js';
import type { ProfileScope } from '../../src/notifier/notifier.js';
import { nodeKeys, nodeOpen, type NodeEnvelope } from '../crypto/independent-e2e.js';
import { ManualClock, tempHermesHome, testConfig } from '../support/config.js';
import { FakeRelay } from '../support/fake-relay.js';
import { callHook } from '../support/hook-call.js';
import { startHost } from '../support/host.js';
import { connectMcp } from '../support/mcp-client.js';
import { GATEWAY_ID, INSTALLATION_ID, writePairing } from '../support/pairing.js';
import { PhoneStandIn } from '../support/phone-stand-in.js';

/**
 * conduit_location through the MCP SDK's own client, as Hermes reaches it (the pre_tool_call hook signs
 * the calling turn first), and locate end to end: the real relay gateway posts a sealed
 * location.request to a relay stand-in, the test opens it with an independent implementation, and a
 * phone stand-in answers with a sealed batch that ends the tool's wait.
 */

const NOW_S = 1_780_000_000;
const home = tempHermesHome();
const clock = new ManualClock(NOW_S * 1000);
const timers = new ManualTimers();
const nowS = () => clock.now() / 1000;
const relay = new FakeRelay();
const e2eSecret = randomBytes(32);
const E2E_KID = '0123456789abcdef0123456789abcdef';
let host: Host & { url: string };
let mcpToken: string;

/** The real port over the real gateway, reporting each push so a test waits for it instead of sleeping. */
class ReportingRelay implements LocationRelay {
  readonly outcomes: LocationPushOutcome[] = [];
  private readonly waiters: ((outcome: LocationPushOutcome) => void)[] = [];
  private readonly real = relayLocationPush({
    gateway: httpRelayGateway({ userAgent: 'Conduit-Host/test', timeoutMs: 10_000 }),
    clock,
    pluginVersion: '0.1.0',
  });

  async requestLocation(profile: ProfileScope, request: Parameters<LocationRelay['requestLocation']>[1]) {
    const outcome = await this.real.requestLocation(profile, request);
    this.outcomes.push(outcome);
    for (const wake of this.waiters.splice(0)) wake(outcome);
    return outcome;
  }

  /** The outcome of the next push. */
  next(): Promise<LocationPushOutcome> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }
}
const reporting = new ReportingRelay();

const homeOf = (profile: string) => (profile === 'default' ? home.root : path.join(home.root, 'profiles', profile));
const phones = new Map<string, PhoneStandIn>();
/** One phone per profile: a new stand-in would be a new key, which drops its data. */
function phoneOf(profile: string): PhoneStandIn {
  let phone = phones.get(profile);
  if (!phone) {
    mkdirSync(homeOf(profile), { recursive: true });
    phone = new PhoneStandIn(host.url, 'location', LOCATION_LABEL, `iphone-${profile}`, { profile });
    phones.set(profile, phone);
  }
  return phone;
}
const sharing = (over: Record<string, unknown> = {}) => ({
  foreground: true,
  background: true,
  paused: false,
  retention_days: 7,
  precision: { foreground: 'precise', background: 'area' },
  features: [],
  ...over,
});
const PLACES = [
  { id: 'home', name: 'Home', kind: 'home' },
  { id: 'work', name: 'Work', kind: 'work' },
];
const fix = (id: string, over: Record<string, unknown> = {}) => ({
  id,
  at: nowS(),
  layer: 'background',
  kind: 'fix',
  lat: 51.5234,
  lon: -0.0876,
  area: { neighbourhood: 'Shoreditch', locality: 'London' },
  distances: [
    { place_id: 'home', m: 2432 },
    { place_id: 'work', m: 5100 },
  ],
  ...over,
});

beforeAll(async () => {
  await relay.start();
  host = await startHost(testConfig(home.root, { clock, timers }), {
    features: [locationFeature({ relay: reporting })],
  });
  mcpToken = await readOrCreateMcpToken(path.join(home.root, 'conduit-host'));
  writePairing(homeOf('default'), relay.url, {
    e2e: {
      kid: E2E_KID,
      secret: e2eSecret.toString('base64url'),
      created_at: '2026-05-01T00:00:00Z',
      installation_id: INSTALLATION_ID,
      gateway_id: GATEWAY_ID,
    },
  });
});
afterAll(async () => {
  await host.app.close();
  await relay.stop();
  home.cleanup();
});

async function tools(profile = 'default'): Promise<string[]> {
  const client = await connectMcp(host.url, mcpToken, profile === 'default' ? null : profile);
  try {
    return (await client.listTools()).tools.map((tool) => tool.name);
  } finally {
    await client.close();
  }
}

/** The hook first (it signs the calling turn into the arguments), then the tool, as Hermes does. */
async function toolCall(sessionId: string, args: Record<string, unknown>, profile = 'default') {
  const hooked = await callHook(host.url, host.hookToken, {
    hook_event_name: 'pre_tool_call',
    profile,
    session_id: sessionId,
    tool_name: 'mcp_conduit_conduit_location',
    tool_input: args,
    extra: { turn_id: `t-${sessionId}`, tool_call_id: 'tc-1' },
  });
  const answer = hooked.answer as { action: string; args: Record<string, unknown> };
  expect(answer.action).toBe('modify');
  const client = await connectMcp(host.url, mcpToken, profile === 'default' ? null : profile);
  try {
    const result = await client.callTool({ name: 'conduit_location', arguments: answer.args });
    const text = (result.content as { type: string; text: string }[])[0]?.text ?? '';
    return { isError: result.isError === true, text, json: () => JSON.parse(text) as Record<string, unknown> };
  } finally {
    await client.close();
  }
}

function readLog(profile = 'default'): { action: string; via: string; chat: string | null }[] {
  const db = new Database(path.join(homeOf(profile), 'conduit-location.sqlite3'), { readonly: true });
  try {
    return db.prepare('SELECT action, via, chat FROM location_reads ORDER BY id').all() as {
      action: string;
      via: string;
      chat: string | null;
    }[];
  } finally {
    db.close();
  }
}

describe('conduit_location reads', () => {
  it('is not offered before a phone shares location, and is once one has', async () => {
    expect(await tools()).not.toContain('conduit_location');
    const phone = phoneOf('default');
    expect((await phone.agree()).status).toBe(200);
    // A key alone shares nothing yet.
    expect(await tools()).not.toContain('conduit_location');
    const sent = await phone.send({ v: 1, sharing: sharing(), places: PLACES, fixes: [fix('f-1')] });
    expect(sent.status).toBe(200);
    expect(await tools()).toContain('conduit_location');
    expect(await tools('work')).not.toContain('conduit_location');
  });

  it('answers now, places, history and distance_to for the main chat, logging each with its chat', async () => {
    const now = await toolCall('chat-1', { action: 'now' });
    expect(now.isError).toBe(false);
    expect(now.json()).toMatchObject({
      ok: true,
      sharing: 'on',
      fixes: [{ where: 'in Shoreditch, London', lat: 51.52, lon: -0.09, detail: 'area' }],
    });
    expect((await toolCall('chat-1', { action: 'places' })).json()).toMatchObject({
      devices: [{ places: [{ name: 'Home' }, { name: 'Work' }] }],
    });
    expect((await toolCall('chat-1', { action: 'history', hours: 1 })).json()).toMatchObject({
      fixes: [{ where: 'in Shoreditch, London' }],
    });
    expect((await toolCall('chat-1', { action: 'distance_to', place: 'Work' })).json()).toMatchObject({
      m: 5100,
      to: { place_id: 'work', name: 'Work' },
    });
    const toPoint = (await toolCall('chat-1', { action: 'distance_to', lat: 51.52, lon: -0.09 })).json();
    expect(toPoint).toMatchObject({ m: 0, note: 'From an area-level position: about ±1 km.' });
    const unknown = await toolCall('chat-1', { action: 'distance_to', place: 'Narnia' });
    expect(unknown.isError).toBe(true);
    expect(readLog()).toEqual(
      ['now', 'places', 'history', 'distance_to', 'distance_to', 'distance_to'].map((action) => ({
        action,
        via: 'tool',
        chat: 'chat-1',
      })),
    );
  });

  it('refuses a subagent and a call whose turn it cannot prove', async () => {
    const client = await connectMcp(host.url, mcpToken);
    const unproved = await client.callTool({ name: 'conduit_location', arguments: { action: 'now' } });
    await client.close();
    expect(unproved.isError).toBe(true);
    await callHook(host.url, host.hookToken, {
      hook_event_name: 'subagent_start',
      profile: 'default',
      session_id: 'parent',
      extra: { child_session_id: 'child-1', parent_session_id: 'parent' },
    });
    const child = await toolCall('child-1', { action: 'now' });
    expect(child.isError).toBe(true);
    expect(child.text).toContain('not available to subagents');
  });

  it('answers "paused" and "off" for every action when the user paused or turned sharing off', async () => {
    const phone = phoneOf('work');
    await phone.agree();
    await phone.send({ v: 1, sharing: sharing({ paused: true }), places: PLACES, fixes: [fix('p-1')] });
    for (const action of ['now', 'places', 'history', 'distance_to', 'locate']) {
      const answer = await toolCall('work-chat', { action, place: 'Home' }, 'work');
      expect(answer.json()).toMatchObject({ ok: true, sharing: 'paused' });
    }
    await phone.send({ v: 1, sharing: sharing({ foreground: false, background: false }) });
    expect((await toolCall('work-chat', { action: 'now' }, 'work')).json()).toMatchObject({ sharing: 'off' });
    expect(reporting.outcomes).toEqual([]);
  });
});

describe('locate', () => {
  /** The last event the relay stand-in received, opened with node:crypto as the phone would. */
  function lastPush() {
    const body = relay.events.at(-1)?.body ?? {};
    const envelope = body.e2e as NodeEnvelope;
    const inner = nodeOpen(envelope, 'location.request', INSTALLATION_ID, GATEWAY_ID, nodeKeys(e2eSecret).push);
    return { body, envelope, inner: locationRequestInner.parse(inner) };
  }

  it('posts a sealed location.request and answers with the fix the next ingest brings', async () => {
    const pushed = reporting.next();
    const call = toolCall('chat-2', { action: 'locate' });
    expect(await pushed).toEqual({ kind: 'sent', delivered: true });
    const { body, envelope, inner } = lastPush();
    expect(body).toMatchObject({ type: 'location.request', event_id: envelope.msg, plugin_version: '0.1.0' });
    expect(inner).toEqual({
      profile: 'default',
      location: { v: 1, kind: 'locate', request_id: expect.any(String) },
    });
    // The relay sees no request id, profile or content in the clear.
    expect(envelope.req).toBe('');
    expect(JSON.stringify(body)).not.toContain(inner.location.request_id);
    expect(Object.keys(body).sort()).toEqual(['e2e', 'event_id', 'plugin_version', 'type']);

    // The phone answers the push with its next sealed batch: a fresh fix at Work.
    clock.advance(4000);
    const answered = await phoneOf('default').send({
      v: 1,
      sharing: sharing(),
      fixes: [fix('fresh', { place_id: 'work', at: nowS(), area: { locality: 'City of London' } })],
    });
    expect(answered.status).toBe(200);
    const result = (await call).json();
    expect(result).toMatchObject({ ok: true, action: 'locate', fresh: true, fix: { where: 'at Work' } });
    expect(readLog().at(-1)).toEqual({ action: 'locate', via: 'tool', chat: 'chat-2' });
  });

  it('allows one locate every 5 minutes, also across a restart, and 30 a day', async () => {
    const events = relay.events.length;
    const again = (await toolCall('chat-2', { action: 'locate' })).json();
    expect(again).toMatchObject({ fresh: false, latest: { where: 'at Work' } });
    expect(String(again.refused)).toMatch(/one locate every 5 minutes/);

    // The budget lives in the store: a new service on the same home still refuses.
    await host.app.close();
    host = await startHost(testConfig(home.root, { clock, timers }), {
      features: [locationFeature({ relay: reporting })],
    });
    phones.clear();
    const restarted = (await toolCall('chat-2', { action: 'locate' })).json();
    expect(String(restarted.refused)).toMatch(/one locate every 5 minutes/);
    expect(relay.events.length).toBe(events);

    // 29 more earlier today (one every 5 minutes) make 30: the day's budget is spent.
    const db = new Database(path.join(home.root, 'conduit-location.sqlite3'));
    const insert = db.prepare("INSERT INTO location_locates (request_id, at, state) VALUES (?, ?, 'sent')");
    for (let i = 1; i <= 29; i += 1) insert.run(`earlier-${i}`, nowS() - 3600 - i * 300);
    db.close();
    clock.advance(5 * 60 * 1000);
    const spent = (await toolCall('chat-2', { action: 'locate' })).json();
    expect(String(spent.refused)).toMatch(/At most 30 locates a day/);
    expect(relay.events.length).toBe(events);
  });

  it('waits at most 20 s, then answers the latest fix and says it is waiting', async () => {
    // A day later the budget is back.
    clock.advance(86_400 * 1000);
    await phoneOf('default').agree(); // the same key again after the restart: its data is kept
    await phoneOf('default').send({ v: 1, sharing: sharing({ retention_days: 30 }), fixes: [fix('yesterday')] });
    const pushed = reporting.next();
    const before = timers.waiting;
    const call = toolCall('chat-3', { action: 'locate' });
    expect((await pushed).kind).toBe('sent');
    await timers.untilWaiting(before + 1);
    timers.advance(20_000);
    const result = (await call).json();
    expect(result).toMatchObject({
      ok: true,
      fresh: false,
      waiting: true,
      latest: { where: 'in Shoreditch, London' },
    });
    expect(String(result.message)).toContain('has not answered within 20 s');
  });

  it('is not sent without background sharing, or when the pairing is not end-to-end encrypted', async () => {
    const events = relay.events.length;
    const foreground = phoneOf('foreground');
    await foreground.agree();
    await foreground.send({
      v: 1,
      sharing: sharing({ background: false }),
      fixes: [fix('fg', { layer: 'foreground' })],
    });
    const noBackground = await toolCall('fg-chat', { action: 'locate' }, 'foreground');
    expect(noBackground.isError).toBe(true);
    expect(noBackground.text).toContain('background location sharing');

    const plain = phoneOf('plain');
    writePairing(homeOf('plain'), relay.url);
    await plain.agree();
    await plain.send({ v: 1, sharing: sharing(), fixes: [fix('p')] });
    const unsealed = (await toolCall('plain-chat', { action: 'locate' }, 'plain')).json();
    expect(String(unsealed.refused)).toContain('only ever sent sealed');
    expect(unsealed.latest).toMatchObject({ where: 'in Shoreditch, London' });
    expect(relay.events.length).toBe(events);
    // A push that never left spends no budget: the pairing fixed, the next locate goes out.
    writePairing(homeOf('plain'), relay.url, {
      e2e: {
        kid: E2E_KID,
        secret: e2eSecret.toString('base64url'),
        created_at: '2026-05-01T00:00:00Z',
        installation_id: INSTALLATION_ID,
        gateway_id: GATEWAY_ID,
      },
    });
    const pushed = reporting.next();
    const call = toolCall('plain-chat', { action: 'locate' }, 'plain');
    expect((await pushed).kind).toBe('sent');
    clock.advance(3000);
    await plain.send({ v: 1, sharing: sharing(), fixes: [fix('p-fresh')] });
    expect((await call).json()).toMatchObject({ fresh: true });
  });

  it('reports a relay without a location push token for the phone', async () => {
    clock.advance(10 * 60 * 1000);
    relay.scripted.push({ status: 409, body: { error: 'location_push_unavailable' } });
    const answer = (await toolCall('chat-4', { action: 'locate' })).json();
    expect(String(answer.refused)).toContain('has not registered for location requests');
    expect(reporting.outcomes.at(-1)).toEqual({ kind: 'no_location_push' });
  });
});
