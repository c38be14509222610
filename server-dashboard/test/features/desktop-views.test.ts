import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Host } from '../../src/app.js';
import { systemClock } from '../../src/clock.js';
import { createDesktopViewsFeature, sessionTakeoverFeature } from '../../src/features/sessions/index.js';
import { DesktopViewsObserver } from '../../src/features/sessions/desktop-views.js';
import { processStartTime } from '../../src/features/sessions/process-liveness.js';
import { silentLogger } from '../../src/log.js';
import { DESKTOP_SELECTED_FILE, readDesktopSelection } from '../../src/notifier/desktop-watch.js';
import { ManualClock, TEST_TOKEN, tempHermesHome, testConfig } from '../support/config.js';
import { startHost } from '../support/host.js';

const PREFIX = '/api/plugins/conduit_push';
const VIEWS_FILE = 'conduit-desktop-views.json';

const home = tempHermesHome();
const children: ChildProcess[] = [];
let host: Host & { url: string };

/** Each completed observer pass and each views file written, as events a test waits on. */
const passWaiters: (() => void)[] = [];
const writeWaiters: { home: string; done: () => void }[] = [];
const nextPass = () => new Promise<void>((resolve) => passWaiters.push(resolve));
/** A pass that starts after this call has completed: everything written before it has been seen. */
const freshPass = async () => {
  await nextPass();
  await nextPass();
};
const nextWrite = (at: string) => new Promise<void>((done) => writeWaiters.push({ home: at, done }));

async function liveProcess(): Promise<{ child: ChildProcess; pid: number; start: number }> {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1e6)'], { stdio: 'ignore' });
  children.push(child);
  await new Promise<void>((resolve) => child.once('spawn', () => resolve()));
  return { child, pid: child.pid!, start: (await processStartTime(child.pid!))! };
}

async function end(child: ChildProcess): Promise<void> {
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGKILL');
  await exited;
}

function profileDir(name: string): string {
  const dir = name === 'default' ? home.root : path.join(home.root, 'profiles', name);
  mkdirSync(path.join(dir, 'runtime'), { recursive: true });
  return dir;
}

function desktopClaim(sessionId: string, owner: { pid: number; start: number }, surface = 'desktop') {
  return {
    lease_id: `lease-${sessionId}`,
    session_id: sessionId,
    surface,
    pid: owner.pid,
    process_start_time: owner.start,
    started_at: 1767225600.5,
    updated_at: 1767225600.5,
    track_liveness: true,
    metadata: { live_session_id: `live-${sessionId}` },
  };
}

function seedRegistry(dir: string, entries: unknown[]): void {
  writeFileSync(path.join(dir, 'runtime', 'active_sessions.json'), JSON.stringify({ entries }));
}

function selectionFile(dir: string): Record<string, unknown> {
  return JSON.parse(readFileSync(path.join(dir, DESKTOP_SELECTED_FILE), 'utf8')) as Record<string, unknown>;
}

async function views(query: string, url = host.url) {
  const response = await fetch(`${url}${PREFIX}/sessions/desktop-views${query}`, {
    headers: { authorization: `Bearer ${TEST_TOKEN}` },
  });
  return {
    status: response.status,
    body: (await response.json()) as {
      ok?: boolean;
      observing?: boolean;
      reason?: string | null;
      views?: Record<string, { opened_at: number; seen_through: number; client: string; open?: true }>;
      detail?: string;
    },
    cacheControl: response.headers.get('cache-control'),
  };
}

beforeAll(async () => {
  const feature = createDesktopViewsFeature({
    passMs: 20,
    writeDelayMs: 0,
    onPass: () => {
      for (const resolve of passWaiters.splice(0)) resolve();
    },
    onWrite: (at) => {
      for (const waiter of writeWaiters.filter((w) => w.home === at)) {
        writeWaiters.splice(writeWaiters.indexOf(waiter), 1);
        waiter.done();
      }
    },
  });
  host = await startHost(testConfig(home.root), { features: [sessionTakeoverFeature, feature] });
  await nextPass();
});
afterAll(async () => {
  await host.app.close();
  for (const child of children) child.kill('SIGKILL');
  home.cleanup();
});

describe('GET /sessions/desktop-views', () => {
  it('reads the views file, filtered by since; a since that is not a finite number returns every chat', async () => {
    const dir = profileDir('reader');
    writeFileSync(
      path.join(dir, VIEWS_FILE),
      JSON.stringify({
        version: 1,
        views: {
          old: { opened_at: 1000, seen_through: 1100, client: 'desktop' },
          newer: { opened_at: 2000, seen_through: 2600, client: 'browser' },
          // Marked open by an observer that is no longer watching it: nothing confirms that now.
          stale: { opened_at: 3000, seen_through: 3000, client: 'desktop', open: true },
          broken: { opened_at: 'soon', client: 'desktop' },
        },
      }),
    );
    await freshPass();
    const all = await views('?profile=reader');
    expect(all).toEqual({
      status: 200,
      cacheControl: 'no-store',
      body: {
        ok: true,
        observing: true,
        reason: null,
        views: {
          old: { opened_at: 1000, seen_through: 1100, client: 'desktop' },
          newer: { opened_at: 2000, seen_through: 2600, client: 'browser' },
          stale: { opened_at: 3000, seen_through: 3000, client: 'desktop' },
        },
      },
    });
    expect(Object.keys((await views('?profile=reader&since=2500')).body.views!)).toEqual(['newer', 'stale']);
    expect(Object.keys((await views('?profile=reader&since=3000')).body.views!)).toEqual([]);
    for (const since of ['abc', 'Infinity', '']) {
      expect(Object.keys((await views(`?profile=reader&since=${since}`)).body.views!)).toHaveLength(3);
    }
  });

  it('keeps at most 2,000 chats, the ones seen last', async () => {
    const dir = profileDir('crowded');
    const many: Record<string, unknown> = {};
    for (let i = 0; i < 2100; i += 1) many[`chat-${i}`] = { opened_at: i, seen_through: i, client: 'desktop' };
    writeFileSync(path.join(dir, VIEWS_FILE), JSON.stringify({ version: 1, views: many }));
    const { body } = await views('?profile=crowded');
    expect(Object.keys(body.views!)).toHaveLength(2000);
    expect(body.views!['chat-2099']).toBeDefined();
    expect(body.views!['chat-99']).toBeUndefined();
  });

  it('answers an empty list for a profile nothing was seen in, and 503 for an unknown profile', async () => {
    expect((await views('?profile=work')).body.views).toEqual({});
    expect((await views('?profile=ghost')).status).toBe(503);
  });
});

describe('Desktop connected to Hermes directly', () => {
  it("publishes the chats Desktop holds in Hermes' registry for the turn hooks, and records their views", async () => {
    const dir = profileDir('direct');
    const desktop = await liveProcess();
    const tui = await liveProcess();
    seedRegistry(dir, [desktopClaim('chat-a', desktop), desktopClaim('tui-chat', tui, 'tui')]);
    const before = Date.now() / 1000;
    const written = nextWrite(dir);
    await freshPass();

    // The file the turn hooks' two-minute rule reads: only Desktop's claim, never the TUI's.
    expect(selectionFile(dir)).toEqual({ version: 1, sessions: ['chat-a'], publisher: 'hermes-registry' });
    expect(await readDesktopSelection(dir, Date.now())).toEqual(new Set(['chat-a']));
    await written;
    const open = await views('?profile=direct');
    expect(open.body.observing).toBe(true);
    expect(open.body.views).toEqual({
      'chat-a': { opened_at: expect.any(Number), seen_through: expect.any(Number), client: 'desktop', open: true },
    });
    const view = open.body.views!['chat-a']!;
    expect(view.opened_at).toBeGreaterThanOrEqual(before - 1);
    expect(view.seen_through).toBeGreaterThanOrEqual(view.opened_at);

    // Desktop quits: the selection is rewritten empty at once, and the chat was seen through then.
    const closed = nextWrite(dir);
    await end(desktop.child);
    await freshPass();
    await closed;
    expect(selectionFile(dir)).toEqual({ version: 1, sessions: [], publisher: 'hermes-registry' });
    expect(await readDesktopSelection(dir, Date.now())).toEqual(new Set());
    const after = (await views('?profile=direct')).body.views!['chat-a']!;
    expect(after.open).toBeUndefined();
    expect(after.opened_at).toBe(view.opened_at);
    expect(JSON.parse(readFileSync(path.join(dir, VIEWS_FILE), 'utf8'))).toEqual({
      version: 1,
      views: { 'chat-a': after },
    });
  });

  it("renews its selection file within the 45 s the hooks trust it, and stands down while the proxy's publisher is fresh", async () => {
    const dir = profileDir('both');
    const desktop = await liveProcess();
    seedRegistry(dir, [desktopClaim('direct-chat', desktop)]);
    // The proxy's publisher (sockets through this service) wrote just now.
    const proxied = JSON.stringify({ version: 1, sessions: ['proxied-chat'] }) + '\n';
    writeFileSync(path.join(dir, DESKTOP_SELECTED_FILE), proxied);
    await freshPass();
    expect(readFileSync(path.join(dir, DESKTOP_SELECTED_FILE), 'utf8')).toBe(proxied);
    const both = (await views('?profile=both')).body.views!;
    expect(Object.keys(both).sort()).toEqual(['direct-chat', 'proxied-chat']);
    expect(both['proxied-chat']!.open).toBe(true);

    // The proxy stopped renewing: once its file is past the 45 s trust, the registry's chats are published.
    const old = new Date(Date.now() - 60_000);
    utimesSync(path.join(dir, DESKTOP_SELECTED_FILE), old, old);
    await freshPass();
    expect(selectionFile(dir)).toEqual({ version: 1, sessions: ['direct-chat'], publisher: 'hermes-registry' });

    // Our own file, 31 s old: renewed although nothing changed.
    const aging = new Date(Date.now() - 31_000);
    utimesSync(path.join(dir, DESKTOP_SELECTED_FILE), aging, aging);
    await freshPass();
    expect(await readDesktopSelection(dir, Date.now() + 20_000)).toEqual(new Set(['direct-chat']));
  });

  it("writes nothing of Hermes' own: only its two files appear in the home", async () => {
    const dir = profileDir('untouched');
    const desktop = await liveProcess();
    seedRegistry(dir, [desktopClaim('chat', desktop)]);
    writeFileSync(path.join(dir, 'state.db'), 'hermes');
    const beforeFiles = readdirSync(dir).sort();
    const registry = readFileSync(path.join(dir, 'runtime', 'active_sessions.json'), 'utf8');
    const written = nextWrite(dir);
    await freshPass();
    await written;
    expect(readdirSync(dir).sort()).toEqual([...beforeFiles, DESKTOP_SELECTED_FILE, VIEWS_FILE].sort());
    expect(readFileSync(path.join(dir, 'runtime', 'active_sessions.json'), 'utf8')).toBe(registry);
    expect(readFileSync(path.join(dir, 'state.db'), 'utf8')).toBe('hermes');
  });

  it('reports gateway-unsupported while the registry is in a form this host does not read', async () => {
    const dir = profileDir('odd');
    writeFileSync(path.join(dir, 'runtime', 'active_sessions.json'), '{"entries": "many"}');
    await freshPass();
    expect((await views('?profile=odd')).body).toMatchObject({ observing: false, reason: 'gateway-unsupported' });
  });
});

describe('the observer', () => {
  it('is waiting until its first pass has run', () => {
    const observer = new DesktopViewsObserver({ hermesHome: home.root, clock: systemClock, log: silentLogger });
    expect(observer.status(home.root)).toEqual({ observing: false, reason: 'waiting' });
  });
});

describe('rate limit', () => {
  it('caps Desktop view reads at 60 a minute per profile', async () => {
    const clock = new ManualClock();
    const limited = await startHost(testConfig(home.root, { clock }), {
      features: [createDesktopViewsFeature({ passMs: 3_600_000 })],
    });
    try {
      for (let i = 0; i < 60; i += 1) expect((await views('?profile=work', limited.url)).status).toBe(200);
      expect(await views('?profile=work', limited.url)).toMatchObject({
        status: 429,
        body: { detail: 'Too many Desktop view reads; try again shortly' },
      });
      // Another profile has its own window.
      expect((await views('', limited.url)).status).toBe(200);
      clock.advance(60_000);
      expect((await views('?profile=work', limited.url)).status).toBe(200);
    } finally {
      await limited.app.close();
    }
  });
});
