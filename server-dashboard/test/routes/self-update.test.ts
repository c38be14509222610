import { execFileSync } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Host } from '../../src/app.js';
import { installRoot, SelfUpdater } from '../../src/routes/self-update.js';
import { TEST_TOKEN, tempHermesHome, testConfig } from '../support/config.js';
import { startHost } from '../support/host.js';

/**
 * The app's Update plugin against a real git checkout: an "origin" repository and this service's
 * "install" cloned from it, with real git and real npm (a package without dependencies, so `npm ci`
 * needs no network).
 */

const ROUTE = '/api/dashboard/agent-plugins/conduit_push/update';
const home = tempHermesHome();
const origin = path.join(home.root, 'origin');
const install = path.join(home.root, 'install');
const env = {
  PATH: process.env.PATH ?? '',
  HOME: home.root,
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_AUTHOR_NAME: 'Test',
  GIT_AUTHOR_EMAIL: 'test@example.invalid',
  GIT_COMMITTER_NAME: 'Test',
  GIT_COMMITTER_EMAIL: 'test@example.invalid',
  npm_config_cache: path.join(home.root, 'npm-cache'),
  npm_config_update_notifier: 'false',
};
let host: Host & { url: string };

const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, env, encoding: 'utf8' });

function commitToOrigin(files: Record<string, string>, message: string): void {
  for (const [file, text] of Object.entries(files)) writeFileSync(path.join(origin, file), text);
  git(origin, 'add', '-A');
  git(origin, 'commit', '-q', '-m', message);
}

const packageJson = (version: string, build: string) =>
  JSON.stringify({ name: 'conduit-install', version, private: true, scripts: { build } }, null, 2);

async function update(authorization = `Bearer ${TEST_TOKEN}`) {
  const response = await fetch(host.url + ROUTE, { method: 'POST', headers: { authorization } });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

beforeAll(async () => {
  mkdirSync(origin, { recursive: true });
  git(origin, 'init', '-q', '-b', 'main');
  commitToOrigin(
    {
      'package.json': packageJson('0.1.0', "node -e \"require('fs').writeFileSync('built.txt', 'v1')\""),
      'package-lock.json': JSON.stringify({
        name: 'conduit-install',
        version: '0.1.0',
        lockfileVersion: 3,
        requires: true,
        packages: { '': { name: 'conduit-install', version: '0.1.0' } },
      }),
    },
    'first',
  );
  git(home.root, 'clone', '-q', origin, install);
  host = await startHost(testConfig(home.root), {
    updater: new SelfUpdater({ root: install, env }),
  });
});
afterAll(async () => {
  await host.app.close();
  home.cleanup();
});

describe('POST /api/dashboard/agent-plugins/conduit_push/update', () => {
  it('needs the dashboard sign-in', async () => {
    expect((await update('Bearer wrong')).status).toBe(401);
  });

  it('answers unchanged, as Hermes does, when the checkout is up to date', async () => {
    const { status, body } = await update();
    expect(status).toBe(200);
    expect(body).toMatchObject({ ok: true, name: 'conduit_push', unchanged: true });
    expect(body.output).toMatch(/Already up to date/);
    expect(existsSync(path.join(install, 'built.txt'))).toBe(false);
  });

  it('pulls, installs and builds what came in', async () => {
    commitToOrigin(
      { 'package.json': packageJson('0.2.0', "node -e \"require('fs').writeFileSync('built.txt', 'v2')\"") },
      'second',
    );
    const { status, body } = await update();
    expect(status).toBe(200);
    expect(body).toMatchObject({ ok: true, name: 'conduit_push', unchanged: false });
    expect(body.output).toContain('npm run build: done');
    expect(JSON.parse(readFileSync(path.join(install, 'package.json'), 'utf8')).version).toBe('0.2.0');
    expect(readFileSync(path.join(install, 'built.txt'), 'utf8')).toBe('v2');
  });

  it('reports a failed build clearly, and a refused pull (local changes) without touching them', async () => {
    commitToOrigin({ 'package.json': packageJson('0.3.0', 'node -e "process.exit(3)"') }, 'broken build');
    const broken = await update();
    expect(broken.status).toBe(400);
    expect(broken.body.detail).toMatch(/^The update was pulled but `npm run build` failed/);

    commitToOrigin({ 'notes.txt': 'from origin' }, 'notes');
    writeFileSync(path.join(install, 'notes.txt'), 'local edit');
    const refused = await update();
    expect(refused.status).toBe(400);
    expect(refused.body.detail).toMatch(/^git pull failed: /);
    expect(readFileSync(path.join(install, 'notes.txt'), 'utf8')).toBe('local edit');
  });

  it('refuses a service that is not a git checkout', async () => {
    const outside = path.join(home.root, 'not-a-checkout');
    mkdirSync(outside, { recursive: true });
    // tempHermesHome lives in the OS temp folder, never inside a checkout.
    expect(installRoot(outside)).toBeNull();
    // A checkout of another project (here the test's own, named conduit-install) is never this service's.
    expect(installRoot(install)).toBeNull();
    expect(installRoot(path.join(install, 'sub', 'dir'))).toBeNull();
    // This service's own checkout is found from inside it.
    const ours = fileURLToPath(new URL('../..', import.meta.url));
    expect(installRoot(ours)).toBe(path.resolve(ours, '..'));
    const bare = await startHost(testConfig(home.root), { updater: new SelfUpdater({ root: null }) });
    try {
      const response = await fetch(bare.url + ROUTE, {
        method: 'POST',
        headers: { authorization: `Bearer ${TEST_TOKEN}` },
      });
      expect([response.status, await response.json()]).toEqual([
        400,
        { detail: 'This Conduit host is not a git checkout; cannot pull updates. Update it by hand.' },
      ]);
    } finally {
      await bare.app.close();
    }
  });

  it("in front of Hermes' dashboard: answered here after the dashboard's sign-in check, never proxied", async () => {
    const seen: string[] = [];
    const dashboard = http.createServer((req, res) => {
      seen.push(`${req.method} ${req.url}`);
      if (req.url?.startsWith('/api/sessions')) {
        res.writeHead(req.headers.authorization === 'Bearer dashboard-login' ? 200 : 401).end('{}');
      } else res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true,"from":"hermes"}');
    });
    await new Promise<void>((resolve) => dashboard.listen(0, '127.0.0.1', resolve));
    const dashboardUrl = `http://127.0.0.1:${(dashboard.address() as AddressInfo).port}`;
    const fronting = await startHost(testConfig(home.root, { fronting: { mode: 'dashboard', dashboardUrl } }), {
      updater: new SelfUpdater({ root: null }),
    });
    try {
      const post = (route: string, authorization: string) =>
        fetch(fronting.url + route, { method: 'POST', headers: { authorization } });
      expect((await post(ROUTE, 'Bearer not-a-login')).status).toBe(401);
      const ours = await post(ROUTE, 'Bearer dashboard-login');
      expect(ours.status).toBe(400);
      expect(((await ours.json()) as { detail: string }).detail).toMatch(/not a git checkout/);
      expect(seen.every((line) => line.includes('/api/sessions'))).toBe(true);
      // Hermes' other plugin routes still go to Hermes.
      const other = await post('/api/dashboard/agent-plugins/conduit_push/enable', 'Bearer dashboard-login');
      expect(await other.json()).toEqual({ ok: true, from: 'hermes' });
    } finally {
      await fronting.app.close();
      await new Promise<void>((resolve) => dashboard.close(() => resolve()));
    }
  });

  it('runs one update at a time', async () => {
    const updater = new SelfUpdater({ root: install, env, buildSteps: [] });
    // The first is inside git when the second arrives.
    const first = updater.update();
    await expect(updater.update()).rejects.toMatchObject({ status: 409, message: 'An update is already running' });
    await first.catch(() => undefined);
  });
});
