import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Host } from '../../src/app.js';
import { hermesPython } from '../../src/kernel/hermes-python.js';
import { ManualTimers } from '../../src/kernel/timers.js';
import { fakeHermesPython } from '../fixtures/fake-hermes-python.js';
import { ManualClock, TEST_TOKEN, tempHermesHome, testConfig } from '../support/config.js';
import { startHost } from '../support/host.js';

/** Recall through an external memory provider, run on "Hermes' Python" (fixtures/fake-hermes-python.ts). */

const PREFIX = '/api/plugins/conduit_push';
const home = tempHermesHome();
const clock = new ManualClock();
let release = '';
let pythonPath = '';
let host: Host & { url: string };

function profile(name: string, files: Record<string, string>): string {
  const dir = name === 'default' ? home.root : path.join(home.root, 'profiles', name);
  mkdirSync(dir, { recursive: true });
  for (const [file, text] of Object.entries(files)) writeFileSync(path.join(dir, file), text);
  return dir;
}

async function call(route: string, body?: unknown, url = host.url) {
  const response = await fetch(url + PREFIX + route, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${TEST_TOKEN}`, 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

beforeAll(async () => {
  const { python, releaseFifo } = fakeHermesPython(home.root);
  release = releaseFifo;
  pythonPath = python;
  profile('honcho', {
    'config.yaml': 'memory:\n  provider: honcho\n',
    '.env': 'FAKE_MEMORY_KEY=from-the-profile\n',
  });
  profile('offline', { 'config.yaml': 'memory:\n  provider: offline\n' });
  profile('flaky', { 'config.yaml': 'memory:\n  provider: flaky\n' });
  profile('missing', { 'config.yaml': 'memory:\n  provider: missing\n' });
  profile('broken', { 'config.yaml': 'memory:\n  provider: broken\n' });
  profile('switch', { 'config.yaml': 'memory:\n  provider: alpha\n' });
  profile('builtin', { 'config.yaml': 'memory:\n  provider: builtin\n' });
  host = await startHost(
    testConfig(home.root, {
      clock,
      serviceEnv: { CONDUIT_HERMES_PYTHON: pythonPath, SECRET_OF_THE_SERVICE: 'never-in-the-child' },
    }),
  );
});
afterAll(async () => {
  await host.app.close();
  home.cleanup();
});
beforeEach(() => clock.advance(60_000));

describe('recall through the external provider', () => {
  it("starts the provider once, as Hermes does, with the profile's own .env", async () => {
    expect(await call('/memory/recall?profile=honcho', { query: '  what did I say   about deploys? ' })).toEqual({
      status: 200,
      body: {
        ok: true,
        available: true,
        results: "honcho recalled 'what did I say about deploys?' (session conduit-voice)",
      },
    });
    const calls = readFileSync(path.join(home.root, 'profiles', 'honcho', 'hermes-calls.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as unknown);
    expect(calls).toEqual([
      {
        call: 'initialize',
        session_id: 'conduit-voice',
        kwargs: {
          platform: 'conduit_voice',
          hermes_home: path.join(home.root, 'profiles', 'honcho'),
          agent_context: 'primary',
          agent_identity: 'honcho',
          agent_workspace: 'hermes',
        },
        key: 'from-the-profile',
        // The worker's environment is a short allow-list: the service's own secrets never reach it.
        service_secret: null,
      },
    ]);
    // The context route now says recall works.
    expect((await call('/memory/context?profile=honcho')).body).toMatchObject({ provider: 'honcho', recall: true });
  });

  it('clips a recall to 4,000 characters', async () => {
    const { body } = await call('/memory/recall?profile=honcho', { query: 'long' });
    expect((body.results as string).length).toBe(4000);
    expect((body.results as string).endsWith('…')).toBe(true);
  });

  it("answers 502 without the provider's own error text when a recall fails", async () => {
    expect(await call('/memory/recall?profile=honcho', { query: 'boom' })).toEqual({
      status: 502,
      body: { detail: 'The memory provider failed; the Hermes log has the details' },
    });
    // The worker survives a failed recall.
    expect((await call('/memory/recall?profile=honcho', { query: 'again' })).body.available).toBe(true);
  });

  it('is available false (not an error) for a provider that is missing, unavailable or fails to start', async () => {
    for (const name of ['missing', 'offline', 'broken']) {
      expect(await call(`/memory/recall?profile=${name}`, { query: 'q' })).toEqual({
        status: 200,
        body: { ok: true, available: false, results: '' },
      });
      expect((await call(`/memory/context?profile=${name}`)).body).toMatchObject({ provider: name, recall: false });
    }
    // `builtin` names no external provider.
    expect((await call('/memory/recall?profile=builtin', { query: 'q' })).body).toEqual({
      ok: true,
      available: false,
      results: '',
    });
  });

  it('tries a failed start again only after a minute', async () => {
    const dir = profile('flaky', { 'config.yaml': 'memory:\n  provider: flaky\n' });
    expect((await call('/memory/recall?profile=flaky', { query: 'q' })).body.available).toBe(false);
    // Fixed, but within the minute the failed start stands.
    writeFileSync(path.join(dir, 'flaky-ready'), '');
    clock.advance(30_000);
    expect((await call('/memory/recall?profile=flaky', { query: 'q' })).body.available).toBe(false);
    clock.advance(30_000);
    expect((await call('/memory/recall?profile=flaky', { query: 'q' })).body).toEqual({
      ok: true,
      available: true,
      results: "flaky recalled 'q' (session conduit-voice)",
    });
  });

  it('restarts the provider when memory.provider changes', async () => {
    expect((await call('/memory/recall?profile=switch', { query: 'q' })).body.results).toBe(
      "alpha recalled 'q' (session conduit-voice)",
    );
    writeFileSync(path.join(home.root, 'profiles', 'switch', 'config.yaml'), 'memory:\n  provider: beta\n');
    expect((await call('/memory/recall?profile=switch', { query: 'q' })).body.results).toBe(
      "beta recalled 'q' (session conduit-voice)",
    );
  });
});

describe('a hung provider', () => {
  it('answers 503 at once while one recall hangs, 504 after 10 s, and serves again once it returns', async () => {
    const timers = new ManualTimers();
    const python = hermesPython({ CONDUIT_HERMES_PYTHON: pythonPath });
    const hung = await startHost(
      testConfig(home.root, { clock, timers, serviceEnv: { CONDUIT_HERMES_PYTHON: python ?? '' } }),
    );
    try {
      expect((await call('/memory/recall?profile=honcho', { query: 'warm up' }, hung.url)).body.available).toBe(true);
      const first = call('/memory/recall?profile=honcho', { query: 'hang' }, hung.url);
      await timers.untilWaiting(1);
      // The deadline is armed before the query reaches the provider: wait until the provider is inside
      // the hanging recall, or the next query could reach it first and be answered.
      const calls = path.join(home.root, 'profiles', 'honcho', 'hermes-calls.jsonl');
      await vi.waitFor(() => expect(readFileSync(calls, 'utf8')).toContain('"call": "prefetch_hang"'), {
        timeout: 20_000,
      });
      expect(await call('/memory/recall?profile=honcho', { query: 'q' }, hung.url)).toEqual({
        status: 503,
        body: { detail: 'The memory provider is not responding; try again shortly' },
      });
      // Another profile is unaffected.
      expect((await call('/memory/recall?profile=switch', { query: 'q' }, hung.url)).status).toBe(200);
      timers.advance(10_000);
      expect(await first).toEqual({ status: 504, body: { detail: 'Memory recall timed out' } });
      // The provider returns: the profile is served again.
      await writeFile(release, 'go');
      await expect
        .poll(async () => (await call('/memory/recall?profile=honcho', { query: 'q' }, hung.url)).status)
        .toBe(200);
    } finally {
      await hung.app.close();
    }
  });
});

describe("finding Hermes' Python", () => {
  it('is CONDUIT_HERMES_PYTHON, else the interpreter on the `#!` line of the hermes command on PATH', () => {
    const bin = path.join(home.root, 'bin-venv');
    const other = path.join(home.root, 'bin-env');
    mkdirSync(bin, { recursive: true });
    mkdirSync(other, { recursive: true });
    writeFileSync(path.join(bin, 'hermes'), '#!/opt/hermes/.venv/bin/python3.11\nimport sys\n');
    chmodSync(path.join(bin, 'hermes'), 0o755);
    writeFileSync(path.join(other, 'hermes'), '#!/usr/bin/env python3\n');
    chmodSync(path.join(other, 'hermes'), 0o755);
    expect(hermesPython({ PATH: `${other}:${bin}` })).toBe('/opt/hermes/.venv/bin/python3.11');
    expect(hermesPython({ PATH: other })).toBeNull();
    expect(hermesPython({ PATH: bin, CONDUIT_HERMES_PYTHON: '/srv/py' })).toBe('/srv/py');
    expect(hermesPython({})).toBeNull();
  });
});
