/** The `conduit push` command as a user runs it: a real process through the dispatcher (src/cli/main.ts). */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { credentialPath } from '../../src/credentials/credential-store.js';

const WORKSPACE = resolve(new URL('.', import.meta.url).pathname, '../..');
let home: string;

beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), 'conduit-cli-process-'));
});
afterAll(() => rm(home, { recursive: true, force: true }));

function conduit(...argv: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(WORKSPACE, 'src/cli/main.ts'), ...argv], {
      cwd: WORKSPACE,
      env: { ...process.env, HERMES_HOME: join(home, 'unused') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', fail);
    child.on('exit', (code) => done({ code, stdout, stderr }));
  });
}

describe.concurrent('conduit push (process)', () => {
  it('status of an unpaired profile exits 1 with the reference message', async () => {
    await mkdir(join(home, 'never-paired'));
    const result = await conduit('push', 'status', '--home', join(home, 'never-paired'));
    expect(result).toMatchObject({ code: 1, stdout: 'This Hermes profile is not paired with Conduit.\n' });
  });

  it('--home naming a folder that does not exist says so and exits 1', async () => {
    const missing = join(home, 'no-such-hermes');
    const result = await conduit('push', 'status', '--home', missing);
    expect(result.code).toBe(1);
    expect(result.stdout + result.stderr).toContain(`There is no Hermes home at ${missing} (--home)`);
    expect(result.stdout).not.toContain('not paired');
  });

  it('conduit with no command prints the usage and exits 2; --help exits 0', async () => {
    const bare = await conduit();
    expect(bare.code).toBe(2);
    expect(bare.stderr).toMatch(/^usage: conduit <command> \[args\]/);
    const help = await conduit('--help');
    expect(help.code).toBe(0);
    expect(help.stderr).toMatch(/^usage: conduit <command>/);
  });

  it('status of a paired profile exits 0 and never prints the credential', async () => {
    const credential = '6f0c5a9e-1b7d.9b2f6c1e-3d4a.TOP-SECRET-credential-value';
    await writeFile(
      credentialPath(home),
      JSON.stringify({
        credential,
        gateway_name: 'box Hermes',
        installation_id: 'i',
        gateway_id: 'g',
        relay_url: 'https://r.example',
      }),
    );
    const result = await conduit('push', 'status', '--home', home);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Paired: box Hermes\nRelay: https://r.example\nRedact content: off\n');
    expect(result.stdout + result.stderr).not.toContain('TOP-SECRET');
  });

  it('no subcommand prints usage and exits 2', async () => {
    const result = await conduit('push');
    expect(result.code).toBe(2);
    expect(result.stdout).toMatch(/^Usage: conduit push \{pair\|status\|test\|redact\|unpair\}/);
  });
});
