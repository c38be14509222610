/**
 * The host control API (tRPC at /_conduit/control): a real host on an ephemeral port driven by a real
 * @trpc/client with the token from `<state>/control-token`. Refused without or with a wrong token
 * (never the standalone bearer), and no output carries the credential.
 */
import { spawn } from 'node:child_process';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createTRPCClient, httpLink, TRPCClientError } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostControlProcedures } from '@conduit/contracts/dashboard/control';
import type { Host } from '../../src/app.js';
import { hostControlRouter, type HostControlRouter } from '../../src/control/control-router.js';
import { CONTROL_TOKEN_FILE } from '../../src/control/control-token.js';
import { credentialPath } from '../../src/credentials/credential-store.js';
import { tempHermesHome, testConfig, TEST_TOKEN } from '../support/config.js';
import { startHost } from '../support/host.js';

const WORKSPACE = path.resolve(new URL('.', import.meta.url).pathname, '../..');

/** `conduit …` as a user runs it: a real process through the dispatcher. */
function conduit(env: Record<string, string>, ...argv: string[]) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((done, fail) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(WORKSPACE, 'src/cli/main.ts'), ...argv], {
      cwd: WORKSPACE,
      env: { ...process.env, ...env },
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

const CREDENTIAL = '6f0c5a9e-1b7d.9b2f6c1e-3d4a.TOP-SECRET-credential-value';

function control(url: string, token: string | null) {
  return createTRPCClient<HostControlRouter>({
    links: [
      httpLink({
        url: `${url}/_conduit/control`,
        headers: () => (token === null ? {} : { authorization: `Bearer ${token}` }),
      }),
    ],
  });
}

async function refusalStatus(call: Promise<unknown>): Promise<number | undefined> {
  const error: unknown = await call.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(TRPCClientError);
  const meta = (error as TRPCClientError<HostControlRouter>).meta as { response?: Response } | undefined;
  return meta?.response?.status;
}

it('every procedure is built from its contract: the same input and output schemas', () => {
  const router = hostControlRouter({} as Parameters<typeof hostControlRouter>[0]);
  const procedures = router._def.procedures as Record<
    string,
    { _def: { inputs: unknown[]; output?: unknown; type: string } }
  >;
  expect(Object.keys(procedures).sort()).toEqual(Object.keys(hostControlProcedures).sort());
  for (const [name, contract] of Object.entries(hostControlProcedures)) {
    expect(procedures[name]?._def.inputs).toEqual([contract.input]);
    expect(procedures[name]?._def.output).toBe(contract.output);
    expect(procedures[name]?._def.type).toBe(contract.kind);
  }
});

describe('host control API', () => {
  const hermes = tempHermesHome();
  let host: Host & { url: string };
  let token: string;
  const calls: string[] = [];
  beforeAll(async () => {
    writeFileSync(
      credentialPath(path.join(hermes.root, 'profiles', 'work')),
      JSON.stringify({
        credential: CREDENTIAL,
        gateway_name: 'box Hermes',
        installation_id: 'i',
        gateway_id: 'g',
        relay_url: 'https://r.example',
      }),
    );
    const config = testConfig(hermes.root);
    host = await startHost(config, { onControlCall: (name) => calls.push(name) });
    const file = path.join(config.stateDir, CONTROL_TOKEN_FILE);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    token = readFileSync(file, 'utf8').trim();
  });
  afterAll(async () => {
    await host.app.close();
    hermes.cleanup();
  });

  it('refuses every procedure without the token, with a wrong one and with the standalone bearer (401)', async () => {
    for (const bad of [null, 'x'.repeat(43), TEST_TOKEN, `${token}x`]) {
      const api = control(host.url, bad);
      const attempts: (() => Promise<unknown>)[] = [
        () => api.status.query(),
        () => api.pairings.query(),
        () => api.pushStatus.query({}),
        () => api.delivery.query(),
        () => api.cronMutes.query({}),
        () => api.setCronMute.mutate({ jobId: 'j', muted: true }),
        () => api.testPush.mutate({}),
      ];
      for (const attempt of attempts) expect(await refusalStatus(attempt())).toBe(401);
    }
    expect(calls).toEqual([]);
  });

  it('status, pairings, push status and delivery, never with the credential', async () => {
    const api = control(host.url, token);
    const status = await api.status.query();
    expect(status).toMatchObject({ version: '0.1.0', pid: process.pid, queueDepth: 0 });
    expect(status.profiles).toEqual(['default', 'work']);
    const { pairings } = await api.pairings.query();
    expect(pairings).toEqual([
      { profile: 'default', paired: false },
      {
        profile: 'work',
        paired: true,
        gatewayName: 'box Hermes',
        relayUrl: 'https://r.example',
        redactContent: false,
        endToEndEncryption: 'off',
      },
    ]);
    const work = await api.pushStatus.query({ profile: 'work' });
    expect(work.lines?.slice(0, 3)).toEqual(['Paired: box Hermes', 'Relay: https://r.example', 'Redact content: off']);
    expect(await api.pushStatus.query({})).toEqual({ profile: 'default', lines: null });
    expect(await api.delivery.query()).toEqual({
      queue: { depth: 0, inFlight: 0, retrying: 0, attempts: 0, oldestAgeMs: null },
      spool: { files: 0 },
    });
    const serialised = JSON.stringify([status, pairings, work]);
    expect(serialised).not.toContain('TOP-SECRET');
    expect(serialised).not.toContain(token);
    expect(calls).toEqual(['status', 'pairings', 'pushStatus', 'pushStatus', 'delivery']);
  });

  it('cron mutes: list, set, unset (written to the profile file)', async () => {
    const api = control(host.url, token);
    expect(await api.cronMutes.query({ profile: 'work' })).toEqual({ profile: 'work', muted: [] });
    expect(await api.setCronMute.mutate({ profile: 'work', jobId: 'nightly', muted: true })).toEqual({
      profile: 'work',
      muted: ['nightly'],
    });
    expect(await api.cronMutes.query({ profile: 'work' })).toEqual({ profile: 'work', muted: ['nightly'] });
    expect(await api.setCronMute.mutate({ profile: 'work', jobId: 'nightly', muted: false })).toEqual({
      profile: 'work',
      muted: [],
    });
  });

  it('test push: an unpaired profile says so; a paired one whose relay cannot be reached fails with a reason', async () => {
    const api = control(host.url, token);
    expect(await api.testPush.mutate({})).toEqual({ profile: 'default', outcome: 'not-paired' });
    expect(await api.testPush.mutate({ profile: 'work', corrupt: true })).toEqual({
      profile: 'work',
      outcome: 'e2e-off',
    });
  });

  it('`conduit push status` goes through the control API of the running service', async () => {
    calls.length = 0;
    const result = await conduit({ HERMES_HOME: hermes.root }, 'push', 'status', '--profile', 'work');
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Paired: box Hermes\nRelay: https://r.example\nRedact content: off\n');
    expect(result.stdout).not.toContain('TOP-SECRET');
    // The service recorded the call: the CLI asked it rather than reading the file itself.
    expect(calls).toEqual(['pushStatus']);
  }, 30_000);

  it('is outside /api and never answered for an unknown profile with the default one', async () => {
    const api = control(host.url, token);
    const error = await api.cronMutes.query({ profile: 'nobody' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TRPCClientError);
  });
});
