import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createDashboardClient } from '@conduit/sdk/dashboard';
import { freePort } from '@conduit/contracts/testing';
import { buildHost, type Host } from '../src/app.js';
import { RUNTIME_FILE } from '../src/bridge/runtime-file.js';
import type { HostFeature } from '../src/kernel/feature.js';
import { NOT_OUR_COMMAND, type SelfRestarter } from '../src/routes/self-restart.js';
import { TEST_TOKEN, tempHermesHome, testConfig } from './support/config.js';

const WORKSPACE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const PREFIX = '/api/plugins/conduit_push';
const auth = { authorization: `Bearer ${TEST_TOKEN}` };
const home = tempHermesHome();
afterAll(() => home.cleanup());

/** A feature whose route holds a call open until the test ends it, as a relayed Grok call does. */
function busyFeature(): { feature: HostFeature; end: () => void } {
  let end = (): void => {};
  return {
    feature: {
      name: 'busy',
      capabilities: [],
      register(scope, kernel) {
        scope.post(`${PREFIX}/test-busy`, async () => {
          end = kernel.activity.begin('grok-live');
          return { ok: true };
        });
      },
    },
    end: () => end(),
  };
}

function recordingRestarter(refusal: string | null = null): SelfRestarter & { restarts: number } {
  const restarter = {
    restarts: 0,
    refusal: () => refusal,
    restart: () => {
      restarter.restarts += 1;
    },
  };
  return restarter;
}

describe('POST /self/restart in the service', () => {
  let host: Host | null = null;
  afterEach(async () => {
    await host?.app.close();
    host = null;
  });

  it('answers the boot id and versions, restarts once, and refuses while a relayed call runs', async () => {
    const busy = busyFeature();
    const restarter = recordingRestarter();
    host = await buildHost(testConfig(home.root, { readDiskVersion: () => '0.2.0' }), {
      features: [busy.feature],
      restarter,
    });
    const capabilities = await host.app.inject({ method: 'GET', url: `${PREFIX}/capabilities` });
    expect(capabilities.headers['cache-control']).toBe('no-store');
    expect(capabilities.json<{ capabilities: string[] }>().capabilities).toEqual(
      expect.arrayContaining(['pairing', 'self-restart']),
    );

    await host.app.inject({ method: 'POST', url: `${PREFIX}/test-busy`, headers: auth });
    const refused = await host.app.inject({ method: 'POST', url: `${PREFIX}/self/restart`, headers: auth });
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toEqual({
      detail: 'A call this host relays is still running (grok-live); restart when it ends',
    });
    expect(restarter.restarts).toBe(0);

    busy.end();
    const answered = await host.app.inject({ method: 'POST', url: `${PREFIX}/self/restart`, headers: auth });
    expect(answered.statusCode).toBe(200);
    expect(answered.headers['cache-control']).toBe('no-store');
    expect(answered.json()).toEqual({
      ok: true,
      restarting: true,
      boot_id: host.bootId,
      loaded_version: '0.1.0',
      version: '0.2.0',
    });
    expect(restarter.restarts).toBe(1);
    const again = await host.app.inject({ method: 'POST', url: `${PREFIX}/self/restart`, headers: auth });
    expect([again.statusCode, again.json()]).toEqual([409, { detail: 'A restart is already under way' }]);
    expect(restarter.restarts).toBe(1);
  });

  it('needs the caller check like every plugin route', async () => {
    const restarter = recordingRestarter();
    host = await buildHost(testConfig(home.root), { features: [], restarter });
    const response = await host.app.inject({ method: 'POST', url: `${PREFIX}/self/restart` });
    expect([response.statusCode, response.json()]).toEqual([401, { error: 'unauthorized' }]);
    expect(restarter.restarts).toBe(0);
  });

  it('answers 501 and does not list self-restart where the process cannot re-execute itself', async () => {
    for (const [restarter, detail] of [
      [null, NOT_OUR_COMMAND],
      [recordingRestarter('no execve here'), 'no execve here'],
    ] as const) {
      const built = await buildHost(testConfig(home.root), { features: [], restarter });
      try {
        const capabilities = await built.app.inject({ method: 'GET', url: `${PREFIX}/capabilities` });
        expect(capabilities.json<{ capabilities: string[] }>().capabilities).not.toContain('self-restart');
        expect(capabilities.json<{ capabilities: string[] }>().capabilities).toContain('pairing');
        const response = await built.app.inject({ method: 'POST', url: `${PREFIX}/self/restart`, headers: auth });
        expect([response.statusCode, response.json()]).toEqual([501, { detail }]);
      } finally {
        await built.app.close();
      }
    }
  });
});

/** Node.js 22.15+ and 23.11+ have process.execve; CI runs this file on Node 20 and on Node 24. */
const canReExecute = typeof (process as unknown as { execve?: unknown }).execve === 'function';

describe('the service started by its own command', () => {
  let child: ChildProcess | null = null;
  let root = '';
  afterEach(() => {
    child?.kill('SIGKILL');
    child = null;
    rmSync(root, { recursive: true, force: true });
  });

  /** Starts `src/main.ts` as this Node.js runs it (so the child's pid is the service's own). */
  async function startService(
    port: number,
  ): Promise<{ child: ChildProcess; listened: (count: number) => Promise<void> }> {
    root = mkdtempSync(path.join(os.tmpdir(), 'conduit-restart-'));
    mkdirSync(path.join(root, 'profiles'), { recursive: true });
    const started = spawn(process.execPath, ['--conditions=development', '--import', 'tsx', 'src/main.ts'], {
      cwd: WORKSPACE,
      env: {
        PATH: process.env['PATH'] ?? '',
        HOME: process.env['HOME'] ?? '/tmp',
        HERMES_HOME: root,
        CONDUIT_STATE_DIR: path.join(root, 'conduit-host'),
        CONDUIT_HOST_TOKEN: TEST_TOKEN,
        HERMES_DASHBOARD_URL: '',
        CONDUIT_HOST_BIND: '127.0.0.1',
        CONDUIT_HOST_PORT: String(port),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = started;
    let output = '';
    const waiters: { count: number; resolve: () => void }[] = [];
    const listens = (): number => output.split('"host service listening"').length - 1;
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      for (const waiter of waiters.filter((w) => listens() >= w.count)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    };
    started.stdout?.on('data', onData);
    started.stderr?.on('data', onData);
    const listened = (count: number): Promise<void> =>
      new Promise((resolve, reject) => {
        if (listens() >= count) return resolve();
        waiters.push({ count, resolve });
        started.once('exit', (code) => reject(new Error(`the service exited (${code}): ${output}`)));
      });
    await listened(1);
    return { child: started, listened };
  }

  it(
    canReExecute
      ? 'restarts in place when asked: the same pid, a new boot id, listening again on its port'
      : 'answers 501 on a Node.js without process.execve and does not list self-restart',
    async () => {
      const port = await freePort();
      const service = await startService(port);
      const client = createDashboardClient({ baseUrl: `http://127.0.0.1:${port}`, headers: auth });
      const before = await client.GET('/api/plugins/conduit_push/capabilities');
      const restart = await client.POST('/api/plugins/conduit_push/self/restart');
      if (!canReExecute) {
        expect(before.data?.capabilities).not.toContain('self-restart');
        expect(restart.response.status).toBe(501);
        expect(restart.error).toEqual({
          detail:
            "This Node.js can't restart a process in place (Node.js 22.15 or later can); restart the service yourself",
        });
        return;
      }
      expect(before.data?.capabilities).toContain('self-restart');
      expect(restart.data).toMatchObject({ ok: true, restarting: true, boot_id: before.data?.boot_id });
      await service.listened(2);
      const after = await client.GET('/api/plugins/conduit_push/capabilities');
      expect(after.data?.boot_id).toMatch(/^[0-9a-f-]{36}$/);
      expect(after.data?.boot_id).not.toBe(before.data?.boot_id);
      expect(service.child.exitCode).toBeNull();
      expect(service.child.signalCode).toBeNull();
      // The pid the runtime file names is the child's own: the process was replaced, not respawned.
      const runtime = JSON.parse(readFileSync(path.join(root, 'conduit-host', RUNTIME_FILE), 'utf8')) as {
        pid: number;
      };
      expect(runtime.pid).toBe(service.child.pid);
    },
    60_000,
  );
});
