import { spawn } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { e2eState, isPaired, relayUrlOf } from '../../src/credentials/credential-file.js';
import {
  CorruptCredentialsError,
  credentialLockPath,
  credentialPath,
  readCredentials,
  unchanged,
  updateCredentials,
} from '../../src/credentials/credential-store.js';
import { LockTimeoutError } from '../../src/credentials/file-lock.js';

let home: string;
beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), 'conduit-cred-'));
});
afterEach(() => rm(home, { recursive: true, force: true }));

const fixture = new URL('./fixtures/increment.ts', import.meta.url).pathname;

function runIncrement(times: number, holdMs = 0, onStdout?: (text: string) => void): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', fixture, home, String(times), String(holdMs)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    child.stdout.on('data', (chunk: Buffer) => onStdout?.(chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => resolve(code ?? -1));
  });
}

const pythonWriter = new URL('./fixtures/python_writer.py', import.meta.url).pathname;

function runPython(times: number, holdSeconds: number, onStdout?: (text: string) => void): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn('python3', [pythonWriter, home, String(times), String(holdSeconds)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    child.stdout.on('data', (chunk: Buffer) => onStdout?.(chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => resolve(code ?? -1));
  });
}

const paired = {
  credential: '11111111-2222-3333-4444-555555555555.gw-1.c2VjcmV0',
  installation_id: '11111111-2222-3333-4444-555555555555',
  gateway_id: 'gw-1',
  gateway_name: 'box Hermes',
  relay_url: 'https://relay.example/',
};

describe('conduit-push.json', () => {
  it('reads null when there is no file, and writes compact JSON plus newline with mode 0600', async () => {
    expect(await readCredentials(home)).toBeNull();
    await updateCredentials(home, () => ({ next: paired, result: undefined }));
    const text = await readFile(credentialPath(home), 'utf8');
    expect(text).toBe(`${JSON.stringify(paired)}\n`);
    expect((await stat(credentialPath(home))).mode & 0o777).toBe(0o600);
    const read = await readCredentials(home);
    expect(isPaired(read)).toBe(true);
    expect(read && relayUrlOf(read)).toBe('https://relay.example');
    // No temp file is left behind; only the reference plugin's flock file stays beside the credentials.
    expect((await readdir(home)).sort()).toEqual(['.conduit-push.json.lock', 'conduit-push.json']);
    // The reference plugin's flock file, when we create it, is private too.
    expect((await stat(join(home, '.conduit-push.json.lock'))).mode & 0o777).toBe(0o600);
  });

  it('creates a missing profile directory 0700', async () => {
    const nested = join(home, 'profiles', 'coder');
    await updateCredentials(nested, () => ({ next: paired, result: undefined }));
    expect((await stat(nested)).mode & 0o777).toBe(0o700);
  });

  it('keeps keys it does not know, so a newer writer loses nothing', async () => {
    await writeFile(credentialPath(home), JSON.stringify({ ...paired, future_field: { a: 1 } }));
    await updateCredentials(home, (current) => ({ next: { ...current, redact_content: true }, result: undefined }));
    expect(JSON.parse(await readFile(credentialPath(home), 'utf8'))).toMatchObject({
      future_field: { a: 1 },
      redact_content: true,
    });
  });

  it('reports a corrupt file without overwriting it, and without echoing its content', async () => {
    await writeFile(credentialPath(home), '{"credential": "abc.def.SECRET", ');
    await expect(readCredentials(home)).rejects.toBeInstanceOf(CorruptCredentialsError);
    await expect(updateCredentials(home, () => ({ next: paired, result: undefined }))).rejects.toThrow(/not JSON/);
    expect(await readFile(credentialPath(home), 'utf8')).toBe('{"credential": "abc.def.SECRET", ');

    await writeFile(credentialPath(home), JSON.stringify({ credential: 42, redact_key: 'SECRET' }));
    const error = await readCredentials(home).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CorruptCredentialsError);
    expect(String(error)).toMatch(/credential has the wrong type/);
    expect(String(error)).not.toMatch(/SECRET|42/);

    await writeFile(credentialPath(home), '[]');
    await expect(readCredentials(home)).rejects.toBeInstanceOf(CorruptCredentialsError);
  });

  it('a file without a credential is not paired', async () => {
    await writeFile(credentialPath(home), JSON.stringify({ redact_content: true }));
    expect(isPaired(await readCredentials(home))).toBe(false);
  });

  it('deletes the file when a mutation answers null, and leaves it alone on unchanged', async () => {
    await updateCredentials(home, () => ({ next: paired, result: undefined }));
    const before = (await stat(credentialPath(home))).mtimeMs;
    await updateCredentials(home, () => ({ next: unchanged, result: undefined }));
    expect((await stat(credentialPath(home))).mtimeMs).toBe(before);
    await updateCredentials(home, () => ({ next: null, result: undefined }));
    expect(await readCredentials(home)).toBeNull();
  });

  it('interprets the E2E record: off, on, malformed, or bound to another pairing', () => {
    const record = { kid: '0'.repeat(32), secret: 'A'.repeat(43), created_at: '2026-01-01T00:00:00Z' };
    expect(e2eState(paired).state).toBe('off');
    expect(e2eState({ ...paired, e2e: record }).state).toBe('on');
    expect(e2eState({ ...paired, e2e: {} }).state).toBe('broken');
    expect(e2eState({ ...paired, e2e: { ...record, kid: 'xyz' } }).state).toBe('broken');
    expect(
      e2eState({ ...paired, e2e: { ...record, gateway_id: 'gw-1', installation_id: paired.installation_id } }).state,
    ).toBe('on');
    expect(e2eState({ ...paired, e2e: { ...record, gateway_id: 'gw-2' } }).state).toBe('broken');
  });
});

describe('the credential lock across processes', () => {
  it('a Python writer using the reference plugin flock and this process lose no update', async () => {
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const python = runPython(15, 0, (text) => text.includes('started') && started());
    await running;
    // Spread our writes over the Python writer's run so the two really interleave.
    for (let i = 0; i < 15; i++) {
      await updateCredentials(home, (current) => {
        const value = current?.counter;
        return { next: { ...current, counter: (typeof value === 'number' ? value : 0) + 1 }, result: undefined };
      });
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect(await python).toBe(0);
    expect((await readCredentials(home))?.counter).toBe(30);
  });

  it('waits for the Python writer’s flock and times out while it holds it', async () => {
    let holding!: () => void;
    const held = new Promise<void>((resolve) => (holding = resolve));
    const python = runPython(1, 1.5, (text) => text.includes('held') && holding());
    await held;
    await expect(
      updateCredentials(home, () => ({ next: paired, result: undefined }), { timeoutMs: 300 }),
    ).rejects.toBeInstanceOf(LockTimeoutError);
    await updateCredentials(home, (current) => ({ next: { ...current, ...paired }, result: undefined }));
    expect(await python).toBe(0);
    expect(await readCredentials(home)).toMatchObject({ counter: 1, gateway_id: 'gw-1' });
  });

  it('three processes and this one incrementing concurrently lose no update', async () => {
    const children = [runIncrement(6), runIncrement(6), runIncrement(6)];
    for (let i = 0; i < 6; i++) {
      await updateCredentials(home, (current) => {
        const value = current?.counter;
        return { next: { ...current, counter: (typeof value === 'number' ? value : 0) + 1 }, result: undefined };
      });
    }
    expect(await Promise.all(children)).toEqual([0, 0, 0]);
    expect((await readCredentials(home))?.counter).toBe(24);
    expect((await readdir(home)).sort()).toEqual(['.conduit-push.json.lock', 'conduit-push.json']);
  });

  it('a live holder makes a writer wait, and time out when it holds too long', async () => {
    let holding!: () => void;
    const held = new Promise<void>((resolve) => (holding = resolve));
    const child = runIncrement(1, 1500, (text) => text.includes('holding') && holding());
    await held;
    await expect(
      updateCredentials(home, () => ({ next: paired, result: undefined }), { timeoutMs: 200 }),
    ).rejects.toBeInstanceOf(LockTimeoutError);
    // Waiting long enough succeeds once the child releases.
    await updateCredentials(home, (current) => ({ next: { ...current, ...paired }, result: undefined }), {
      timeoutMs: 10_000,
    });
    expect(await child).toBe(0);
    expect(await readCredentials(home)).toMatchObject({ counter: 1, gateway_id: 'gw-1' });
  });

  it('breaks a lock left by a dead process', async () => {
    const dead = spawn(process.execPath, ['-e', '0']);
    const pid = await new Promise<number>((resolve) => dead.on('exit', () => resolve(dead.pid ?? 0)));
    const { hostname } = await import('node:os');
    await writeFile(
      credentialLockPath(home),
      JSON.stringify({ pid, host: hostname(), token: 'deadbeef', acquired_at_ms: Date.now() }),
    );
    await updateCredentials(home, () => ({ next: paired, result: undefined }), { timeoutMs: 500 });
    expect(await readCredentials(home)).toMatchObject(paired);
    expect((await readdir(home)).sort()).toEqual(['.conduit-push.json.lock', 'conduit-push.json']);
  });

  it('breaks an unreadable lock file once it is older than the stale bound, not before', async () => {
    await writeFile(credentialLockPath(home), '');
    await expect(
      updateCredentials(home, () => ({ next: paired, result: undefined }), { timeoutMs: 150, staleMs: 60_000 }),
    ).rejects.toBeInstanceOf(LockTimeoutError);
    const old = new Date(Date.now() - 120_000);
    await utimes(credentialLockPath(home), old, old);
    await updateCredentials(home, () => ({ next: paired, result: undefined }), { timeoutMs: 500, staleMs: 60_000 });
    expect(await readCredentials(home)).toMatchObject(paired);
  });
});
