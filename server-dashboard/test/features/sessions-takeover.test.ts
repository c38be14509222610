import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Host } from '../../src/app.js';
import { desktopViewsFeature, sessionTakeoverFeature } from '../../src/features/sessions/index.js';
import { processListensOn, processStartTime } from '../../src/features/sessions/process-liveness.js';
import { ManualTimers } from '../../src/kernel/timers.js';
import { ManualClock, TEST_TOKEN, tempHermesHome, testConfig } from '../support/config.js';
import { startHost } from '../support/host.js';

const PREFIX = '/api/plugins/conduit_push';

const home = tempHermesHome();
const clock = new ManualClock();
const timers = new ManualTimers();
const children: ChildProcess[] = [];
let host: Host & { url: string };

/** A real process of another program (a Desktop or TUI backend, as far as the registry can tell). */
async function liveProcess(): Promise<{ pid: number; start: number }> {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1e6)'], { stdio: 'ignore' });
  children.push(child);
  await new Promise<void>((resolve) => child.once('spawn', () => resolve()));
  const start = await processStartTime(child.pid!);
  return { pid: child.pid!, start: start! };
}

/** The pid of a process that has exited. */
async function goneProcess(): Promise<number> {
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  await new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return child.pid!;
}

let chatCounter = 0;
/** A fresh profile home per test, with Hermes' runtime folder as its registry makes it. */
function profileHome(): { name: string; dir: string } {
  const name = `p${++chatCounter}`;
  const dir = path.join(home.root, 'profiles', name);
  mkdirSync(path.join(dir, 'runtime'), { recursive: true });
  return { name, dir };
}

function claim(
  sessionId: string,
  owner: { pid: unknown; start?: number | null },
  surface: string | null,
  lease: string,
) {
  return {
    lease_id: lease,
    session_id: sessionId,
    surface,
    pid: owner.pid,
    process_start_time: owner.start ?? null,
    started_at: 1767225600.25,
    updated_at: 1767225600.25,
    track_liveness: surface === 'desktop',
    metadata: { live_session_id: `live-${lease}` },
  };
}

function registryFile(dir: string): string {
  return path.join(dir, 'runtime', 'active_sessions.json');
}

function seed(dir: string, entries: unknown[]): string {
  const text = JSON.stringify({ entries });
  writeFileSync(registryFile(dir), text);
  return text;
}

function entries(dir: string): unknown[] {
  return (JSON.parse(readFileSync(registryFile(dir), 'utf8')) as { entries: unknown[] }).entries;
}

function markers(dir: string, content: unknown): void {
  mkdirSync(path.join(dir, 'desktop'), { recursive: true });
  const text = typeof content === 'string' ? content : JSON.stringify(content);
  writeFileSync(path.join(dir, 'desktop', 'interrupted_turns.json'), text);
}

/** Resolves once a flock(1) child waits on `lock`: the takeover has reached Hermes' lock and is blocked on it. */
async function waitingOnLock(lock: string): Promise<void> {
  const tasks = `/proc/${process.pid}/task`;
  for (;;) {
    // This process's own children: the takeover's flock(1) child is one of them.
    const pids = readdirSync(tasks).flatMap((tid) => readFileSync(`${tasks}/${tid}/children`, 'utf8').split(' '));
    for (const pid of pids.filter((entry) => /^\d+$/.test(entry))) {
      let cmdline = '';
      try {
        cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      } catch {
        continue;
      }
      if (cmdline === ['flock', '-x', lock, 'cat', ''].join('\0')) return;
    }
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** Takes the lock as hermes_cli.active_sessions._FileLock does (Python's fcntl.flock), until stdin closes. */
async function holdHermesLock(lock: string): Promise<ChildProcess> {
  const holder = spawn(
    'python3',
    [
      '-c',
      `import fcntl, sys\nf = open(sys.argv[1], "a+b")\nfcntl.flock(f.fileno(), fcntl.LOCK_EX)\nprint("held", flush=True)\nsys.stdin.read()`,
      lock,
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  children.push(holder);
  await new Promise<void>((resolve) => holder.stdout!.once('data', () => resolve()));
  return holder;
}

async function release(holder: ChildProcess): Promise<void> {
  const exited = new Promise<void>((resolve) => holder.once('exit', () => resolve()));
  holder.stdin!.end();
  await exited;
}

async function takeover(profile: string, body: unknown, url = host.url) {
  const response = await fetch(`${url}${PREFIX}/sessions/takeover?profile=${profile}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TEST_TOKEN}`, 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return {
    status: response.status,
    body: (await response.json()) as Record<string, unknown>,
    cacheControl: response.headers.get('cache-control'),
  };
}

beforeAll(async () => {
  host = await startHost(testConfig(home.root, { clock, timers }), {
    features: [sessionTakeoverFeature, desktopViewsFeature],
  });
});
afterAll(async () => {
  await host.app.close();
  for (const child of children) child.kill('SIGKILL');
  home.cleanup();
});
// A fresh rate window for every test.
beforeEach(() => clock.advance(60_000));

describe('POST /sessions/takeover', () => {
  it('drops a live Desktop claim on the chat and answers taken_over with its surface', async () => {
    const desktop = await liveProcess();
    const { name, dir } = profileHome();
    const other = claim('other-chat', desktop, 'desktop', 'lease-other');
    seed(dir, [claim('chat', desktop, 'desktop', 'lease-1'), other]);

    const answer = await takeover(name, { session_ids: ['live-id', 'chat'] });
    expect(answer).toEqual({
      status: 200,
      body: { ok: true, status: 'taken_over', surface: 'desktop' },
      cacheControl: 'no-store',
    });
    expect(entries(dir)).toEqual([other]);
  });

  it('is busy, and removes nothing, while the owner runs a turn its live process marked', async () => {
    const desktop = await liveProcess();
    const { name, dir } = profileHome();
    const text = seed(dir, [claim('chat', desktop, 'desktop', 'lease-1')]);
    markers(dir, {
      chat: {
        prompt: 'deploy it',
        started_at: 1767225600.5,
        attempts: 0,
        writer_pid: desktop.pid,
        writer_start_time: desktop.start,
      },
    });

    expect((await takeover(name, { session_ids: ['chat'] })).body).toEqual({
      ok: true,
      status: 'busy',
      surface: 'desktop',
    });
    expect(readFileSync(registryFile(dir), 'utf8')).toBe(text);
  });

  it("counts a marker under the chat's other id, or from an isolated child process, as running", async () => {
    const desktop = await liveProcess();
    const child = await liveProcess();
    const { name, dir } = profileHome();
    seed(dir, [claim('stored-id', desktop, 'tui', 'lease-1')]);
    markers(dir, { 'live-id': { prompt: 'hi', started_at: 1, writer_pid: child.pid, writer_start_time: child.start } });
    expect((await takeover(name, { session_ids: ['live-id', 'stored-id'] })).body.status).toBe('busy');
  });

  it('counts a marker file that cannot be read, or an entry of another shape, as running', async () => {
    const desktop = await liveProcess();
    const unreadable = profileHome();
    seed(unreadable.dir, [claim('chat', desktop, 'desktop', 'lease-1')]);
    markers(unreadable.dir, '{"chat": {"prompt": "half a write');
    expect((await takeover(unreadable.name, { session_ids: ['chat'] })).body.status).toBe('busy');

    const legacy = profileHome();
    seed(legacy.dir, [claim('chat', desktop, 'desktop', 'lease-1')]);
    markers(legacy.dir, { chat: 'legacy' });
    expect((await takeover(legacy.name, { session_ids: ['chat'] })).body.status).toBe('busy');
    expect(entries(legacy.dir)).toHaveLength(1);
  });

  it('counts a marker naming no writer as running while its owner lives', async () => {
    const desktop = await liveProcess();
    const { name, dir } = profileHome();
    seed(dir, [claim('chat', desktop, 'desktop', 'lease-1')]);
    markers(dir, { chat: { prompt: 'hi', started_at: 1 } });
    expect((await takeover(name, { session_ids: ['chat'] })).body.status).toBe('busy');
  });

  it("ignores a marker whose writer is provably dead: gone, or its pid now another process's", async () => {
    const desktop = await liveProcess();
    const gone = profileHome();
    seed(gone.dir, [claim('chat', desktop, 'desktop', 'lease-1')]);
    markers(gone.dir, { chat: { prompt: 'hi', started_at: 1, writer_pid: await goneProcess() } });
    expect((await takeover(gone.name, { session_ids: ['chat'] })).body).toEqual({
      ok: true,
      status: 'taken_over',
      surface: 'desktop',
    });
    expect(entries(gone.dir)).toEqual([]);

    // The writer's pid is alive but started long after the marker's writer did: the pid was reused.
    const recycled = profileHome();
    seed(recycled.dir, [claim('chat', desktop, 'desktop', 'lease-1')]);
    markers(recycled.dir, {
      chat: { prompt: 'hi', started_at: 1, writer_pid: desktop.pid, writer_start_time: desktop.start - 100 },
    });
    expect((await takeover(recycled.name, { session_ids: ['chat'] })).body.status).toBe('taken_over');
  });

  it("drops a gone owner's claim whatever its surface, ignoring its marker that names no writer", async () => {
    const { name, dir } = profileHome();
    seed(dir, [claim('chat', { pid: await goneProcess(), start: 1767225600 }, 'cli', 'lease-1')]);
    markers(dir, { chat: { prompt: 'hi', started_at: 1 } });
    expect((await takeover(name, { session_ids: ['chat'] })).body).toEqual({
      ok: true,
      status: 'taken_over',
      surface: 'cli',
    });
    expect(entries(dir)).toEqual([]);
  });

  it('takes an owner whose pid now belongs to a later process as gone', async () => {
    const later = await liveProcess();
    const { name, dir } = profileHome();
    seed(dir, [claim('chat', { pid: later.pid, start: later.start - 3600 }, 'gateway:telegram', 'lease-1')]);
    expect((await takeover(name, { session_ids: ['chat'] })).body.status).toBe('taken_over');
  });

  it('is busy for a live claim whose turns it cannot see: a CLI, a gateway, no surface', async () => {
    const owner = await liveProcess();
    for (const surface of ['cli', 'gateway:telegram', null]) {
      const { name, dir } = profileHome();
      const text = seed(dir, [claim('chat', owner, surface, 'lease-1')]);
      const { body } = await takeover(name, { session_ids: ['chat'] });
      expect(body).toEqual(surface ? { ok: true, status: 'busy', surface } : { ok: true, status: 'busy' });
      expect(readFileSync(registryFile(dir), 'utf8')).toBe(text);
    }
  });

  it("keeps this host's own claim (same_host) and still drops another app's beside it", async () => {
    const desktop = await liveProcess();
    const { name, dir } = profileHome();
    const own = claim('live-id', { pid: process.pid, start: await processStartTime(process.pid) }, 'tui', 'lease-own');
    seed(dir, [own, claim('chat', desktop, 'desktop', 'lease-1')]);
    expect((await takeover(name, { session_ids: ['live-id', 'chat'] })).body).toEqual({
      ok: true,
      status: 'same_host',
      surface: 'tui',
    });
    expect(entries(dir)).toEqual([own]);
  });

  it('is free, writing nothing, when nobody holds the chat or there is no registry file yet', async () => {
    const desktop = await liveProcess();
    const { name, dir } = profileHome();
    const text = seed(dir, [claim('other', desktop, 'desktop', 'lease-1')]);
    expect((await takeover(name, { session_ids: ['chat'] })).body).toEqual({ ok: true, status: 'free' });
    expect(readFileSync(registryFile(dir), 'utf8')).toBe(text);

    // Hermes has claimed chats here before (its lock file exists) but holds none now.
    const empty = profileHome();
    writeFileSync(path.join(empty.dir, 'runtime', 'active_sessions.lock'), '');
    expect((await takeover(empty.name, { session_ids: ['chat'] })).body).toEqual({ ok: true, status: 'free' });
  });

  it("answers 503 for a registry Hermes' strict reader refuses, and leaves it as it was", async () => {
    const desktop = await liveProcess();
    for (const content of [
      'not json',
      '{"entries": {}}',
      JSON.stringify({ entries: [claim('chat', { pid: 'abc' }, 'desktop', 'l')] }),
    ]) {
      const { name, dir } = profileHome();
      writeFileSync(registryFile(dir), content);
      expect(await takeover(name, { session_ids: ['chat'] })).toMatchObject({
        status: 503,
        body: { detail: "Hermes can't read who owns this chat right now" },
      });
      expect(readFileSync(registryFile(dir), 'utf8')).toBe(content);
    }
    // Two claims with one lease id: Hermes can't tell them apart either.
    const { name, dir } = profileHome();
    seed(dir, [claim('chat', desktop, 'desktop', 'same'), claim('other', desktop, 'desktop', 'same')]);
    expect((await takeover(name, { session_ids: ['chat'] })).status).toBe(503);
  });

  it('answers 501 on a Hermes without the ownership registry or with its turn markers moved elsewhere', async () => {
    const bare = path.join(home.root, 'profiles', 'bare');
    mkdirSync(bare, { recursive: true });
    expect(await takeover('bare', { session_ids: ['chat'] })).toMatchObject({
      status: 501,
      body: { detail: "This Hermes version can't hand a chat over" },
    });

    const migrated = profileHome();
    seed(migrated.dir, []);
    markers(migrated.dir, {});
    writeFileSync(path.join(migrated.dir, 'desktop', 'interrupted_turns.json.migrated'), '{}');
    expect((await takeover(migrated.name, { session_ids: ['chat'] })).status).toBe(501);

    const tabled = profileHome();
    seed(tabled.dir, []);
    const db = new Database(path.join(tabled.dir, 'state.db'));
    db.exec('CREATE TABLE interrupted_turns (session_id TEXT PRIMARY KEY, prompt TEXT)');
    db.close();
    expect((await takeover(tabled.name, { session_ids: ['chat'] })).status).toBe(501);
  });

  it('refuses a bad body with 400 and an oversized one with 413, before any work', async () => {
    const { name } = profileHome();
    for (const body of [
      {},
      { session_ids: [] },
      { session_ids: [''] },
      { session_ids: [1] },
      { session_ids: ['a', 'b', 'c', 'd', 'e'] },
      { session_ids: ['x'.repeat(201)] },
      'nope',
    ]) {
      expect((await takeover(name, body)).status).toBe(400);
    }
    expect((await takeover(name, { session_ids: ['x'.repeat(5000)] })).status).toBe(413);
  });

  it('caps takeovers at 60 a minute host-wide, whatever the profile', async () => {
    const bare = path.join(home.root, 'profiles', 'limited');
    mkdirSync(bare, { recursive: true });
    for (let i = 0; i < 60; i += 1) {
      expect((await takeover(i % 2 ? 'limited' : 'work', { session_ids: ['chat'] })).status).toBe(501);
    }
    expect(await takeover('limited', { session_ids: ['chat'] })).toMatchObject({
      status: 429,
      body: { detail: 'Too many takeover requests; try again shortly' },
    });
    clock.advance(60_000);
    expect((await takeover('limited', { session_ids: ['chat'] })).status).toBe(501);
  });

  it('has python3 with fcntl, the Hermes stand-in that holds the lock below (these tests need it; never skipped)', () => {
    expect(spawnSync('python3', ['-c', 'import fcntl'], { stdio: 'ignore' }).status).toBe(0);
  });

  it("takes Hermes' own registry lock (Python's fcntl.flock) and waits while Hermes holds it", async () => {
    const desktop = await liveProcess();
    const { name, dir } = profileHome();
    const text = seed(dir, [claim('chat', desktop, 'desktop', 'lease-1')]);
    const lock = path.join(dir, 'runtime', 'active_sessions.lock');
    const holder = await holdHermesLock(lock);

    const answer = takeover(name, { session_ids: ['chat'] });
    await waitingOnLock(lock);
    expect(readFileSync(registryFile(dir), 'utf8')).toBe(text);
    await release(holder);
    expect((await answer).body).toEqual({ ok: true, status: 'taken_over', surface: 'desktop' });
    expect(entries(dir)).toEqual([]);
  });

  it('answers 504 when the lock is still held after 20 s, and writes nothing after', async () => {
    const desktop = await liveProcess();
    const { name, dir } = profileHome();
    const text = seed(dir, [claim('chat', desktop, 'desktop', 'lease-1')]);
    const lock = path.join(dir, 'runtime', 'active_sessions.lock');
    const holder = await holdHermesLock(lock);

    const answer = takeover(name, { session_ids: ['chat'] });
    await waitingOnLock(lock);
    await timers.untilWaiting(1);
    timers.advance(20_000);
    expect(await answer).toMatchObject({ status: 504, body: { detail: 'Chat takeover timed out' } });

    await release(holder);
    // Nobody holds the lock now: the abandoned takeover stopped waiting for it rather than writing later.
    expect(spawnSync('flock', ['-n', lock, 'true']).status).toBe(0);
    expect(readFileSync(registryFile(dir), 'utf8')).toBe(text);
  });
});

describe('the Hermes dashboard this host fronts', () => {
  it("counts its claims as this host's own (same_host): Conduit's sends go through its gateway", async () => {
    const dashboard = spawn(
      process.execPath,
      ['-e', "const s = require('net').createServer().listen(0, '127.0.0.1', () => console.log(s.address().port));"],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    children.push(dashboard);
    const port = Number(
      await new Promise<string>((resolve) => dashboard.stdout!.once('data', (d: Buffer) => resolve(d.toString()))),
    );
    const start = await processStartTime(dashboard.pid!);
    expect(await processListensOn(dashboard.pid!, port)).toBe(true);
    expect(await processListensOn(process.pid, port)).toBe(false);

    const fronting = await startHost(
      testConfig(home.root, { serviceEnv: { HERMES_DASHBOARD_URL: `http://127.0.0.1:${port}` } }),
      { features: [sessionTakeoverFeature] },
    );
    try {
      const { name, dir } = profileHome();
      const own = claim('chat', { pid: dashboard.pid, start }, 'tui', 'lease-1');
      seed(dir, [own]);
      expect((await takeover(name, { session_ids: ['chat'] }, fronting.url)).body).toEqual({
        ok: true,
        status: 'same_host',
        surface: 'tui',
      });
      expect(entries(dir)).toEqual([own]);
    } finally {
      await fronting.app.close();
    }
  });
});

describe('process start times', () => {
  it("match psutil's create_time: this process started when its uptime says", async () => {
    const start = await processStartTime(process.pid);
    expect(start).not.toBeNull();
    // Clock ticks are 10 ms and btime is whole seconds: within a couple of seconds of the truth.
    expect(Math.abs(start! - (Date.now() / 1000 - process.uptime()))).toBeLessThan(2);
  });

  it('a free port is listened on by nobody', async () => {
    const server = createServer();
    const port = await new Promise<number>((resolve) =>
      server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)),
    );
    expect(await processListensOn(process.pid, port)).toBe(true);
    await new Promise<void>((resolve) => server.close(() => resolve()));
    expect(await processListensOn(process.pid, port)).toBe(false);
  });
});
