/**
 * The compiled production build, run as production runs it: `node <server>/dist/main.js` with plain
 * node — no tsx, no --import, no --conditions, no NODE_OPTIONS — so every workspace package resolves
 * to its compiled dist/ through the `default` export condition. Each server must start and answer its
 * ready route, and the files it finds at run time relative to its own module (the host's package.json
 * version, the hook bridge scripts, the voice gateway's demo page and its forked media sender) must be
 * found from dist/.
 *
 * `npm run build` makes dist/ (`npm run check` builds before it tests, and turbo's test task depends
 * on the builds); without it this test fails and says so, it never skips.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '@conduit/contracts/testing';
import { acquirePostgres } from '@conduit/prisma/testing/postgres';
import { REPO_ROOT } from '../suite/launch.js';
import { compiled, plainEnv, startCompiled, startCompiledRelay, stopCompiled } from './support/compiled.js';

const scratch = mkdtempSync(path.join(os.tmpdir(), 'conduit-compiled-'));
afterAll(async () => {
  await stopCompiled();
  rmSync(scratch, { recursive: true, force: true });
});

/** The command line of a running process, as the kernel reports it. */
function commandLine(pid: number): string[] {
  return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
}

/** The processes whose parent is `pid`. */
function childrenOf(pid: number): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((name) => {
      try {
        // The parent id is the second field after the parenthesised command name.
        return Number(readFileSync(`/proc/${name}/stat`, 'utf8').split(') ')[1]?.split(' ')[1]) === pid;
      } catch {
        return false; // ended meanwhile
      }
    })
    .map(Number);
}

describe('the compiled build with plain node', () => {
  it('resolves every workspace package to its dist/ JavaScript without a condition', () => {
    const specifiers = [
      '@conduit/contracts/server',
      '@conduit/contracts/relay/events',
      '@conduit/sdk/relay',
      '@conduit/prisma',
      '@conduit/server-dashboard/crypto/e2e-keys',
    ];
    const script = `for (const s of ${JSON.stringify(specifiers)}) console.log(import.meta.resolve(s))`;
    const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: path.join(REPO_ROOT, 'e2e'),
      env: plainEnv({}),
      encoding: 'utf8',
    });
    expect(result.status, result.stderr).toBe(0);
    const resolved = result.stdout.trim().split('\n');
    expect(resolved).toHaveLength(specifiers.length);
    for (const url of resolved) {
      expect(url).toMatch(/\/dist\/.+\.js$/);
      compiled(path.relative(REPO_ROOT, new URL(url).pathname));
    }
  });

  it('node server-relay/dist/main.js starts on an empty SQLite store and answers /healthz', async () => {
    const relay = await startCompiledRelay({ DATA_PATH: path.join(scratch, 'relay', 'relay.sqlite') });
    expect(commandLine(relay.child.pid ?? 0).slice(1)).toEqual([compiled('server-relay/dist/main.js')]);
    const response = await fetch(`${relay.url}/healthz`);
    expect(await response.json()).toEqual({ ok: true });
    // Its migrations came from prisma/migrations, found from prisma/dist.
    expect(existsSync(path.join(scratch, 'relay', 'relay.sqlite'))).toBe(true);
  });

  it('the relay bundle runs on PostgreSQL with its admin API and metrics on, and its storage command runs', async () => {
    // The relay's dist/main.js is a bundle (server-relay/scripts/bundle.mjs): what it leaves to
    // node_modules (pg, the PostgreSQL adapter) and what it splits off (the admin API, the storage
    // commands) must load from it.
    expect(readFileSync(compiled('server-relay/dist/main.js'), 'utf8')).toMatch(/^\/\/ The relay bundled by/);
    const database = await acquirePostgres();
    try {
      const adminToken = 'compiled-admin-token-0123456789abcdef';
      const metricsToken = 'compiled-metrics-token-0123456789abcdef';
      const relay = await startCompiledRelay({
        DATABASE_URL: database.url,
        DATA_PATH: path.join(scratch, 'relay-pg', 'unused.sqlite'),
        ADMIN_TOKEN: adminToken,
        METRICS_TOKEN: metricsToken,
      });
      const status = await fetch(`${relay.url}/admin/trpc/storageStatus`, {
        headers: { authorization: `Bearer ${adminToken}` },
      });
      expect(status.status, relay.output()).toBe(200);
      expect(await status.json()).toMatchObject({ result: { data: { installations: { total: 0 } } } });
      const metrics = await fetch(`${relay.url}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } });
      expect(metrics.status).toBe(200);
      expect(await metrics.text()).toContain('# TYPE');
      relay.child.kill('SIGTERM');
      await new Promise((resolve) => relay.child.once('exit', resolve));
      const storage = spawnSync(process.execPath, [compiled('server-relay/dist/main.js'), 'storage:status'], {
        cwd: path.join(REPO_ROOT, 'server-relay'),
        env: plainEnv({ DATABASE_URL: database.url }),
        encoding: 'utf8',
      });
      expect(storage.status, storage.stderr).toBe(0);
      expect(JSON.parse(storage.stdout)).toMatchObject({ installations: { total: 0 } });
    } finally {
      await database.release();
    }
  });

  it('node server-dashboard/dist/main.js starts and serves its capabilities with the version on disk', async () => {
    const port = await freePort();
    const hermesHome = path.join(scratch, 'hermes');
    const host = await startCompiled(
      'server-dashboard',
      { HERMES_HOME: hermesHome, CONDUIT_HOST_BIND: '127.0.0.1', CONDUIT_HOST_PORT: String(port) },
      async (url) => (await fetch(`${url}/api/plugins/conduit_push/capabilities`)).status === 200,
      port,
    );
    const body = (await (await fetch(`${host.url}/api/plugins/conduit_push/capabilities`)).json()) as {
      ok: boolean;
      version: string | null;
      loaded_version: string;
      restart_needed: boolean;
    };
    // package.json is read relative to the compiled module (dist/package-version.js → ../package.json).
    const { version } = JSON.parse(readFileSync(path.join(REPO_ROOT, 'server-dashboard/package.json'), 'utf8')) as {
      version: string;
    };
    expect(body).toMatchObject({ ok: true, version, loaded_version: version, restart_needed: false });
  });

  it('the conduit command runs the compiled CLI with plain node and finds the hook bridge', () => {
    const manifest = JSON.parse(readFileSync(path.join(REPO_ROOT, 'server-dashboard/package.json'), 'utf8')) as {
      bin: Record<string, string>;
    };
    // The bin is a committed plain-JavaScript file (npm links it at install time, before any build)
    // that runs dist/cli/main.js; the compiled entry carries node's shebang too.
    const bin = path.join(REPO_ROOT, 'server-dashboard', manifest.bin.conduit ?? '');
    expect(readFileSync(bin, 'utf8').split('\n')[0]).toBe('#!/usr/bin/env node');
    expect(readFileSync(bin, 'utf8')).toContain("'../dist/cli/main.js'");
    expect(readFileSync(compiled('server-dashboard/dist/cli/main.js'), 'utf8').split('\n')[0]).toBe(
      '#!/usr/bin/env node',
    );
    // Executed through its shebang, as `npx conduit` does.
    const help = spawnSync(bin, ['--help'], { env: plainEnv({}), encoding: 'utf8' });
    expect(help.status, help.stderr).toBe(0);
    expect(help.stderr).toContain('usage: conduit <command>');
    // `conduit hook` loads bin/conduit-hook.mjs relative to dist/bridge/; with no service running it
    // prints nothing and exits 0, as Hermes needs.
    const hook = spawnSync(bin, ['hook', '--state', path.join(scratch, 'no-service'), 'pre_llm_call'], {
      env: plainEnv({}),
      input: '{}',
      encoding: 'utf8',
    });
    expect(hook.status, hook.stderr).toBe(0);
    expect(hook.stdout).toBe('');
    expect(hook.stderr).toBe('');
  });

  it('the messenger connector (npm run messenger) loads its compiled module graph with plain node', () => {
    // No RELAY_AGENT_TOKEN: it stops at its configuration check (exit 78), after every module loaded.
    const result = spawnSync(process.execPath, [compiled('server-dashboard/dist/messenger/cli.js'), 'status'], {
      cwd: path.join(REPO_ROOT, 'server-dashboard'),
      env: plainEnv({ HERMES_HOME: path.join(scratch, 'messenger-home') }),
      encoding: 'utf8',
    });
    expect(result.stderr).toContain('RELAY_AGENT_TOKEN is required');
    expect(result.status).toBe(78);
  });

  it('node server-voice/dist/main.js starts, forks its compiled media sender with plain node, serves the demo page', async () => {
    const port = await freePort();
    const voice = await startCompiled(
      'server-voice',
      {
        HERMES_REALTIME_HOST: '127.0.0.1',
        HERMES_REALTIME_PORT: String(port),
        HERMES_REALTIME_API_KEY: 'compiled-key',
        HERMES_REALTIME_MEDIA_SENDER: 'process',
      },
      async (url) => (await fetch(`${url}/v1/realtime/discovery`)).status === 401,
      port,
    );
    const discovery = await fetch(`${voice.url}/v1/realtime/discovery`, {
      headers: { authorization: 'Bearer compiled-key' },
    });
    expect(discovery.status).toBe(200);
    const demo = await fetch(`${voice.url}/demo`);
    expect(demo.status).toBe(200);
    expect(await demo.text()).toContain('<html');
    // The media sender starts with the gateway: dist/media/sender-process.js, no loader.
    const senders = childrenOf(voice.child.pid ?? 0).map(commandLine);
    const sender = senders.find((argv) => argv.some((arg) => arg.includes('sender-process')));
    expect(sender, JSON.stringify(senders)).toBeDefined();
    expect(sender).toContain(compiled('server-voice/dist/media/sender-process.js'));
    expect(sender?.join(' ')).not.toMatch(/tsx|--import|--conditions|\.ts\b/);
  });
});
