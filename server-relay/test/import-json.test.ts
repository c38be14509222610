/**
 * Importing a reference relay.json loads every record the reference itself loads (its store.mjs
 * takes records as they are: a record without bundleId or deviceToken still counts and
 * authenticates), skips only what the reference drops on load or cannot use, reports the skips by
 * count and reason, and never refuses the whole file for one bad record. Through real relay
 * processes (first boot with DATA_PATH=relay.json, and the explicit import-json command) on SQLite
 * and PostgreSQL.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRelayClient } from '@conduit/sdk/relay';
import { STORE_KINDS, testDatabase, TOPIC } from './support/harness.js';
import { waitForLine } from './support/log-lines.js';
import { runRelayAsync, startRelayProcess } from './support/relay-process.js';

const sha = (value: string) => createHash('sha256').update(value).digest('hex');
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'relay-import-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const env = (extra: Record<string, string>) => ({
  PUBLIC_URL: 'https://relay.example.test/',
  APNS_TOPIC: TOPIC,
  APNS_MODE: 'accept',
  DATABASE_URL: '',
  ...extra,
});

const secret = (name: string) => name.padEnd(43, 'x');
const FULL = '11111111-1111-4111-8111-111111111111';
const BARE = '22222222-2222-4222-8222-222222222222';
const NO_ACTIVE = '33333333-3333-4333-8333-333333333333';
const GATEWAY = '44444444-4444-4444-8444-444444444444';
const BARE_GATEWAY = '55555555-5555-4555-8555-555555555555';

/**
 * A store as long-lived reference relays hold them: a complete record, one without the optional
 * fields the reference never needed (bundleId, deviceToken, environment, preferences, dates), one
 * from before `active` was written, and the debris the reference drops or cannot use.
 */
function referenceStore(): string {
  const now = Date.now();
  return `${JSON.stringify({
    version: 1,
    installations: {
      [FULL]: {
        id: FULL,
        bundleId: TOPIC,
        deviceToken: 'ab'.repeat(32),
        environment: 'production',
        deviceSecretHash: sha(secret('full')),
        gateways: {
          [GATEWAY]: { id: GATEWAY, name: 'Old host', secretHash: sha(secret('gateway')), createdAt: now },
          broken: null,
        },
        active: true,
        preferences: { show_previews: true },
        createdAt: '2026-01-01T00:00:00.000Z',
        updatedAt: '2026-01-02T00:00:00.000Z',
      },
      [BARE]: {
        deviceSecretHash: sha(secret('bare')),
        active: true,
        gateways: { [BARE_GATEWAY]: { id: BARE_GATEWAY, secretHash: sha(secret('bare-gateway')) } },
      },
      [NO_ACTIVE]: { deviceSecretHash: sha(secret('no-active')) },
      'not-an-object': null,
    },
    pairings: {
      [sha('ABCDEFGHJK')]: { installationId: FULL, expiresAt: new Date(now + 5 * 60_000).toISOString() },
      [sha('EXPIREDXXX')]: { installationId: FULL, expiresAt: new Date(now - 60_000).toISOString() },
      [sha('ORPHANXXXX')]: { installationId: '99999999-9999-4999-8999-999999999999', expiresAt: now + 60_000 },
      [sha('NOBODYXXXX')]: { expiresAt: now + 60_000 },
    },
    pendingDecisions: {
      // A legacy bare-id record: re-keyed to installation:gateway:request.
      'req-legacy': {
        installationId: BARE,
        gatewayId: BARE_GATEWAY,
        question: 'Deploy?',
        choices: ['yes', 'no'],
        createdAt: now - 60_000,
      },
      [`${FULL}:${GATEWAY}:req-old`]: {
        id: 'req-old',
        installationId: FULL,
        gatewayId: GATEWAY,
        question: 'Old?',
        createdAt: now - 3 * 60 * 60_000,
      },
      'req-nobody': { question: 'Whose?', createdAt: now },
    },
    eventIds: { [`${FULL}:${GATEWAY}:evt`]: now },
  })}\n`;
}

const EXPECTED_SKIPS = {
  total: 7,
  reasons: {
    'installation is not an object': 1,
    'gateway is not an object': 1,
    'pairing expired': 1,
    'pairing of an installation not in the file': 1,
    'pairing names no installation': 1,
    'decision expired': 1,
    'decision names no installation': 1,
  },
};

describe.each(STORE_KINDS)('first boot on a reference relay.json (%s)', (kind) => {
  it('loads what the reference loads, reports the skipped records by reason, and the credentials work', async () => {
    const db = await testDatabase(kind);
    const folder = path.join(dir, `boot-${kind}`);
    mkdirSync(folder);
    const dataPath = path.join(folder, 'relay.json');
    writeFileSync(dataPath, referenceStore());
    const relay = await startRelayProcess(
      env({ DATA_PATH: dataPath, ...(kind === 'postgres' ? { DATABASE_URL: db.url } : {}) }),
    );
    try {
      const imported = await waitForLine(relay, (line) => line.message === 'imported reference store');
      expect(imported).toMatchObject({
        level: 'info',
        installations: 3,
        gateways: 2,
        pairings: 1,
        decisions: 1,
        skipped: EXPECTED_SKIPS,
      });
      const client = createRelayClient({ baseUrl: relay.url });
      // The record without bundleId and deviceToken authenticates, as at the reference.
      const bareMeta = await client.GET('/v1/meta', { headers: { authorization: `Bearer ${BARE}.${secret('bare')}` } });
      expect(bareMeta.response.status).toBe(200);
      expect(bareMeta.data?.gateways).toMatchObject([{ id: BARE_GATEWAY, name: 'Hermes gateway' }]);
      const fullMeta = await client.GET('/v1/meta', { headers: { authorization: `Bearer ${FULL}.${secret('full')}` } });
      expect(fullMeta.data?.gateways).toMatchObject([{ id: GATEWAY, name: 'Old host' }]);
      // A record that never said it was active is inactive at the reference: its credential is refused.
      const inactive = await client.GET('/v1/meta', {
        headers: { authorization: `Bearer ${NO_ACTIVE}.${secret('no-active')}` },
      });
      expect(inactive.response.status).toBe(401);
      // The legacy decision answers under its new key; the live pairing code is claimable.
      const poll = await client.GET('/v1/decisions/{id}', {
        params: { path: { id: 'req-legacy' } },
        headers: { authorization: `Bearer ${BARE}.${BARE_GATEWAY}.${secret('bare-gateway')}` },
      });
      expect(poll.data).toEqual({ status: 'pending', deliverable: true });
      const claim = await client.POST('/v1/pairings/claim', { body: { pairing_code: 'ABCDE-FGHJK' } });
      expect(claim.response.status).toBe(200);
      expect(readdirSync(folder).filter((name) => name.startsWith('relay.json.backup-'))).toHaveLength(1);
    } finally {
      relay.child.kill('SIGTERM');
      await relay.exited;
      await db.release();
    }
  }, 120_000);
});

describe('the import-json command', () => {
  it('prints the summary with the skips by reason; a second import is refused', async () => {
    const folder = path.join(dir, 'command');
    mkdirSync(folder);
    const file = path.join(folder, 'relay.json');
    writeFileSync(file, referenceStore());
    const first = await runRelayAsync(['import-json', file], env({ DATA_PATH: path.join(folder, 'relay.sqlite') }));
    expect(first.stderr).toBe('');
    expect(first.status).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({
      installations: 3,
      gateways: 2,
      pairings: 1,
      decisions: 1,
      skipped: EXPECTED_SKIPS,
    });
    const again = await runRelayAsync(['import-json', file], env({ DATA_PATH: path.join(folder, 'relay.sqlite') }));
    expect(again.status).toBe(1);
    expect(again.stderr.trim()).toBe('This database already holds an imported reference store.');
  });

  it('a file that is not JSON, or not a version 1 store, is refused in one line before any database exists', async () => {
    const folder = path.join(dir, 'refused');
    mkdirSync(folder);
    const cases: [string, string][] = [
      ['{"version":1,"installations":', 'is not a reference relay store: it is not valid JSON.'],
      ['{"version":2,"installations":{}}', 'Unsupported relay data format.'],
      ['{"version":1,"installations":[]}', 'Unsupported relay data format.'],
      ['{"version":1}', 'Unsupported relay data format.'],
    ];
    for (const [text, message] of cases) {
      const file = path.join(folder, 'relay.json');
      writeFileSync(file, text);
      const result = await runRelayAsync(['import-json', file], env({ DATA_PATH: file }));
      expect(result.status).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      expect(result.stderr).toContain(message);
      expect(readdirSync(folder)).toEqual(['relay.json']);
      // Booting on it refuses the same way and creates nothing beside it.
      const boot = await runRelayAsync([], env({ DATA_PATH: file }));
      expect(boot.status).toBe(1);
      expect(boot.stderr).toContain(message);
      expect(existsSync(path.join(folder, 'relay.sqlite'))).toBe(false);
    }
  }, 120_000);
});
