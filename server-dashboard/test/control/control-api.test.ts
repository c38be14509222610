/**
 * The host control API (tRPC at /_conduit/control): a real host on an ephemeral port driven by a real
 * @trpc/client with the token from `<state>/control-token`. Refused without or with a wrong token
 * (never the standalone bearer), and no output carries the credential.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createTRPCClient, httpLink, TRPCClientError } from '@trpc/client';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { hostControlProcedures } from '@conduit/contracts/dashboard/control';
import { freePort } from '@conduit/contracts/testing';
import type { Host } from '../../src/app.js';
import { writeRuntimeFile } from '../../src/bridge/runtime-file.js';
import { ServiceError, throughService } from '../../src/control/control-client.js';
import { hostControlRouter, type HostControlRouter } from '../../src/control/control-router.js';
import { CONTROL_TOKEN_FILE, readOrCreateControlToken } from '../../src/control/control-token.js';
import { credentialPath, readCredentials } from '../../src/credentials/credential-store.js';
import { PairingRelay } from '../pairing/support/pairing-relay.js';
import { tempHermesHome, testConfig, TEST_TOKEN } from '../support/config.js';
import { startHost } from '../support/host.js';
import { writePairing } from '../support/pairing.js';

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
        () => api.pair.mutate({ pairingCode: 'ABCDE-FGHJK' }),
        () => api.unpair.mutate({}),
        () => api.setRedaction.mutate({ on: true }),
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

  it('a refusal keeps its message and says what kind it is: a malformed pairing code is 400, nothing written', async () => {
    const api = control(host.url, token);
    const refused = api.pair.mutate({ pairingCode: 'not-a-code' });
    await expect(refused).rejects.toThrow('That is not a Conduit pairing code (expected XXXXX-XXXXX)');
    expect(await refusalStatus(refused)).toBe(400);
    expect((await api.pushStatus.query({})).lines).toBeNull();
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

describe('`conduit push` while the service runs: every subcommand through its control API', () => {
  const hermes = tempHermesHome();
  const work = path.join(hermes.root, 'profiles', 'work');
  const relay = new PairingRelay();
  let host: Host & { url: string };
  const calls: string[] = [];
  const push = (...argv: string[]) => conduit({ HERMES_HOME: hermes.root }, 'push', ...argv, '--profile', 'work');
  beforeAll(async () => {
    await relay.start();
    host = await startHost(testConfig(hermes.root), { onControlCall: (name) => calls.push(name) });
  });
  afterAll(async () => {
    await host.app.close();
    await relay.stop();
    hermes.cleanup();
  });
  beforeEach(() => {
    calls.length = 0;
  });

  it('pair, test, test --corrupt, redact on|off and unpair print what they print on the files', async () => {
    expect(await push('pair', relay.mintCode(), '--relay-url', relay.url, '--name', 'box')).toEqual({
      code: 0,
      stdout: 'Paired box with Conduit.\n',
      stderr: '',
    });
    const stored = await readCredentials(work);
    expect(stored?.credential && relay.live.has(stored.credential)).toBe(true);
    expect(relay.events.map((event) => event.type)).toEqual(['plugin.hello']);

    expect(await push('test')).toEqual({
      code: 0,
      stdout: 'Test notification accepted by the Conduit relay.\n',
      stderr: '',
    });
    expect(relay.events.at(-1)).toMatchObject({ type: 'response.ready', profile: 'work', title: 'Hermes Conduit' });
    expect(await push('test', '--corrupt')).toEqual({
      code: 1,
      stdout: 'End-to-end encryption is off for this profile; nothing to corrupt.\n',
      stderr: '',
    });
    expect(await push('redact', 'on')).toEqual({
      code: 0,
      stdout: 'Notification content is redacted; approval and clarify cards use generic text.\n',
      stderr: '',
    });
    expect((await readCredentials(work))?.redact_content).toBe(true);
    expect(await push('redact', 'off')).toEqual({
      code: 0,
      stdout: 'Notification content is no longer redacted.\n',
      stderr: '',
    });
    expect(await push('unpair')).toEqual({ code: 0, stdout: 'Conduit pairing revoked.\n', stderr: '' });
    expect(relay.live.size).toBe(0);
    expect(existsSync(credentialPath(work))).toBe(false);
    expect(await push('test')).toEqual({
      code: 1,
      stdout: 'This Hermes profile is not paired with Conduit.\n',
      stderr: '',
    });
    // The service did each one: the CLI asked it rather than opening the files beside it.
    expect(calls).toEqual(['pair', 'testPush', 'testPush', 'setRedaction', 'setRedaction', 'unpair', 'testPush']);
  }, 120_000);

  it('what the relay refuses comes back as the CLI prints it: a used code, exit 1, nothing written', async () => {
    const refused = await push('pair', 'ABCDE-FGHJK', '--relay-url', relay.url);
    expect(refused).toEqual({
      code: 1,
      stdout: '',
      stderr: 'Conduit relay rejected the request: invalid_or_expired_pairing (404).\n',
    });
    expect(existsSync(credentialPath(work))).toBe(false);
    expect(calls).toEqual(['pair']);
  }, 30_000);

  it('a service older than the command (no such procedure): says to restart it, never writes beside it', async () => {
    let wroteFiles = false;
    const older = throughService(
      { home: work, profile: 'work' },
      { HERMES_HOME: hermes.root },
      // A procedure this service does not have, as a newer CLI would call on a service not yet restarted.
      (api) => (api as unknown as { retired: { mutate: (input: object) => Promise<string> } }).retired.mutate({}),
      () => {
        wroteFiles = true;
        return Promise.resolve('local');
      },
    );
    await expect(older).rejects.toThrow(
      new ServiceError(
        'The running Conduit host service is older than this command and cannot do this yet; restart it, then try again.',
      ),
    );
    expect(wroteFiles).toBe(false);
  });

  it('a service that stopped after writing its runtime file: the CLI works on the files itself', async () => {
    const other = tempHermesHome();
    try {
      const stateDir = path.join(other.root, 'conduit-host');
      await readOrCreateControlToken(stateDir);
      // This process is alive, but nothing listens at the URL any more.
      await writeRuntimeFile(stateDir, {
        url: `http://127.0.0.1:${await freePort()}`,
        token: 'x'.repeat(43),
        pid: process.pid,
      });
      writePairing(path.join(other.root, 'profiles', 'work'), relay.url);
      const result = await conduit({ HERMES_HOME: other.root }, 'push', 'redact', 'on', '--profile', 'work');
      expect(result).toEqual({
        code: 0,
        stdout: 'Notification content is redacted; approval and clarify cards use generic text.\n',
        stderr: '',
      });
      expect((await readCredentials(path.join(other.root, 'profiles', 'work')))?.redact_content).toBe(true);
      expect(calls).toEqual([]);
    } finally {
      other.cleanup();
    }
  }, 30_000);
});
