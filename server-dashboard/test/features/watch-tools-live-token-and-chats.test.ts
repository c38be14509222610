/**
 * Watch tools `live_token`, `find_chat` and `read_chat`, end to end: the real host service grants them
 * on a real relay process and answers the sealed calls a Watch stand-in (its own node:crypto sealing)
 * makes through the relay's Watch side. Google's auth_tokens endpoint is a stand-in; the chats are real
 * Hermes state.db stores built from Hermes' schema.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Host } from '../../src/app.js';
import { geminiLiveFeature } from '../../src/features/gemini-live/index.js';
import { watchToolsFeature } from '../../src/features/watch/index.js';
import { createHermesStateDb, seedHermesSessions, type SeedSession } from '../fixtures/hermes-state-db.js';
import { ManualClock, TEST_TOKEN, tempHermesHome, testConfig } from '../support/config.js';
import { startHost } from '../support/host.js';
import { googleAuthTokens, ProviderStandIn } from '../support/provider-stand-ins.js';
import { RealRelay, WatchStandIn, type Grant } from '../support/watch-stand-in.js';

const PREFIX = '/api/plugins/conduit_push';
const GEMINI_KEY = 'AIza-watch-test-key-0123456789';
const T0 = 1_780_000_000;

const home = tempHermesHome();
const clock = new ManualClock();
const google = new ProviderStandIn(googleAuthTokens(GEMINI_KEY));
let relay: RealRelay;
let host: Host & { url: string };

async function hostCall(route: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(host.url + PREFIX + route, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${TEST_TOKEN}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function grantFor(profile: string, tools: string[]): Promise<WatchStandIn> {
  const answer = await hostCall(`/watch-tools/grant?profile=${profile}`, { tools });
  if (answer.status !== 200) throw new Error(`grant ${answer.status} ${JSON.stringify(answer.body)}`);
  return new WatchStandIn(answer.body as unknown as Grant);
}

async function revoke(profile: string, watch: WatchStandIn): Promise<void> {
  await hostCall(`/watch-tools/revoke?profile=${profile}`, { grant_id: watch.grant.grant_id });
}

function profileDir(name: string, files: Record<string, string> = {}): string {
  const dir = path.join(home.root, 'profiles', name);
  mkdirSync(dir, { recursive: true });
  for (const [file, text] of Object.entries(files)) writeFileSync(path.join(dir, file), text);
  return dir;
}

async function pairedProfile(name: string, files: Record<string, string> = {}): Promise<string> {
  const dir = profileDir(name, files);
  await relay.pair(dir);
  return dir;
}

const day = (seconds: number) => new Date(seconds * 1000).toISOString().slice(0, 10);
const KEYED = { '.env': `GEMINI_API_KEY=${GEMINI_KEY}\n` };

/** A chat long enough that it is never read whole: 300 turns of about 200 characters. */
const LONG_CHAT: SeedSession = {
  id: 's-long',
  title: 'Long novel notes',
  startedAt: T0 + 50,
  messages: Array.from({ length: 300 }, (_, i) => ({
    role: i % 2 === 0 ? 'user' : 'assistant',
    content: `Turn ${i}: ${'the lighthouse keeper walks the cliff path at dusk, '.repeat(4)}`,
  })),
};

/** As long, with no summary stored: only its newest turns can be read. */
const PLAIN_LONG_CHAT: SeedSession = {
  id: 's-plain-long',
  title: 'Ferry timetable',
  startedAt: T0 + 40,
  messages: Array.from({ length: 120 }, (_, i) => ({
    role: i % 2 === 0 ? 'user' : 'assistant',
    content: `Ferry ${i}: ${'the ferryman checks the tide table twice before leaving, '.repeat(4)}`,
  })),
};

const CHATS: SeedSession[] = [
  {
    id: 's-trip',
    title: 'Trip to Oslo',
    startedAt: T0,
    messages: [
      { role: 'user', content: 'Plan a trip to Oslo in March' },
      { role: 'tool', content: '{"flights": ["SK 4023"]}' },
      { role: 'assistant', content: 'Sure: fly SK 4023 on the 3rd, stay at the harbour.' },
    ],
  },
  {
    id: 's-deploy',
    title: 'Deploy checklist',
    startedAt: T0 + 100,
    messages: [
      { role: 'user', content: 'What is left before the kubernetes rollout?' },
      { role: 'assistant', content: 'Two migrations and the canary.' },
    ],
  },
  {
    id: 's-untitled',
    startedAt: T0 + 200,
    messages: [
      { role: 'user', content: 'What is the capital of Norway?\nAsk ```twice```' },
      { role: 'assistant', content: 'Oslo.' },
    ],
  },
  { id: 's-empty', title: 'Empty chat', startedAt: T0 + 10 },
  LONG_CHAT,
  PLAIN_LONG_CHAT,
];

beforeAll(async () => {
  await google.start();
  relay = await RealRelay.start(home.root);
  await pairedProfile('gem', KEYED);
  await pairedProfile('shared', KEYED);
  await pairedProfile('nokey');
  const chats = await pairedProfile('chats');
  createHermesStateDb(path.join(chats, 'state.db'));
  seedHermesSessions(path.join(chats, 'state.db'), CHATS);
  // A voice call saved on the long chat left Conduit's summary of its first 200 messages.
  const db = new Database(path.join(chats, 'state.db'));
  db.prepare('INSERT INTO state_meta (key, value) VALUES (?, ?)').run(
    'conduit.voice.summary:s-long',
    JSON.stringify({ text: 'The keeper was introduced and the storm began.', covers: 200 }),
  );
  db.close();
  const neighbour = await pairedProfile('neighbour');
  createHermesStateDb(path.join(neighbour, 'state.db'));
  seedHermesSessions(path.join(neighbour, 'state.db'), [
    {
      id: 's-secret',
      title: 'Salary talk',
      startedAt: T0 + 500,
      messages: [{ role: 'user', content: 'My salary in Oslo is private' }],
    },
  ]);
  await pairedProfile('fresh');
  const strange = await pairedProfile('strange');
  createHermesStateDb(path.join(strange, 'state.db'), { without: ['sessions'] });
  host = await startHost(testConfig(home.root, { clock, upstreams: { google: google.url } }), {
    features: [geminiLiveFeature, watchToolsFeature],
  });
}, 120_000);

afterAll(async () => {
  await host?.app.close();
  await relay?.stop();
  await google.stop();
  await rm(home.root, { recursive: true, force: true });
});

describe('live_token: a Gemini Live token for the Watch, minted as the phone route mints one', () => {
  it("answers the phone route's fields sealed, from Google's auth_tokens with the profile's key", async () => {
    const watch = await grantFor('gem', ['live_token']);
    expect(watch.grant.tools).toEqual(['live_token']);
    const sent = google.nextCall();
    const minted = await watch.call('live_token', {});
    const call = await sent;
    expect(call).toMatchObject({ method: 'POST', url: '/v1alpha/auth_tokens' });
    expect(call.headers['x-goog-api-key']).toBe(GEMINI_KEY);
    expect(call.body).toMatchObject({ uses: 1, bidiGenerateContentSetup: { model: 'models/gemini-3.8-live' } });
    expect(minted.answer).toEqual({
      ok: true,
      token: expect.stringMatching(/^auth_tokens\/[0-9a-f]{24}$/) as unknown,
      expires_at: expect.any(String) as unknown,
      new_session_expires_at: expect.any(String) as unknown,
      model: 'gemini-3.8-live',
      websocket_url:
        'wss://generativelanguage.googleapis.com/ws/google.ai.generativelanguage.v1alpha.GenerativeService.BidiGenerateContentConstrained',
    });
    // The relay carried only the sealed box: the token never crossed it readable.
    const token = (minted.answer as { token: string }).token;
    expect(JSON.stringify(minted.body)).not.toContain(token);
    const phone = await hostCall('/gemini-live/token?profile=gem');
    expect(Object.keys(phone.body).sort()).toEqual(Object.keys(minted.answer as object).sort());
    await revoke('gem', watch);
  });

  it('mints at most 6 a grant; a failed mint does not count, and a renewal counts its own', async () => {
    clock.advance(60_000);
    const watch = await grantFor('gem', ['live_token']);
    google.answer = () => ({ status: 500, body: { error: { code: 500, message: 'Internal error' } } });
    try {
      expect((await watch.call('live_token', {})).answer).toEqual({
        ok: false,
        status: 502,
        detail: 'Google rejected the token request (500): Internal error',
      });
    } finally {
      google.answer = googleAuthTokens(GEMINI_KEY);
    }
    for (let i = 0; i < 6; i += 1) expect((await watch.call('live_token', {})).answer).toMatchObject({ ok: true });
    const before = google.calls.length;
    expect((await watch.call('live_token', {})).answer).toEqual({
      ok: false,
      status: 429,
      detail: 'This Watch call has minted all the Gemini Live tokens it may',
    });
    expect(google.calls.length).toBe(before);
    const renewal = await grantFor('gem', ['live_token']);
    expect((await renewal.call('live_token', {})).answer).toMatchObject({ ok: true });
    await revoke('gem', watch);
    await revoke('gem', renewal);
  });

  it("counts against the phone route's 20 a minute per profile, both ways", async () => {
    clock.advance(60_000);
    for (let i = 0; i < 18; i += 1) expect((await hostCall('/gemini-live/token?profile=shared')).status).toBe(200);
    const watch = await grantFor('shared', ['live_token']);
    expect((await watch.call('live_token', {})).answer).toMatchObject({ ok: true });
    expect((await hostCall('/gemini-live/token?profile=shared')).status).toBe(200);
    const before = google.calls.length;
    expect((await watch.call('live_token', {})).answer).toEqual({
      ok: false,
      status: 429,
      detail: 'Too many Gemini Live token requests; try again shortly',
    });
    expect(await hostCall('/gemini-live/token?profile=shared')).toMatchObject({ status: 429 });
    expect(google.calls.length).toBe(before);
    clock.advance(60_000);
    expect((await watch.call('live_token', {})).answer).toMatchObject({ ok: true });
    await revoke('shared', watch);
  });

  it('refuses live_token alone without a Gemini key (503) and leaves it out beside other tools', async () => {
    expect(await hostCall('/watch-tools/grant?profile=nokey', { tools: ['live_token'] })).toMatchObject({
      status: 503,
      body: { detail: 'GEMINI_API_KEY is not set on this Hermes host' },
    });
    const watch = await grantFor('nokey', ['web_search', 'live_token']);
    expect(watch.grant.tools).toEqual(['web_search']);
    expect((await watch.call('live_token', {})).answer).toEqual({
      ok: false,
      status: 403,
      detail: "This grant doesn't allow live_token",
    });
    await revoke('nokey', watch);
  });
});

describe("find_chat and read_chat: the grant's profile's Hermes chats", () => {
  it('finds chats by title and words, newest first, numbered as fenced text', async () => {
    const watch = await grantFor('chats', ['find_chat', 'read_chat']);
    expect(watch.grant.tools).toEqual(['find_chat', 'read_chat']);
    const found = await watch.call('find_chat', { query: '  oslo ' });
    expect(JSON.stringify(found.body)).not.toContain('Oslo');
    expect(found.answer).toEqual({
      ok: true,
      count: 2,
      chats: [
        '```',
        // The chat's own backticks and line breaks cannot close the fence or add a line.
        `1. Untitled, beginning "What is the capital of Norway? Ask '''twice'''" (last active ${day(T0 + 201)})`,
        `2. Trip to Oslo (last active ${day(T0 + 2)})`,
        '```',
      ].join('\n'),
    });
    // The tool's row ("SK 4023" in a tool result) is no chat text: only the user's and Hermes' words match.
    expect((await watch.call('find_chat', { query: 'flights' })).answer).toEqual({ ok: true, count: 0, chats: '' });
    await revoke('chats', watch);
  });

  it('tries a query that matches nothing whole a word at a time', async () => {
    const watch = await grantFor('chats', ['find_chat']);
    expect((await watch.call('find_chat', { query: 'that kubernetes thing from last week' })).answer).toMatchObject({
      ok: true,
      count: 1,
      chats: expect.stringContaining('1. Deploy checklist') as unknown,
    });
    await revoke('chats', watch);
  });

  it("reads a chat of the grant's newest search by its number: user and Hermes text, word for word", async () => {
    const watch = await grantFor('chats', ['find_chat', 'read_chat']);
    expect((await watch.call('read_chat', { number: 1 })).answer).toEqual({ ok: true, unknown: true });
    await watch.call('find_chat', { query: 'Oslo' });
    expect((await watch.call('read_chat', { number: 2 })).answer).toEqual({
      ok: true,
      chat: 'User: Plan a trip to Oslo in March\n\nHermes: Sure: fly SK 4023 on the 3rd, stay at the harbour.',
      title: 'Trip to Oslo',
    });
    expect((await watch.call('read_chat', { number: 3 })).answer).toEqual({ ok: true, unknown: true });
    // A newer search replaces the numbers.
    await watch.call('find_chat', { query: 'kubernetes' });
    expect((await watch.call('read_chat', { number: 2 })).answer).toEqual({ ok: true, unknown: true });
    expect((await watch.call('read_chat', { number: 1 })).answer).toMatchObject({ title: 'Deploy checklist' });
    await watch.call('find_chat', { query: 'Empty chat' });
    expect((await watch.call('read_chat', { number: 1 })).answer).toEqual({ ok: true, chat: '', title: 'Empty chat' });
    await revoke('chats', watch);
  });

  it('reads a long chat bounded: the stored summary of its start, then the newest turns that fit', async () => {
    const watch = await grantFor('chats', ['find_chat', 'read_chat']);
    await watch.call('find_chat', { query: 'lighthouse' });
    const answer = (await watch.call('read_chat', { number: 1 })).answer as { ok: true; chat: string; title: string };
    expect(answer.title).toBe('Long novel notes');
    expect(Buffer.byteLength(JSON.stringify(answer.chat))).toBeLessThanOrEqual(12_000);
    expect(answer.chat.startsWith('Summary of the earlier part:\nThe keeper was introduced and the storm began.')).toBe(
      true,
    );
    expect(answer.chat).toMatch(
      /\n\n\(\d+ messages after the summary not shown\.\)\n\nLatest:\n\n(User|Hermes): Turn \d+:/,
    );
    expect(answer.chat.endsWith(`Hermes: ${LONG_CHAT.messages?.[299]?.content.trim()}`)).toBe(true);
    expect(answer.chat).not.toContain('Turn 0:');

    await watch.call('find_chat', { query: 'ferryman' });
    const plain = (await watch.call('read_chat', { number: 1 })).answer as { ok: true; chat: string; title: string };
    expect(Buffer.byteLength(JSON.stringify(plain.chat))).toBeLessThanOrEqual(12_000);
    expect(plain.chat).toMatch(/^\(The first \d+ messages not shown\.\)\n\nLatest:\n\n(User|Hermes): Ferry \d+:/);
    expect(plain.chat.endsWith(`Hermes: ${PLAIN_LONG_CHAT.messages?.[119]?.content.trim()}`)).toBe(true);
    await revoke('chats', watch);
  });

  it("never finds or reads another profile's chat", async () => {
    const neighbour = await grantFor('neighbour', ['find_chat', 'read_chat']);
    expect((await neighbour.call('find_chat', { query: 'salary' })).answer).toMatchObject({ count: 1 });
    const watch = await grantFor('chats', ['find_chat', 'read_chat']);
    // The neighbour's search numbered its chat; this grant's numbers are its own.
    expect((await watch.call('read_chat', { number: 1 })).answer).toEqual({ ok: true, unknown: true });
    expect((await watch.call('find_chat', { query: 'salary' })).answer).toEqual({ ok: true, count: 0, chats: '' });
    expect((await watch.call('read_chat', { number: 1 })).answer).toEqual({ ok: true, unknown: true });
    const oslo = (await watch.call('find_chat', { query: 'Oslo' })).answer as { chats: string };
    expect(oslo.chats).not.toContain('Salary');
    await revoke('neighbour', neighbour);
    await revoke('chats', watch);
  });

  it('refuses malformed arguments and a tool the grant left out', async () => {
    const watch = await grantFor('chats', ['find_chat']);
    for (const args of [{}, { query: '   ' }, { query: 'x'.repeat(201) }, { query: 7 }]) {
      expect((await watch.call('find_chat', args)).answer).toEqual({
        ok: false,
        status: 400,
        detail: 'find_chat needs a query of 1 to 200 characters',
      });
    }
    expect((await watch.call('read_chat', { number: 1 })).answer).toEqual({
      ok: false,
      status: 403,
      detail: "This grant doesn't allow read_chat",
    });
    await revoke('chats', watch);
    const reader = await grantFor('chats', ['find_chat', 'read_chat']);
    for (const args of [{}, { number: '1' }, { number: 0 }, { number: 1.5 }]) {
      expect((await reader.call('read_chat', args)).answer).toEqual({
        ok: false,
        status: 400,
        detail: 'read_chat needs the number of a chat find_chat answered',
      });
    }
    await revoke('chats', reader);
  });

  it("grants chats on a profile with no store yet (nothing found), and not where the store isn't Hermes'", async () => {
    const watch = await grantFor('fresh', ['find_chat', 'read_chat']);
    expect((await watch.call('find_chat', { query: 'anything' })).answer).toEqual({ ok: true, count: 0, chats: '' });
    await revoke('fresh', watch);
    expect(await hostCall('/watch-tools/grant?profile=strange', { tools: ['find_chat', 'read_chat'] })).toMatchObject({
      status: 501,
      body: { detail: "Watch chats aren't available on this host" },
    });
    const lookups = await grantFor('strange', ['web_search', 'find_chat']);
    expect(lookups.grant.tools).toEqual(['web_search']);
    await revoke('strange', lookups);
  });
});
