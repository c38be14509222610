import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '@conduit/contracts/testing';

/**
 * No Docker engine runs here, so this test follows the Dockerfile step by step in a clean folder:
 * every COPY is performed from the repository, the build step (`RUN npm run build -w …`) compiles the copied
 * sources, ENV is collected, and the CMD (plain node on the compiled entry) is started with the
 * mounted home and must serve. The one substitution, plainly: `RUN npm ci -w @conduit/server-dashboard`
 * is checked for its form and then stood in for by links to the packages CI's own `npm ci` installed
 * from the same lockfile (a real install would download them all again); the workspace packages
 * themselves (@conduit/*) are linked to the copied folders, so the service runs from the copied
 * sources only and a missing COPY fails the test.
 */
const REPO = path.resolve(import.meta.dirname, '../..');
const DOCKERFILE = path.join(REPO, 'server-dashboard/Dockerfile');
const clean = mkdtempSync(path.join(os.tmpdir(), 'conduit-docker-'));
const mount = mkdtempSync(path.join(os.tmpdir(), 'conduit-hermes-mount-'));
afterAll(() => {
  if (!process.env.KEEP_DOCKER_TEST) rmSync(clean, { recursive: true, force: true });
  rmSync(mount, { recursive: true, force: true });
});

interface Step {
  op: string;
  args: string;
}

function steps(text: string): Step[] {
  return text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => {
      const [op = '', ...rest] = line.split(/\s+/);
      return { op: op.toUpperCase(), args: rest.join(' ') };
    });
}

function installStandIn(app: string): void {
  const modules = path.join(app, 'node_modules');
  mkdirSync(path.join(modules, '@conduit'), { recursive: true });
  for (const name of readdirSync(path.join(REPO, 'node_modules'))) {
    if (name === '@conduit' || name === '.bin' || name.startsWith('.')) continue;
    symlinkSync(path.join(REPO, 'node_modules', name), path.join(modules, name));
  }
  mkdirSync(path.join(modules, '.bin'));
  // The build step's compiler.
  symlinkSync(path.join(REPO, 'node_modules/typescript/bin/tsc'), path.join(modules, '.bin/tsc'));
  // npm nests a workspace's own versions under <workspace>/node_modules when they differ from the root's.
  for (const workspace of ['contracts', 'generated', 'server-dashboard']) {
    const nested = path.join(REPO, workspace, 'node_modules');
    if (!existsSync(nested)) continue;
    for (const name of readdirSync(nested)) {
      if (name.startsWith('.')) continue;
      mkdirSync(path.join(app, workspace, 'node_modules'), { recursive: true });
      symlinkSync(path.join(nested, name), path.join(app, workspace, 'node_modules', name));
    }
  }
  for (const [pkg, dir] of [
    ['contracts', 'contracts'],
    ['generated', 'generated'],
    ['server-dashboard', 'server-dashboard'],
  ]) {
    symlinkSync(path.join(app, dir!), path.join(modules, '@conduit', pkg!));
  }
}

describe('server-dashboard/Dockerfile', () => {
  it('its steps, run in a clean folder, produce a service that starts on the mounted Hermes home', async () => {
    let workdir = '/';
    const env: Record<string, string> = {};
    let cmd: string[] = [];
    let installed = false;
    let built = false;
    for (const step of steps(readFileSync(DOCKERFILE, 'utf8'))) {
      const app = path.join(clean, workdir);
      if (step.op === 'FROM') expect(step.args).toMatch(/^node:20\b/);
      else if (step.op === 'WORKDIR') workdir = step.args;
      else if (step.op === 'COPY') {
        const parts = step.args.split(/\s+/);
        const dest = parts.pop()!;
        for (const source of parts) {
          const from = path.join(REPO, source);
          expect(existsSync(from), `COPY source ${source}`).toBe(true);
          const to = dest.endsWith('/') ? path.join(app, dest, path.basename(source)) : path.join(app, dest);
          cpSync(from, dest === './' ? path.join(app, path.basename(source)) : to, { recursive: true });
        }
      } else if (step.op === 'RUN' && step.args.startsWith('npm run build ')) {
        expect(installed).toBe(true);
        const result = spawnSync('sh', ['-c', step.args], { cwd: app, encoding: 'utf8' });
        expect(result.status, result.stdout + result.stderr).toBe(0);
        built = true;
      } else if (step.op === 'RUN') {
        expect(step.args).toMatch(/^npm ci\b.*-w @conduit\/server-dashboard/);
        expect(existsSync(path.join(app, 'package-lock.json'))).toBe(true);
        installStandIn(app);
        installed = true;
      } else if (step.op === 'ENV') {
        const [name, value] = step.args.split('=');
        env[name!] = value!;
      } else if (step.op === 'CMD') cmd = JSON.parse(step.args) as string[];
      else expect(['VOLUME', 'EXPOSE', 'USER']).toContain(step.op);
    }
    expect(installed).toBe(true);
    expect(built).toBe(true);
    expect(cmd).toEqual(['node', 'server-dashboard/dist/main.js']);
    expect(env.HERMES_HOME).toBe('/hermes');
    const port = await freePort();
    const app = path.join(clean, workdir);
    const child = spawn(process.execPath, cmd.slice(1), {
      cwd: app,
      // The mount point /hermes is this test's temp folder; loopback instead of 0.0.0.0 on a shared machine.
      env: {
        ...process.env,
        ...env,
        // Plain node, as in the image: no source condition from the test runner's NODE_OPTIONS.
        NODE_OPTIONS: '',
        // Nothing from the outer environment may move the state off the mount or change the fronting mode.
        CONDUIT_STATE_DIR: '',
        CONDUIT_HOST_TOKEN: '',
        HERMES_DASHBOARD_URL: '',
        HERMES_HOME: mount,
        CONDUIT_HOST_BIND: '127.0.0.1',
        CONDUIT_HOST_PORT: String(port),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    try {
      // The service answers as soon as it listens and writes runtime.json just after (it needs the bound
      // port), then logs that it is listening: wait for both before looking at the mount.
      let status = 0;
      let ready = false;
      for (let i = 0; i < 300 && !(status === 200 && ready); i++) {
        if (child.exitCode !== null) throw new Error(`the service exited: ${output}`);
        status = await fetch(`http://127.0.0.1:${port}/api/plugins/conduit_push/capabilities`)
          .then((r) => r.status)
          .catch(() => 0);
        ready = output.includes('host service listening');
        if (!(status === 200 && ready)) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(status, output).toBe(200);
      expect(ready, output).toBe(true);
      // Its state lives on the mount: the hook runtime file and the standalone token.
      expect(existsSync(path.join(mount, 'conduit-host', 'runtime.json'))).toBe(true);
      expect(existsSync(path.join(mount, 'conduit-host', 'host-token'))).toBe(true);
    } finally {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('close', resolve));
    }
  }, 300_000);
});
