/**
 * No Docker engine runs here, so this test performs the image's build steps in a clean folder:
 * every COPY of server-relay/Dockerfile is applied to an empty directory, the `npm ci` step is run
 * as `npm ci --dry-run --offline` (the lockfile resolves for exactly those workspaces, from the
 * cache, with no network), the build step (`npm run build -w …`) compiles the copied sources, and the relay
 * then boots from that compiled output alone (the image's CMD, plain node) and answers /healthz.
 * The copied tree reaches packages through links to this checkout's node_modules, which `npm ci`
 * installed from the same lockfile; what is proven is that the image's file set is complete (a
 * missing COPY fails the build or the boot) and that its install step resolves.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '@conduit/contracts/testing';
import { RELAY_DIR } from './support/relay-process.js';

const REPO = path.resolve(RELAY_DIR, '..');
const dockerfile = readFileSync(path.join(RELAY_DIR, 'Dockerfile'), 'utf8');
const instructions = dockerfile
  .split('\n')
  .filter((line) => line.trim() !== '' && !line.trim().startsWith('#'))
  .map((line) => {
    const [op = '', ...rest] = line.trim().split(/\s+/);
    return { op, args: rest };
  });

const image = mkdtempSync(path.join(os.tmpdir(), 'relay-image-'));
afterAll(() => rmSync(image, { recursive: true, force: true }));

/** node_modules as npm ci lays it out: the root's packages, with our workspaces linked to the copies. */
function linkInstalledPackages(app: string): void {
  mkdirSync(path.join(app, 'node_modules', '@conduit'), { recursive: true });
  for (const entry of readdirSync(path.join(REPO, 'node_modules'))) {
    if (entry === '@conduit') continue;
    symlinkSync(path.join(REPO, 'node_modules', entry), path.join(app, 'node_modules', entry));
  }
  for (const workspace of ['contracts', 'generated', 'prisma', 'server-relay']) {
    const name = JSON.parse(readFileSync(path.join(app, workspace, 'package.json'), 'utf8')) as { name: string };
    symlinkSync(path.join(app, workspace), path.join(app, 'node_modules', name.name));
    if (existsSync(path.join(REPO, workspace, 'node_modules'))) {
      symlinkSync(path.join(REPO, workspace, 'node_modules'), path.join(app, workspace, 'node_modules'));
    }
  }
}

describe('server-relay/Dockerfile', () => {
  it('every COPY source exists, the install step resolves offline from the lockfile, the build step compiles', () => {
    const app = path.join(image, 'app');
    mkdirSync(app, { recursive: true });
    let ran = false;
    let built = false;
    for (const { op, args } of instructions) {
      if (op === 'COPY') {
        const sources = args.slice(0, -1);
        const destination = args.at(-1) ?? '';
        for (const source of sources) {
          const from = path.join(REPO, source);
          expect(existsSync(from), `COPY ${source}`).toBe(true);
          const to = destination.endsWith('/')
            ? path.join(app, destination, path.basename(source))
            : sources.length === 1
              ? path.join(app, destination)
              : path.join(app, destination, path.basename(source));
          mkdirSync(path.dirname(to), { recursive: true });
          cpSync(from, to, { recursive: true });
        }
      }
      if (op === 'RUN' && args[0] === 'npm' && args[1] === 'ci') {
        const result = spawnSync('npm', [...args.slice(1), '--dry-run', '--offline'], { cwd: app, encoding: 'utf8' });
        expect(result.status, result.stderr).toBe(0);
        linkInstalledPackages(app);
        ran = true;
      }
      if (op === 'RUN' && args[0] === 'npm' && args[1] === 'run' && args[2] === 'build') {
        const result = spawnSync('sh', ['-c', args.join(' ')], { cwd: app, encoding: 'utf8' });
        expect(result.status, result.stdout + result.stderr).toBe(0);
        built = true;
      }
    }
    expect(ran).toBe(true);
    expect(built).toBe(true);
    expect(existsSync(path.join(app, 'server-relay/dist/main.js'))).toBe(true);
  }, 300_000);

  it('the copied tree boots the relay (CMD, WORKDIR and ENV of the image) and answers /healthz', async () => {
    const workdir = instructions.filter((i) => i.op === 'WORKDIR').at(-1)?.args[0] ?? '/app';
    const cmd = JSON.parse(instructions.find((i) => i.op === 'CMD')?.args.join(' ') ?? '[]') as string[];
    // The compiled entry with plain node: no loader, and nothing in the environment adds one.
    expect(cmd).toEqual(['node', 'dist/main.js']);
    const port = await freePort();
    const { spawn } = await import('node:child_process');
    const child = spawn(process.execPath, cmd.slice(1), {
      cwd: path.join(image, workdir),
      env: {
        PATH: process.env.PATH ?? '',
        HOST: '127.0.0.1',
        PORT: String(port),
        DATA_PATH: path.join(image, 'data', 'relay.sqlite'),
        PUBLIC_URL: 'https://relay.example.test',
        APNS_TOPIC: 'com.example.conduit',
        APNS_MODE: 'accept',
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    try {
      let status = 0;
      for (let attempt = 0; attempt < 300 && status !== 200; attempt += 1) {
        if (child.exitCode !== null) throw new Error(`relay exited: ${stderr}`);
        status = await fetch(`http://127.0.0.1:${port}/healthz`).then(
          (response) => response.status,
          () => 0,
        );
        if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(status, stderr).toBe(200);
    } finally {
      child.kill('SIGTERM');
    }
  });
});
