/**
 * The relay as a real process: boot rules, durability across kill -9, the shutdown flush of deferred
 * writes, the one-time import of a reference JSON store, and the storage CLIs.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRelayClient } from '@conduit/sdk/relay';
import { STORE_KINDS, testDatabase, TOPIC } from './support/harness.js';
import { pruneInactive, storageStatus } from '../src/cli/storage.js';
import { normalizePreferences } from '../src/domain/preferences.js';
import { openPrismaStore } from '../src/store/prisma-store.js';
import { runRelay, runRelayAsync, startRelayProcess } from './support/relay-process.js';

const sha = (value: string) => createHash('sha256').update(value).digest('hex');
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'relay-process-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const baseEnv = (extra: Record<string, string>) => ({
  PUBLIC_URL: 'https://relay.example.test/',
  APNS_TOPIC: TOPIC,
  APNS_MODE: 'accept',
  DATABASE_URL: '',
  ...extra,
});

describe('boot rules', () => {
  it('a bad variable stops the relay with a message naming it (stderr, non-zero exit)', async () => {
    const cases: [Record<string, string>, string][] = [
      [{ RELAY_MAX_INSTALLATIONS: 'abc' }, 'RELAY_MAX_INSTALLATIONS must be a positive integer.'],
      [{ RELAY_EVENTS_PER_MINUTE: '0' }, 'RELAY_EVENTS_PER_MINUTE must be a positive integer.'],
      [
        { RELAY_CALLS_PER_INSTALLATION_PER_DAY: '1.5' },
        'RELAY_CALLS_PER_INSTALLATION_PER_DAY must be a positive integer.',
      ],
      [{ PUBLIC_URL: 'http://relay.example.test' }, 'PUBLIC_URL must use https.'],
    ];
    const results = await Promise.all(
      cases.map(([env]) => runRelayAsync([], baseEnv({ DATA_PATH: path.join(dir, 'boot.sqlite'), ...env }))),
    );
    results.forEach((result, index) => {
      expect(result.status).not.toBe(0);
      expect(result.stderr).toContain(cases[index]?.[1]);
    });
  }, 120_000);
});

describe.each(STORE_KINDS)('durability on %s', (kind) => {
  it('an acknowledged registration and pairing survive kill -9; deferred writes are flushed on SIGTERM', async () => {
    const db = await testDatabase(kind);
    const env = baseEnv(
      kind === 'postgres' ? { DATA_PATH: path.join(dir, 'unused'), DATABASE_URL: db.url } : { DATA_PATH: db.url },
    );
    try {
      let relay = await startRelayProcess(env);
      let client = createRelayClient({ baseUrl: relay.url });
      const registered = await client.POST('/v1/installations', {
        body: { bundle_id: TOPIC, device_token: 'ab'.repeat(32), environment: 'production' },
      });
      expect(registered.response.status).toBe(201);
      const credential = registered.data?.credential ?? '';
      expect(registered.data?.relay_url).toBe('https://relay.example.test');
      const id = registered.data?.installation.id ?? '';
      const pairing = await client.POST('/v1/installations/{id}/pairings', {
        params: { path: { id } },
        headers: { authorization: `Bearer ${credential}` },
        body: {},
      });
      const claim = await client.POST('/v1/pairings/claim', {
        body: { pairing_code: pairing.data?.pairing_code ?? '' },
      });
      expect(claim.response.status).toBe(200);
      relay.child.kill('SIGKILL');
      expect(await relay.exited).toBeNull();

      relay = await startRelayProcess(env);
      client = createRelayClient({ baseUrl: relay.url });
      const gatewayAuth = { authorization: `Bearer ${claim.data?.credential ?? ''}` };
      const hello = await client.POST('/v1/events', {
        headers: gatewayAuth,
        body: { type: 'plugin.hello', event_id: 'hello-durable-1', plugin_version: '1.2.3' },
      });
      expect(hello.response.status).toBe(202);
      // SIGTERM right away: the plugin version is still in the 5 s deferred window.
      relay.child.kill('SIGTERM');
      expect(await relay.exited).toBe(0);

      relay = await startRelayProcess(env);
      client = createRelayClient({ baseUrl: relay.url });
      const meta = await client.GET('/v1/meta', { headers: { authorization: `Bearer ${credential}` } });
      expect(meta.data?.gateways).toMatchObject([{ id: claim.data?.gateway_id, plugin_version: '1.2.3' }]);
      relay.child.kill('SIGTERM');
      await relay.exited;
    } finally {
      await db.release();
    }
  }, 180_000);
});

describe('import from a reference JSON store', () => {
  const deviceSecret = 'd'.repeat(43);
  const gatewaySecret = 'g'.repeat(43);
  const installationId = '11111111-2222-4333-8444-555555555555';
  const gatewayId = '66666666-7777-4888-8999-000000000000';
  const reference = () =>
    `${JSON.stringify({
      version: 1,
      installations: {
        [installationId]: {
          id: installationId,
          bundleId: TOPIC,
          deviceToken: 'cd'.repeat(32),
          environment: 'production',
          deviceSecretHash: sha(deviceSecret),
          gateways: {
            [gatewayId]: {
              id: gatewayId,
              name: 'Old host',
              secretHash: sha(gatewaySecret),
              dashboardId: 'not-a-uuid',
              createdAt: '2026-01-01T00:00:00.000Z',
              pluginVersion: '0.30.0',
            },
          },
          active: true,
          preferences: { show_previews: true },
          createdAt: '2026-01-01T00:00:00.000Z',
          updatedAt: '2026-01-02T00:00:00.000Z',
        },
      },
      pairings: { [sha('ABCDEFGHJK')]: { installationId, expiresAt: Date.now() + 5 * 60_000 } },
      pendingDecisions: {
        [`${installationId}:${gatewayId}:req-imported`]: {
          id: 'req-imported',
          installationId,
          gatewayId,
          question: 'Keep going?',
          choices: ['yes', 'no'],
          questions: [],
          answers: {},
          deliverable: true,
          createdAt: Date.now() - 60_000,
        },
      },
    })}\n`;

  it('keeps every credential, pairing and decision; backs up byte-exact; refuses a second import', async () => {
    const dataPath = path.join(dir, 'ref', 'relay.json');
    const original = reference();
    mkdirSync(path.dirname(dataPath), { recursive: true });
    writeFileSync(dataPath, original);
    const relay = await startRelayProcess(baseEnv({ DATA_PATH: dataPath }));
    try {
      const client = createRelayClient({ baseUrl: relay.url });
      const meta = await client.GET('/v1/meta', {
        headers: { authorization: `Bearer ${installationId}.${deviceSecret}` },
      });
      expect(meta.response.status).toBe(200);
      expect(meta.data?.gateways).toMatchObject([{ id: gatewayId, name: 'Old host', plugin_version: '0.30.0' }]);
      expect(meta.data?.gateways[0]).not.toHaveProperty('dashboard_id');
      const gatewayAuth = { authorization: `Bearer ${installationId}.${gatewayId}.${gatewaySecret}` };
      const poll = await client.GET('/v1/decisions/{id}', {
        params: { path: { id: 'req-imported' } },
        headers: gatewayAuth,
      });
      expect(poll.data).toEqual({ status: 'pending', deliverable: true });
      const claim = await client.POST('/v1/pairings/claim', { body: { pairing_code: 'abcde-fghjk' } });
      expect(claim.response.status).toBe(200);
      const backups = readdirSync(path.dirname(dataPath)).filter((name) => name.startsWith('relay.json.backup-'));
      expect(backups).toHaveLength(1);
      expect(readFileSync(path.join(path.dirname(dataPath), backups[0] ?? ''), 'utf8')).toBe(original);
    } finally {
      relay.child.kill('SIGTERM');
      await relay.exited;
    }
    const again = runRelay(['import-json', dataPath], baseEnv({ DATA_PATH: dataPath }));
    expect(again.status).not.toBe(0);
    expect(again.stderr).toContain('already holds an imported reference store');
    expect(existsSync(path.join(dir, 'ref', 'relay.sqlite'))).toBe(true);
  }, 120_000);

  it('a file of another format is refused with the reference message', () => {
    const file = path.join(dir, 'v2.json');
    writeFileSync(file, JSON.stringify({ version: 2 }));
    const result = runRelay(['import-json', file], baseEnv({ DATA_PATH: path.join(dir, 'v2.sqlite') }));
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain('Unsupported relay data format.');
  });
});

describe('storage CLIs', () => {
  it('status counts; prune previews, refuses --apply without --relay-stopped, removes only eligible rows', async () => {
    const dataPath = path.join(dir, 'cli', 'relay.sqlite');
    mkdirSync(path.dirname(dataPath), { recursive: true });
    const store = await openPrismaStore(dataPath);
    const old = Date.now() - 31 * 24 * 60 * 60 * 1000;
    const base = {
      bundleId: TOPIC,
      deviceToken: 'ab'.repeat(32),
      voipToken: null,
      watchVoipToken: null,
      locationPushToken: null,
      environment: 'production',
      deviceSecretHash: sha('x'),
      preferences: normalizePreferences({}),
      createdAt: old,
      pairedAt: null,
      lastSeenAt: null,
    };
    await store.insertInstallation({ ...base, id: 'a0', active: false, updatedAt: old }); // eligible
    await store.insertInstallation({ ...base, id: 'a1', active: false, updatedAt: Date.now() }); // recent
    await store.insertInstallation({ ...base, id: 'a2', active: true, updatedAt: old }); // active
    await store.insertInstallation({ ...base, id: 'a3', active: false, updatedAt: old }); // gateway-bound
    await store.insertInstallation({ ...base, id: 'a4', active: false, updatedAt: old }); // referenced by a pairing
    await store.db.gateway.create({
      data: { installationId: 'a3', id: 'g', name: 'n', secretHash: sha('y'), createdAt: new Date(old) },
    });
    await store.replacePairing({ codeHash: sha('code'), installationId: 'a4', expiresAt: old, dashboardId: null });
    try {
      expect(await storageStatus(store.db, 50_000)).toEqual({
        installations: { total: 5, active: 1, inactive: 4, capacity: 50_000, expired: 0 },
      });
      const backupDir = path.dirname(dataPath);
      expect(await pruneInactive(store.db, { apply: false, relayStopped: false, backupDir })).toEqual({
        eligible: 1,
        removed: 0,
        remaining: 5,
      });
      await expect(pruneInactive(store.db, { apply: true, relayStopped: false, backupDir })).rejects.toThrow(
        '--relay-stopped',
      );
      expect(readdirSync(backupDir).some((name) => name.startsWith('relay-prune.backup-'))).toBe(false);
    } finally {
      await store.close();
    }
    // The CLI wiring, as an operator runs it.
    const env = baseEnv({ DATA_PATH: dataPath });
    const applied = await runRelayAsync(['storage:prune-inactive', '--apply', '--relay-stopped'], env);
    expect(JSON.parse(applied.stdout)).toMatchObject({ eligible: 1, removed: 1, remaining: 4 });
    const status = await runRelayAsync(['storage:status'], env);
    expect(JSON.parse(status.stdout)).toEqual({
      installations: { total: 4, active: 1, inactive: 3, capacity: 50_000, expired: 0 },
    });
    const backup = readdirSync(path.dirname(dataPath)).find((name) => name.startsWith('relay-prune.backup-'));
    expect(JSON.parse(readFileSync(path.join(path.dirname(dataPath), backup ?? ''), 'utf8'))).toMatchObject({
      installations: [{ id: 'a0' }],
    });
  }, 120_000);
});
