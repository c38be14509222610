import { mkdirSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Host } from '../../src/app.js';
import {
  CALL_END_BOUNDS,
  CallEndQueue,
  type CallEnd,
  type CallEndReport,
  type CallEndStep,
} from '../../src/features/voice-sessions/call-ends.js';
import { createVoiceSessionsFeature } from '../../src/features/voice-sessions/index.js';
import { ManualTimers } from '../../src/kernel/timers.js';
import { memoryLogger } from '../../src/log.js';
import { createHermesStateDb, seedHermesSessions } from '../fixtures/hermes-state-db.js';
import { ManualClock, TEST_TOKEN, tempHermesHome, testConfig } from '../support/config.js';
import { startHost } from '../support/host.js';

const PREFIX = '/api/plugins/conduit_push';
const SESSION_ID = /^\d{8}_\d{6}_[0-9a-f]{12}$/;

/** Reports as they arrive; a test awaits the next one instead of sleeping. */
class Channel<T> {
  private readonly items: T[] = [];
  private readonly waiters: ((item: T) => void)[] = [];
  push(item: T): void {
    const waiter = this.waiters.shift();
    if (waiter) waiter(item);
    else this.items.push(item);
  }
  next(): Promise<T> {
    const item = this.items.shift();
    return item !== undefined ? Promise.resolve(item) : new Promise((resolve) => this.waiters.push(resolve));
  }
}

/** Everything reported so far; a test awaits the entries it expects instead of sleeping. */
class Recorder<T> {
  readonly items: T[] = [];
  private wake: (() => void)[] = [];
  push(item: T): void {
    this.items.push(item);
    for (const wake of this.wake.splice(0)) wake();
  }
  /** Resolves with the matching entries once there are `count` of them. */
  async waitFor(match: (item: T) => boolean, count = 1): Promise<T[]> {
    for (;;) {
      const found = this.items.filter(match);
      if (found.length >= count) return found;
      await new Promise<void>((resolve) => this.wake.push(resolve));
    }
  }
}

const home = tempHermesHome();
const clock = new ManualClock();
/** Every step each call's end ran, in order: `<step> <kind> <session> <engine> <turns>`. */
const stepsRun = new Recorder<string>();
const endReports = new Recorder<CallEndReport>();
const endOf = async (sessionId: string, count = 1) =>
  (await endReports.waitFor((report) => report.call.sessionId === sessionId, count)).at(-1);
const stepsOf = (sessionId: string) => stepsRun.items.filter((line) => line.split(' ')[2] === sessionId);
const scriptedStep = (name: string, forChatCalls: boolean): CallEndStep => ({
  name,
  forChatCalls,
  run: async (call) => stepsRun.push(`${name} ${call.kind} ${call.sessionId} ${call.engine} ${call.turns.length}`),
});
let host: Host & { url: string };

const homeOf = (profile: string) => (profile === 'default' ? home.root : path.join(home.root, 'profiles', profile));
const dbOf = (profile: string) => path.join(homeOf(profile), 'state.db');

/** Reads the profile's store as Hermes would see it. */
function inspect<T>(profile: string, read: (db: Database.Database) => T): T {
  const db = new Database(dbOf(profile), { fileMustExist: true });
  try {
    return read(db);
  } finally {
    db.close();
  }
}

const meta = (profile: string, key: string): unknown =>
  inspect(profile, (db) => {
    const row = db.prepare('SELECT value FROM state_meta WHERE key = ?').get(key) as { value: string } | undefined;
    return row ? (JSON.parse(row.value) as unknown) : undefined;
  });

const messagesOf = (profile: string, sessionId: string) =>
  inspect(
    profile,
    (db) =>
      db.prepare('SELECT role, content, timestamp FROM messages WHERE session_id = ? ORDER BY id').all(sessionId) as {
        role: string;
        content: string;
        timestamp: number;
      }[],
  );

const sessionRow = (profile: string, sessionId: string) =>
  inspect(
    profile,
    (db) => db.prepare('SELECT * FROM sessions WHERE id = ?').get(sessionId) as Record<string, unknown> | undefined,
  );

type Answer = { status: number; body: Record<string, unknown>; headers: Headers };

async function call(url: string, method: 'GET' | 'POST', route: string, body?: unknown): Promise<Answer> {
  const response = await fetch(url + PREFIX + route, {
    method,
    headers: { authorization: `Bearer ${TEST_TOKEN}`, 'content-type': 'application/json' },
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });
  return {
    status: response.status,
    body: (await response.json()) as Record<string, unknown>,
    headers: response.headers,
  };
}

const turns = (texts: readonly string[], start = 0) =>
  texts.map((text, i) => ({
    index: start + i,
    role: (start + i) % 2 === 0 ? 'user' : 'assistant',
    text,
    at: 1_780_000_000 + start + i,
  }));

const save = (body: Record<string, unknown>, profile?: string) =>
  call(host.url, 'POST', `/voice/sessions${profile ? `?profile=${profile}` : ''}`, {
    engine: 'gemini-live',
    call_id: 'call-1',
    ...body,
  });

beforeAll(async () => {
  createHermesStateDb(dbOf('default'), { compressionLocks: true });
  createHermesStateDb(dbOf('work'));
  createHermesStateDb(dbOf('later'), { laterColumns: true });
  createHermesStateDb(dbOf('old'), { without: ['messages'] });
  createHermesStateDb(dbOf('bare'), { without: ['state_meta'] });
  createHermesStateDb(dbOf('drift'), { unfillableSessionColumn: 'workspace_id' });
  mkdirSync(homeOf('fresh'), { recursive: true });
  seedHermesSessions(dbOf('default'), [
    {
      id: 'chat_typed',
      source: 'desktop',
      title: 'Groceries',
      model: 'gpt-5',
      messages: [
        { role: 'user', content: 'what do we need?' },
        { role: 'assistant', content: 'milk and eggs' },
      ],
    },
    { id: 'chat_walk', source: 'desktop', title: 'Walk', messages: [{ role: 'user', content: 'route?' }] },
  ]);
  host = await startHost(testConfig(home.root, { clock }), {
    features: [
      createVoiceSessionsFeature({
        callEndSteps: [
          scriptedStep('on_session_end', false),
          scriptedStep('memory', true),
          scriptedStep('on_session_finalize', false),
        ],
        onCallEnd: (report) => endReports.push(report),
      }),
    ],
  });
});
afterAll(async () => {
  await host.app.close();
  home.cleanup();
});
// A fresh rate window for each test.
beforeEach(() => clock.advance(60_000));

describe('POST /voice/sessions: a new call', () => {
  it('becomes a desktop session with no model, its turns as messages, ended with conduit_voice', async () => {
    const answer = await save({ call_id: 'call-new', title: 'Voice call', turns: turns(['hi there', 'hello Ada']) });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('cache-control')).toBe('no-store');
    const sessionId = answer.body.session_id as string;
    expect(sessionId).toMatch(SESSION_ID);
    expect(answer.body).toEqual({
      ok: true,
      session_id: sessionId,
      written: 2,
      appended: 2,
      skipped: 0,
      created: true,
    });

    expect(sessionRow('default', sessionId)).toMatchObject({
      source: 'desktop',
      model: null,
      title: 'Voice call',
      end_reason: 'conduit_voice',
      ended_at: clock.now() / 1000,
      started_at: clock.now() / 1000,
      message_count: 2,
    });
    expect(messagesOf('default', sessionId)).toEqual([
      { role: 'user', content: 'hi there', timestamp: 1_780_000_000 },
      { role: 'assistant', content: 'hello Ada', timestamp: 1_780_000_001 },
    ]);
    expect(meta('default', 'conduit.voice.tags')).toMatchObject({
      [sessionId]: { kind: 'call', engine: 'gemini-live' },
    });
    expect(meta('default', `conduit.voice.calls:${sessionId}`)).toEqual({ 'call-new': 1 });
    expect(meta('default', 'conduit.voice.created')).toMatchObject({ 'call-new': sessionId });
  });

  it("keeps Hermes' FTS triggers indexing the saved turns", async () => {
    const { body } = await save({ call_id: 'call-fts', turns: turns(['the zeppelin lands at noon']) });
    const hits = inspect('default', (db) =>
      db
        .prepare(
          'SELECT session_id FROM messages WHERE id IN (SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?)',
        )
        .all('zeppelin'),
    );
    expect(hits).toEqual([{ session_id: body.session_id }]);
  });

  it("ends the call in the background: on_session_end, memory, on_session_finalize, with the call's new turns", async () => {
    const { body } = await save({ call_id: 'call-end', engine: 'gpt-live', turns: turns(['a', 'b', 'c']) });
    const sid = body.session_id as string;
    expect(await endOf(sid)).toMatchObject({ outcome: 'ended', call: { kind: 'session', sessionId: sid } });
    expect(stepsOf(sid)).toEqual([
      `on_session_end session ${sid} gpt-live 3`,
      `memory session ${sid} gpt-live 3`,
      `on_session_finalize session ${sid} gpt-live 3`,
    ]);
    // A retried save that stores nothing new ends nothing; a resumed call ends only its own turns.
    await save({ call_id: 'call-end', engine: 'gpt-live', session_id: sid, turns: turns(['a', 'b', 'c']) });
    const later = await save({ call_id: 'call-end-2', engine: 'gpt-live', session_id: sid, turns: turns(['d']) });
    expect(later.body).toMatchObject({ appended: 1 });
    expect(await endOf(sid, 2)).toMatchObject({ outcome: 'ended', call: { turns: [{ role: 'user', text: 'd' }] } });
    expect(endReports.items.filter((report) => report.call.sessionId === sid)).toHaveLength(2);
    expect(stepsOf(sid).slice(3)).toEqual([
      `on_session_end session ${sid} gpt-live 1`,
      `memory session ${sid} gpt-live 1`,
      `on_session_finalize session ${sid} gpt-live 1`,
    ]);
  });

  it("gives a clashing title the id's last six characters", async () => {
    const first = await save({ call_id: 'call-title-1', title: 'Morning call', turns: turns(['a']) });
    const second = await save({ call_id: 'call-title-2', title: 'Morning call', turns: turns(['b']) });
    const sid = second.body.session_id as string;
    expect(sessionRow('default', first.body.session_id as string)?.title).toBe('Morning call');
    expect(sessionRow('default', sid)?.title).toBe(`Morning call (${sid.slice(-6)})`);
  });

  it('answers session_id null and makes no row when there is nothing to save', async () => {
    const count = () =>
      inspect('default', (db) => (db.prepare('SELECT COUNT(*) AS n FROM sessions').get() as { n: number }).n);
    const before = count();
    expect((await save({ call_id: 'call-empty', turns: [] })).body).toEqual({
      ok: true,
      session_id: null,
      written: 0,
      appended: 0,
      skipped: 0,
      created: false,
    });
    expect(count()).toBe(before);
  });

  it('writes into a store with the later Hermes columns, which keep their defaults', async () => {
    const { status, body } = await save({ call_id: 'call-later', turns: turns(['hi']) }, 'later');
    expect(status).toBe(200);
    expect(sessionRow('later', body.session_id as string)).toMatchObject({ archived: 0, pinned: 0, source: 'desktop' });
    expect(
      inspect('later', (db) =>
        db.prepare('SELECT active, observed FROM messages WHERE session_id = ?').get(body.session_id),
      ),
    ).toEqual({ active: 1, observed: 0 });
  });
});

describe('POST /voice/sessions: retries and index rules', () => {
  it('skips the turns a retried save already stored and appends the rest', async () => {
    const first = await save({ call_id: 'call-retry', turns: turns(['zero', 'one']) });
    const sid = first.body.session_id as string;
    const again = await save({ call_id: 'call-retry', session_id: sid, turns: turns(['one', 'two'], 1) });
    expect(again.body).toEqual({ ok: true, session_id: sid, written: 3, appended: 1, skipped: 1, created: false });
    expect(messagesOf('default', sid).map((m) => m.content)).toEqual(['zero', 'one', 'two']);
    expect(sessionRow('default', sid)?.message_count).toBe(3);
  });

  it('continues the row a lost create made when the first save is retried without its session id', async () => {
    const first = await save({ call_id: 'call-lost', turns: turns(['a']) });
    const again = await save({ call_id: 'call-lost', turns: turns(['a', 'b']) });
    expect(again.body).toEqual({
      ok: true,
      session_id: first.body.session_id,
      written: 2,
      appended: 1,
      skipped: 1,
      created: false,
    });
  });

  it('writes a repeated index in one save once', async () => {
    const { body } = await save({
      call_id: 'call-twice',
      turns: [
        { index: 0, role: 'user', text: 'hi' },
        { index: 0, role: 'user', text: 'hi' },
      ],
    });
    expect(body).toMatchObject({ appended: 1, skipped: 1, written: 1 });
  });

  it('refuses a gap with 400 and stores nothing', async () => {
    const first = await save({ call_id: 'call-gap', turns: turns(['zero', 'one', 'two']) });
    const sid = first.body.session_id as string;
    expect(await save({ call_id: 'call-gap', session_id: sid, turns: turns(['four'], 4) })).toMatchObject({
      status: 400,
      body: { detail: 'Turns must continue from index 3 for this call' },
    });
    expect(await save({ call_id: 'call-gap-new', turns: turns(['late'], 1) })).toMatchObject({
      status: 400,
      body: { detail: 'Turns must continue from index 0 for this call' },
    });
    expect(messagesOf('default', sid)).toHaveLength(3);
    expect(meta('default', 'conduit.voice.created')).not.toHaveProperty('call-gap-new');
  });

  it('drops a time that is not before the year 3000, and Hermes stamps the row now', async () => {
    const { body } = await save({
      call_id: 'call-times',
      turns: [
        { index: 0, role: 'user', text: 'a', at: 1e300 },
        { index: 1, role: 'assistant', text: 'b', at: -5 },
      ],
    });
    const now = clock.now() / 1000;
    expect(messagesOf('default', body.session_id as string).map((m) => m.timestamp)).toEqual([now, now + 1e-6]);
  });

  it('answers 413 past 500 turns, and for a body over 1 MiB', async () => {
    const many = Array.from({ length: 501 }, (_, index) => ({ index, role: 'user', text: 'x' }));
    expect(await save({ call_id: 'call-many', turns: many })).toMatchObject({
      status: 413,
      body: { detail: 'At most 500 turns per request' },
    });
    const huge = await save({ call_id: 'call-huge', turns: turns(['x'.repeat(1024 * 1024)]) });
    expect([huge.status, huge.body]).toEqual([413, { detail: 'Request body is too large' }]);
  });

  it.each([
    [{ call_id: '../etc' }, 'call_id is missing or invalid'],
    [{ call_id: '' }, 'call_id is missing or invalid'],
    [{ call_id: 'x'.repeat(129) }, 'call_id is missing or invalid'],
    [{ session_id: 'a/b' }, 'session_id is missing or invalid'],
    [{ chat_id: '.hidden' }, 'chat_id is missing or invalid'],
    [{ engine: 'nope' }, 'engine is missing or invalid'],
    [{ turns: 'x' }, 'turns must be a list'],
    [
      { turns: [{ role: 'system', text: 'x', index: 0 }] },
      'Each turn needs a role (user or assistant) and an index from 0 to 100000',
    ],
    [
      { turns: [{ role: 'user', text: 'x', index: 100_001 }] },
      'Each turn needs a role (user or assistant) and an index from 0 to 100000',
    ],
    [{ turns: [{ role: 'user', text: { a: 1 }, index: 0 }] }, "A turn's text must be a string"],
    [{ turns: [{ role: 'user', text: '   ', index: 0 }] }, "Each turn needs text; send a turn only once it's final"],
  ])('refuses %j with 400 "%s"', async (fields, detail) => {
    expect(await save({ turns: turns(['a']), ...fields })).toMatchObject({ status: 400, body: { detail } });
  });

  it('refuses a body that is not a JSON object', async () => {
    const answer = await call(host.url, 'POST', '/voice/sessions', '[1, 2]');
    expect([answer.status, answer.body]).toEqual([400, { detail: 'Request body must be a JSON object' }]);
  });
});

describe('POST /voice/sessions: which rows take turns', () => {
  it('answers 422 for a session that is gone, and clears its call record and summary', async () => {
    const { body } = await save({ call_id: 'call-gone', turns: turns(['a']) });
    const sid = body.session_id as string;
    await call(host.url, 'POST', '/voice/summary', { session_id: sid, text: 'We talked.', covers: 1 });
    inspect('default', (db) => {
      db.prepare('DELETE FROM messages WHERE session_id = ?').run(sid);
      db.prepare('DELETE FROM sessions WHERE id = ?').run(sid);
    });
    expect(await save({ call_id: 'call-gone', session_id: sid, turns: turns(['b'], 1) })).toMatchObject({
      status: 422,
      body: { detail: 'That voice session no longer exists; start a new one' },
    });
    expect(meta('default', `conduit.voice.calls:${sid}`)).toBeUndefined();
    expect(meta('default', `conduit.voice.summary:${sid}`)).toBeUndefined();
    expect(meta('default', 'conduit.voice.created')).not.toHaveProperty('call-gone');
  });

  it('never appends to an ordinary chat, nor a classic voice chat', async () => {
    const refused = { status: 422, body: { detail: "That session isn't a saved voice call; start a new one" } };
    expect(await save({ call_id: 'call-typed', session_id: 'chat_typed', turns: turns(['a']) })).toMatchObject(refused);
    await call(host.url, 'POST', '/voice/tags', { session_id: 'chat_typed', kind: 'classic' });
    expect(await save({ call_id: 'call-typed', session_id: 'chat_typed', turns: turns(['a']) })).toMatchObject(refused);
    expect(messagesOf('default', 'chat_typed')).toHaveLength(2);
    expect(sessionRow('default', 'chat_typed')?.end_reason).toBeNull();
  });

  it('answers 409 while a compaction holds the row, and 422 once compaction closed it', async () => {
    const { body } = await save({ call_id: 'call-compact', turns: turns(['a']) });
    const sid = body.session_id as string;
    const nowS = clock.now() / 1000;
    inspect('default', (db) =>
      db.prepare('INSERT INTO compression_locks VALUES (?, ?, ?, ?)').run(sid, 'pid=1:compressor', nowS, nowS + 300),
    );
    expect(await save({ call_id: 'call-compact', session_id: sid, turns: turns(['b'], 1) })).toMatchObject({
      status: 409,
      body: { detail: 'The session is busy; try again shortly' },
    });
    inspect('default', (db) => {
      db.prepare('DELETE FROM compression_locks WHERE session_id = ?').run(sid);
      db.prepare("UPDATE sessions SET end_reason = 'compression' WHERE id = ?").run(sid);
    });
    expect(await save({ call_id: 'call-compact', session_id: sid, turns: turns(['b'], 1) })).toMatchObject({
      status: 422,
      body: { detail: 'That session was compacted; start a new one' },
    });
    expect(messagesOf('default', sid)).toHaveLength(1);
  });
});

describe('POST /voice/sessions: concurrency', () => {
  it("serializes one profile's concurrent saves: each turn lands exactly once, in one session", async () => {
    // Conduit retries with everything it has so far; the saves race in any order.
    const texts = Array.from({ length: 12 }, (_, i) => `turn ${i}`);
    const answers = await Promise.all(
      texts.map((_, i) => save({ call_id: 'call-race', title: 'Race', turns: turns(texts.slice(0, i + 1)) })),
    );
    expect(answers.map((answer) => answer.status)).toEqual(texts.map(() => 200));
    const sessions = new Set(answers.map((answer) => answer.body.session_id));
    expect(sessions.size).toBe(1);
    const sid = [...sessions][0] as string;
    expect(answers.filter((answer) => answer.body.created)).toHaveLength(1);
    expect(answers.reduce((sum, answer) => sum + (answer.body.appended as number), 0)).toBe(12);
    expect(messagesOf('default', sid).map((m) => m.content)).toEqual(texts);
    expect(sessionRow('default', sid)?.message_count).toBe(12);
  });

  it('keeps concurrent new calls with the same title apart', async () => {
    const answers = await Promise.all(
      ['a', 'b', 'c'].map((id) => save({ call_id: `call-same-${id}`, title: 'Same title', turns: turns([id]) })),
    );
    const titles = answers.map((answer) => sessionRow('default', answer.body.session_id as string)?.title);
    expect(new Set(titles).size).toBe(3);
    expect(titles).toContain('Same title');
  });
});

describe('a store locked by another writer', () => {
  it('answers 504 "Voice save timed out" once the budget runs out, with nothing written', async () => {
    const timers = new ManualTimers();
    const locked = await startHost(testConfig(home.root, { clock, timers }), {
      features: [createVoiceSessionsFeature({ store: { lockWaitMs: 5 } })],
    });
    // Hermes' gateway, say, mid-write: it holds the write lock for as long as this test wants.
    const writer = new Database(dbOf('work'));
    try {
      const count = () => (writer.prepare('SELECT COUNT(*) AS n FROM messages').get() as { n: number }).n;
      const before = count();
      writer.exec('BEGIN IMMEDIATE');
      const pending = call(locked.url, 'POST', '/voice/sessions?profile=work', {
        engine: 'grok-live',
        call_id: 'call-locked',
        turns: turns(['hello?']),
      });
      // The request's deadline and its first retry after SQLITE_BUSY.
      await timers.untilWaiting(2);
      timers.advance(20_000);
      expect(await pending).toMatchObject({ status: 504, body: { detail: 'Voice save timed out' } });
      writer.exec('ROLLBACK');
      expect(count()).toBe(before);
      expect(writer.prepare("SELECT value FROM state_meta WHERE key = 'conduit.voice.created'").get()).toBeUndefined();

      // The profile's queue is not left stuck: the next save lands.
      const next = await call(locked.url, 'POST', '/voice/sessions?profile=work', {
        engine: 'grok-live',
        call_id: 'call-locked',
        turns: turns(['hello?']),
      });
      expect(next.body).toMatchObject({ created: true, appended: 1 });
    } finally {
      writer.close();
      await locked.app.close();
    }
  });

  it('waits out a lock released within the budget, and then saves', async () => {
    const timers = new ManualTimers();
    const locked = await startHost(testConfig(home.root, { clock, timers }), {
      features: [createVoiceSessionsFeature({ store: { lockWaitMs: 5 }, random: () => 0 })],
    });
    const writer = new Database(dbOf('work'));
    try {
      writer.exec('BEGIN IMMEDIATE');
      const pending = call(locked.url, 'POST', '/voice/sessions?profile=work', {
        engine: 'classic',
        call_id: 'call-waits',
        turns: turns(['still there?']),
      });
      await timers.untilWaiting(2);
      writer.exec('COMMIT');
      timers.advance(20);
      expect(await pending).toMatchObject({ status: 200, body: { created: true, appended: 1 } });
    } finally {
      writer.close();
      await locked.app.close();
    }
  });
});

describe('stores this code cannot write', () => {
  const unsupported = { detail: "This Hermes version can't store voice transcripts; update Hermes" };

  it('answers 501 on a store without the messages table, state_meta, or with a column it cannot fill', async () => {
    expect(await save({ turns: turns(['a']) }, 'old')).toMatchObject({ status: 501, body: unsupported });
    expect(await save({ turns: turns(['a']) }, 'bare')).toMatchObject({ status: 501, body: unsupported });
    expect(await save({ turns: turns(['a']) }, 'drift')).toMatchObject({ status: 501, body: unsupported });
    expect(await call(host.url, 'GET', '/voice/tags?profile=bare')).toMatchObject({ status: 501, body: unsupported });
    expect(inspect('drift', (db) => db.prepare('SELECT COUNT(*) AS n FROM sessions').get())).toEqual({ n: 0 });
  });

  it('reads a store without the message tables (tags and summaries need only state_meta)', async () => {
    expect(await call(host.url, 'GET', '/voice/tags?profile=old')).toMatchObject({ status: 200, body: { tags: {} } });
  });

  it('reads nothing from a profile Hermes has not opened yet, and never creates its store', async () => {
    expect(await call(host.url, 'GET', '/voice/tags?profile=fresh')).toMatchObject({
      status: 200,
      body: { ok: true, tags: {} },
    });
    expect(await call(host.url, 'GET', '/voice/summary?profile=fresh&session_id=s_1')).toMatchObject({
      status: 200,
      body: { ok: true, available: false, text: '', covers: 0 },
    });
    expect((await save({ turns: turns(['a']) }, 'fresh')).status).toBe(503);
    expect(() => inspect('fresh', () => null)).toThrow();
  });
});

describe('calls attached to a chat', () => {
  it("keeps the turns with the chat in state_meta and never touches the chat's messages", async () => {
    const first = await save({ call_id: 'call-chat', chat_id: 'chat_typed', turns: turns(['in the chat', 'yes']) });
    expect(first.body).toEqual({ ok: true, session_id: null, written: 2, appended: 2, skipped: 0, created: false });
    const again = await save({ call_id: 'call-chat', chat_id: 'chat_typed', turns: turns(['yes', 'bye'], 1) });
    expect(again.body).toMatchObject({ written: 3, appended: 1, skipped: 1 });
    expect(messagesOf('default', 'chat_typed').map((m) => m.content)).toEqual(['what do we need?', 'milk and eggs']);
    expect(sessionRow('default', 'chat_typed')).toMatchObject({ end_reason: null, message_count: 2 });

    const listed = await call(host.url, 'GET', '/voice/chat-calls?chat_id=chat_typed&call_id=call-chat');
    expect(listed.body).toEqual({
      ok: true,
      chat_id: 'chat_typed',
      calls: [{ call_id: 'call-chat', engine: 'gemini-live', turns: 3 }],
      turns: [
        { index: 0, role: 'user', text: 'in the chat', at: 1_780_000_000 },
        { index: 1, role: 'assistant', text: 'yes', at: 1_780_000_001 },
        { index: 2, role: 'user', text: 'bye', at: 1_780_000_002 },
      ],
    });
    expect((await call(host.url, 'GET', '/voice/chat-calls?chat_id=chat_typed')).body.turns).toEqual([]);
  });

  it('ends a chat call in memory only, under the chat: no session-end hooks fire', async () => {
    await save({ call_id: 'call-walk', chat_id: 'chat_walk', engine: 'grok-live', turns: turns(['q', 'a']) });
    expect(await endOf('chat_walk')).toMatchObject({ outcome: 'ended', call: { kind: 'chat', title: 'Walk' } });
    expect(stepsOf('chat_walk')).toEqual(['memory chat chat_walk grok-live 2']);
  });

  it('answers 422 for a chat that no longer exists', async () => {
    expect(await save({ call_id: 'call-orphan', chat_id: 'chat_deleted', turns: turns(['a']) })).toMatchObject({
      status: 422,
      body: { detail: 'That chat no longer exists; save the call on its own' },
    });
    expect(await save({ session_id: 'x1', chat_id: 'chat_typed', turns: turns(['a']) })).toMatchObject({
      status: 400,
      body: { detail: 'Send session_id or chat_id, not both' },
    });
  });
});

describe('GET and POST /voice/tags', () => {
  it('round-trips classic and job labels beside the saved calls', async () => {
    const { body } = await save({ call_id: 'call-tags', engine: 'gpt-live', turns: turns(['a']) });
    const sid = body.session_id as string;
    expect(await call(host.url, 'POST', '/voice/tags', { session_id: 's_classic', kind: 'classic' })).toMatchObject({
      status: 200,
      body: { ok: true, session_id: 's_classic', kind: 'classic' },
    });
    const job = await call(host.url, 'POST', '/voice/tags', {
      session_id: 's_job',
      kind: 'job',
      parent_id: sid,
      parent_title: '  Groceries\n run ',
    });
    expect(job.body).toEqual({
      ok: true,
      session_id: 's_job',
      kind: 'job',
      parent_id: sid,
      parent_title: 'Groceries run',
    });
    const { status, body: read, headers } = await call(host.url, 'GET', '/voice/tags');
    expect([status, headers.get('cache-control')]).toEqual([200, 'no-store']);
    expect(read.tags).toMatchObject({
      [sid]: { kind: 'call', engine: 'gpt-live' },
      s_classic: { kind: 'classic' },
      s_job: { kind: 'job', parent_id: sid, parent_title: 'Groceries run' },
    });
  });

  it("never changes a saved call's label, and sets only classic or job", async () => {
    const { body } = await save({ call_id: 'call-label', turns: turns(['a']) });
    expect(await call(host.url, 'POST', '/voice/tags', { session_id: body.session_id, kind: 'classic' })).toMatchObject(
      {
        status: 422,
        body: { detail: "That session is a saved voice call; its tag can't change" },
      },
    );
    for (const kind of ['call', 'other', null]) {
      expect(await call(host.url, 'POST', '/voice/tags', { session_id: 's_x', kind })).toMatchObject({
        status: 400,
        body: { detail: 'kind must be classic or job' },
      });
    }
    expect(await call(host.url, 'POST', '/voice/tags', { session_id: '../x', kind: 'job' })).toMatchObject({
      status: 400,
      body: { detail: 'session_id is missing or invalid' },
    });
  });
});

describe('GET and POST /voice/summary', () => {
  it("round-trips a saved call's summary", async () => {
    const { body } = await save({ call_id: 'call-summary', turns: turns(['a']) });
    const sid = body.session_id as string;
    expect((await call(host.url, 'GET', `/voice/summary?session_id=${sid}`)).body).toEqual({
      ok: true,
      available: false,
      text: '',
      covers: 0,
    });
    expect(
      await call(host.url, 'POST', '/voice/summary', { session_id: sid, text: 'We talked.', covers: 12 }),
    ).toMatchObject({ status: 200, body: { ok: true, session_id: sid, covers: 12 } });
    expect((await call(host.url, 'GET', `/voice/summary?session_id=${sid}`)).body).toEqual({
      ok: true,
      available: true,
      text: 'We talked.',
      covers: 12,
    });
    expect(meta('default', `conduit.voice.summary:${sid}`)).toEqual({ text: 'We talked.', covers: 12 });
  });

  it('takes summaries only for saved voice calls that exist, with text and a whole covers ≥ 0', async () => {
    const { body } = await save({ call_id: 'call-summary-2', turns: turns(['a']) });
    const needs = { status: 400, body: { detail: 'A summary needs text and a non-negative covers count' } };
    for (const fields of [
      { text: '', covers: 1 },
      { text: 'x', covers: -1 },
      { text: 'x' },
      { text: { a: 1 }, covers: 1 },
    ]) {
      expect(await call(host.url, 'POST', '/voice/summary', { session_id: body.session_id, ...fields })).toMatchObject(
        needs,
      );
    }
    expect(
      await call(host.url, 'POST', '/voice/summary', { session_id: 'chat_typed', text: 'x', covers: 1 }),
    ).toMatchObject({
      status: 422,
      body: { detail: "That session isn't a saved voice call; start a new one" },
    });
    expect(
      await call(host.url, 'POST', '/voice/summary', { session_id: 'gone_1', text: 'x', covers: 1 }),
    ).toMatchObject({
      status: 422,
      body: { detail: 'That voice session no longer exists; start a new one' },
    });
    expect(await call(host.url, 'GET', '/voice/summary')).toMatchObject({
      status: 400,
      body: { detail: 'session_id is missing or invalid' },
    });
  });
});

describe('rate limits and profiles', () => {
  it('caps writes at 120 a minute for the whole host, before the body is read', async () => {
    for (let i = 0; i < 120; i += 1) {
      const route = i % 2 === 0 ? '/voice/tags?profile=ghost' : '/voice/summary?profile=made-up';
      expect((await call(host.url, 'POST', route, {})).status).not.toBe(429);
    }
    const refused = { status: 429, body: { detail: 'Too many voice history writes; try again shortly' } };
    expect(await call(host.url, 'POST', '/voice/sessions', 'not json')).toMatchObject(refused);
    expect(await call(host.url, 'POST', '/voice/tags?profile=another', {})).toMatchObject(refused);
    // Reads have their own budget.
    expect((await call(host.url, 'GET', '/voice/tags')).status).toBe(200);
    clock.advance(60_000);
    expect((await save({ call_id: 'call-after-limit', turns: turns(['a']) })).status).toBe(200);
  });

  it('caps reads at 600 a minute for the whole host', async () => {
    for (let i = 0; i < 600; i += 1) expect((await call(host.url, 'GET', '/voice/tags?profile=work')).status).toBe(200);
    expect(await call(host.url, 'GET', '/voice/summary?session_id=s_1')).toMatchObject({
      status: 429,
      body: { detail: 'Too many voice history reads; try again shortly' },
    });
    expect((await save({ call_id: 'call-reads', turns: turns(['a']) })).status).toBe(200);
  });

  it("saves into the ?profile= store, and answers 503 for a profile that can't be resolved", async () => {
    const { body } = await save({ call_id: 'call-work', turns: turns(['for work']) }, 'work');
    expect(messagesOf('work', body.session_id as string)).toHaveLength(1);
    expect(sessionRow('default', body.session_id as string)).toBeUndefined();
    expect((await call(host.url, 'GET', '/voice/tags?profile=work')).body.tags).toHaveProperty(
      body.session_id as string,
    );
    expect((await save({ turns: turns(['a']) }, 'ghost')).status).toBe(503);
    expect((await call(host.url, 'GET', '/voice/tags?profile=Bad/Name')).status).toBe(503);
  });
});

describe('the call-end queue', () => {
  const callOf = (profile: string, sessionId: string, kind: CallEnd['kind'] = 'session'): CallEnd => ({
    kind,
    profile,
    home: '/nonexistent',
    sessionId,
    title: null,
    engine: 'gemini-live',
    turns: [{ role: 'user', text: 'hi' }],
  });

  /** A step whose runs each wait until the test settles them. */
  function heldStep(forChatCalls = true) {
    const started = new Channel<{ sessionId: string; finish: () => void; fail: () => void }>();
    const step: CallEndStep = {
      name: 'memory',
      forChatCalls,
      run: (call) =>
        new Promise<void>((resolve, reject) =>
          started.push({ sessionId: call.sessionId, finish: resolve, fail: () => reject(new TypeError('provider')) }),
        ),
    };
    return { step, started };
  }

  function queue(steps: CallEndStep[]) {
    const timers = new ManualTimers();
    const reports = new Channel<string>();
    const log = memoryLogger();
    const ends = new CallEndQueue({
      steps,
      timers,
      log,
      onReport: ({ call, outcome }) => reports.push(`${call.sessionId} ${outcome}`),
    });
    return { ends, timers, reports, log };
  }

  it('leaves an end that takes over 120 s to finish on its own while the next call ends', async () => {
    const { step, started } = heldStep();
    const { ends, timers, reports } = queue([step]);
    ends.enqueue(callOf('default', 's1'));
    ends.enqueue(callOf('default', 's2'));
    const first = await started.next();
    await timers.untilWaiting(1);
    timers.advance(CALL_END_BOUNDS.timeoutMs);
    expect(await reports.next()).toBe('s1 abandoned');
    (await started.next()).finish();
    expect(await reports.next()).toBe('s2 ended');
    first.finish();
  });

  it("ends a profile's calls without the steps while three of its ends are stuck; other profiles go on", async () => {
    const { step, started } = heldStep();
    const { ends, timers, reports, log } = queue([step]);
    const stuck = [];
    for (const id of ['a1', 'a2', 'a3']) {
      ends.enqueue(callOf('stuck', id));
      stuck.push(await started.next());
      await timers.untilWaiting(1);
      timers.advance(CALL_END_BOUNDS.timeoutMs);
      expect(await reports.next()).toBe(`${id} abandoned`);
    }
    ends.enqueue(callOf('stuck', 'a4'));
    expect(await reports.next()).toBe('a4 skipped_stuck');
    expect(log.lines.some((line) => line.includes('earlier ends of this profile are stuck'))).toBe(true);
    ends.enqueue(callOf('other', 'b1'));
    (await started.next()).finish();
    expect(await reports.next()).toBe('b1 ended');
    // One stuck end finishing lets that profile's calls end again.
    stuck[0]?.finish();
    expect(await reports.next()).toBe('a1 finished_late');
    ends.enqueue(callOf('stuck', 'a5'));
    (await started.next()).finish();
    expect(await reports.next()).toBe('a5 ended');
  });

  it('ends a call without the steps past 20 waiting', async () => {
    const { step, started } = heldStep();
    const { ends, reports, log } = queue([step]);
    ends.enqueue(callOf('default', 'running'));
    const running = await started.next();
    for (let i = 0; i < CALL_END_BOUNDS.maxWaiting; i += 1) ends.enqueue(callOf('default', `w${i}`));
    ends.enqueue(callOf('default', 'one-too-many'));
    expect(await reports.next()).toBe('one-too-many skipped_full');
    expect(log.lines.some((line) => line.includes('too many ends waiting'))).toBe(true);
    running.finish();
    expect(await reports.next()).toBe('running ended');
  });

  it('logs a failed step and still runs the rest; a chat call runs only the memory step', async () => {
    const ran = new Channel<string>();
    const failing: CallEndStep = {
      name: 'on_session_end',
      forChatCalls: false,
      run: async () => {
        ran.push('on_session_end');
        throw new RangeError('hook');
      },
    };
    const memory: CallEndStep = {
      name: 'memory',
      forChatCalls: true,
      run: async (call) => ran.push(`memory ${call.kind}`),
    };
    const { ends, reports, log } = queue([failing, memory]);
    ends.enqueue(callOf('default', 's1'));
    expect([await ran.next(), await ran.next()]).toEqual(['on_session_end', 'memory session']);
    expect(await reports.next()).toBe('s1 ended_with_failures');
    expect(log.lines.some((line) => line.includes('"step":"on_session_end"') && line.includes('RangeError'))).toBe(
      true,
    );
    ends.enqueue(callOf('default', 'chat_1', 'chat'));
    expect(await ran.next()).toBe('memory chat');
    expect(await reports.next()).toBe('chat_1 ended');
  });

  it('reports every end as unsupported, logged once per profile, when no Hermes Python runs the steps', async () => {
    const { ends, reports, log } = queue([]);
    ends.enqueue(callOf('default', 's1'));
    ends.enqueue(callOf('default', 's2'));
    expect([await reports.next(), await reports.next()]).toEqual(['s1 unsupported', 's2 unsupported']);
    expect(log.lines.filter((line) => line.includes('no Hermes Python found'))).toHaveLength(1);
  });
});
