import { execFileSync, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '@conduit/contracts/testing';

const PACKAGE_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const REPO_ROOT = path.resolve(PACKAGE_ROOT, '..');
const folder = mkdtempSync(path.join(os.tmpdir(), 'voice-docker-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

interface Step {
  instruction: string;
  args: string;
}

function steps(): Step[] {
  return readFileSync(path.join(PACKAGE_ROOT, 'Dockerfile'), 'utf8')
    .split('\n')
    .filter((line) => line.trim() && !line.trim().startsWith('#'))
    .map((line) => {
      const [instruction = '', ...rest] = line.trim().split(/\s+/);
      return { instruction, args: rest.join(' ') };
    });
}

/**
 * Stands in for the installed dependencies with the repository's own (a real install would download
 * them all again), except our workspaces, which are linked to the copies: the gateway runs from what
 * the image's steps copied and built, and a missing COPY fails the test.
 */
function installStandIn(app: string): void {
  const modules = path.join(app, 'node_modules');
  mkdirSync(path.join(modules, '@conduit'), { recursive: true });
  for (const name of readdirSync(path.join(REPO_ROOT, 'node_modules'))) {
    if (name !== '@conduit') symlinkSync(path.join(REPO_ROOT, 'node_modules', name), path.join(modules, name));
  }
  for (const workspace of ['contracts', 'generated', 'server-voice']) {
    symlinkSync(path.join(app, workspace), path.join(modules, '@conduit', workspace));
    const nested = path.join(REPO_ROOT, workspace, 'node_modules');
    if (existsSync(nested)) symlinkSync(nested, path.join(app, workspace, 'node_modules'));
  }
}

describe('server-voice/Dockerfile', () => {
  it('builds from Node 20 slim and its steps work in a clean folder', async () => {
    const all = steps();
    expect(all[0]).toEqual({ instruction: 'FROM', args: 'node:20-slim' });
    const app = path.join(folder, 'app');
    mkdirSync(app);
    const env: Record<string, string> = {};
    let cmd: string[] = [];
    let built = false;
    for (const step of all.slice(1)) {
      if (step.instruction === 'COPY') {
        // COPY src... dest (relative to the build context, the repository root)
        const parts = step.args.split(' ');
        const destination = path.join(app, parts.pop() ?? '');
        for (const source of parts) {
          const from = path.join(REPO_ROOT, source);
          expect(existsSync(from), `COPY source ${source}`).toBe(true);
          const target =
            destination.endsWith('/') || parts.length > 1 ? path.join(destination, path.basename(source)) : destination;
          cpSync(from, target.endsWith(path.sep) ? path.join(target, path.basename(source)) : target, {
            recursive: true,
            // What .dockerignore leaves out of the build context (a checkout's own build among it).
            filter: (file) =>
              !file.includes(`${path.sep}node_modules`) &&
              !file.includes(`${path.sep}.turbo`) &&
              !file.split(path.sep).includes('dist'),
          });
        }
      } else if (step.instruction === 'RUN' && step.args.startsWith('npm run build ')) {
        // The build step compiles the copied sources with the installed compiler.
        execFileSync('sh', ['-c', step.args], { cwd: app, stdio: 'pipe' });
        built = true;
      } else if (step.instruction === 'RUN') {
        // The install resolves from the lockfile alone (dry run: no download, no Docker engine here).
        const command = step.args.split(' ');
        expect(command.slice(0, 2)).toEqual(['npm', 'ci']);
        execFileSync('npm', [...command.slice(1), '--dry-run', '--offline'], { cwd: app, stdio: 'pipe' });
        installStandIn(app);
      } else if (step.instruction === 'ENV') {
        for (const pair of step.args.split(' ')) {
          const [name = '', value = ''] = pair.split('=');
          env[name] = value;
        }
      } else if (step.instruction === 'CMD') {
        cmd = JSON.parse(step.args) as string[];
      } else {
        expect(['WORKDIR', 'USER', 'EXPOSE']).toContain(step.instruction);
      }
    }
    expect(built).toBe(true);
    // Plain node on the compiled entry: no loader, and the environment below adds none.
    expect(cmd).toEqual(['node', 'server-voice/dist/main.js']);
    const port = await freePort();
    const child = spawn(process.execPath, cmd.slice(1), {
      cwd: app,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: os.tmpdir(),
        ...env,
        HERMES_REALTIME_HOST: '127.0.0.1',
        HERMES_REALTIME_PORT: String(port),
        HERMES_REALTIME_API_KEY: 'docker-key',
        HERMES_REALTIME_VAD_BACKEND: 'rms',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    try {
      const deadline = Date.now() + 60_000;
      let status = 0;
      while (Date.now() < deadline && child.exitCode === null) {
        try {
          status = (
            await fetch(`http://127.0.0.1:${port}/v1/realtime/discovery`, {
              headers: { authorization: 'Bearer docker-key' },
            })
          ).status;
          if (status === 200) break;
        } catch {
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
      }
      expect(status, output).toBe(200);
      expect(env).toMatchObject({ HERMES_REALTIME_HOST: '0.0.0.0', HERMES_REALTIME_PORT: '9130' });
    } finally {
      child.kill('SIGTERM');
    }
  }, 300_000);
});
