/**
 * The relay's SQLite files are private (issue 12, item 8): database, -wal and -shm are 0600, a folder
 * the relay creates is 0700, and files an older relay left 0644 are narrowed at start. A real relay
 * process, as operators run it.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '@conduit/prisma';
import { createRelayClient } from '@conduit/sdk/relay';
import { deviceToken, TOPIC } from './support/harness.js';
import { startRelayProcess, type RelayProcess } from './support/relay-process.js';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'relay-modes-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const modeOf = (file: string): number => statSync(file).mode & 0o777;

async function startOn(dataPath: string): Promise<RelayProcess> {
  return startRelayProcess({
    PUBLIC_URL: 'https://relay.example.test',
    APNS_TOPIC: TOPIC,
    APNS_MODE: 'accept',
    DATABASE_URL: '',
    DATA_PATH: dataPath,
  });
}

/** One acknowledged write, so the write-ahead log holds a row. */
async function registerOne(relay: RelayProcess): Promise<void> {
  const client = createRelayClient({ baseUrl: relay.url });
  const { response } = await client.POST('/v1/installations', {
    body: { bundle_id: TOPIC, device_token: deviceToken(42), environment: 'production' },
  });
  expect(response.status).toBe(201);
}

async function stop(relay: RelayProcess): Promise<void> {
  relay.child.kill('SIGTERM');
  await relay.exited;
}

describe('SQLite file modes', () => {
  it('a fresh store: the folder the relay creates is 0700, database, -wal and -shm are 0600', async () => {
    const folder = path.join(dir, 'fresh', 'data');
    const file = path.join(folder, 'relay.sqlite');
    const relay = await startOn(file);
    try {
      await registerOne(relay);
      expect(modeOf(folder)).toBe(0o700);
      for (const name of [file, `${file}-wal`, `${file}-shm`]) {
        expect(existsSync(name), name).toBe(true);
        expect(modeOf(name).toString(8), name).toBe('600');
      }
    } finally {
      await stop(relay);
    }
  }, 120_000);

  it('files an older relay left world-readable are narrowed to 0600; an operator’s folder keeps its mode', async () => {
    const folder = path.join(dir, 'upgrade');
    mkdirSync(folder, { mode: 0o755 });
    chmodSync(folder, 0o755);
    const file = path.join(folder, 'relay.sqlite');
    // What the relay used to do: migrate with the default umask, leaving 0644 files behind.
    await migrate(file);
    for (const name of [file, `${file}-wal`, `${file}-shm`]) if (existsSync(name)) chmodSync(name, 0o644);
    expect(modeOf(file)).toBe(0o644);

    const relay = await startOn(file);
    try {
      await registerOne(relay);
      expect(modeOf(folder)).toBe(0o755);
      for (const name of [file, `${file}-wal`, `${file}-shm`]) {
        expect(existsSync(name), name).toBe(true);
        expect(modeOf(name).toString(8), name).toBe('600');
      }
    } finally {
      await stop(relay);
    }
  }, 120_000);
});
