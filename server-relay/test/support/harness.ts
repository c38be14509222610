import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { acquirePostgres, type TestDatabase } from '@conduit/prisma/testing/postgres';
import { createRelayClient } from '@conduit/sdk/relay';
import { buildApp } from '../../src/app.js';
import { loadConfig, type RelayConfig } from '../../src/config.js';
import { openPrismaStore, type PrismaStore } from '../../src/store/prisma-store.js';
import type { RelayStore } from '../../src/store/relay-store.js';
import { RecordingApns } from './recording-apns.js';

export type StoreKind = 'sqlite' | 'postgres';
export const STORE_KINDS: StoreKind[] = ['sqlite', 'postgres'];

export const TOPIC = 'com.example.conduit';
export const PUBLIC_URL = 'https://relay.example.test';

/** A database for one test file: a SQLite file in a temp folder, or a fresh PostgreSQL database. */
export async function testDatabase(kind: StoreKind): Promise<{ url: string; release: () => Promise<void> }> {
  if (kind === 'postgres') {
    const db: TestDatabase = await acquirePostgres();
    return db;
  }
  const dir = mkdtempSync(path.join(os.tmpdir(), 'relay-test-'));
  return { url: path.join(dir, 'relay.sqlite'), release: async () => rmSync(dir, { recursive: true, force: true }) };
}

export function testConfig(databaseUrl: string, env: Record<string, string> = {}): RelayConfig {
  return loadConfig({
    PUBLIC_URL: PUBLIC_URL,
    DATA_PATH: '/unused/relay.sqlite',
    DATABASE_URL: databaseUrl,
    APNS_TOPIC: TOPIC,
    APNS_MODE: 'accept',
    ...env,
  });
}

/** A settable clock: tests move time instead of sleeping. */
export class TestClock {
  constructor(public ms = Date.now()) {}
  now = (): number => this.ms;
  advance(ms: number): void {
    this.ms += ms;
  }
}

export interface Relay {
  app: FastifyInstance;
  baseUrl: string;
  client: ReturnType<typeof createRelayClient>;
  apns: RecordingApns;
  clock: TestClock;
  store: PrismaStore;
  logs: Record<string, unknown>[];
  accessLog: Record<string, unknown>[];
  /** The first access-log line (already written or yet to come) that `match` accepts. */
  accessLogLine(match: (line: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>;
  /** The first operational log line (already written or yet to come) that `match` accepts. */
  logLine(match: (line: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

/**
 * A real relay on an ephemeral port over a real store; APNs is recorded at its seam. `wrapStore` puts
 * something between the app and the database (a test that makes the database unreachable for reads).
 */
export async function startRelay(
  databaseUrl: string,
  env: Record<string, string> = {},
  wrapStore: (store: PrismaStore) => RelayStore = (store) => store,
): Promise<Relay> {
  const store = await openPrismaStore(databaseUrl);
  const apns = new RecordingApns();
  const clock = new TestClock();
  const logs: Record<string, unknown>[] = [];
  const accessLog: Record<string, unknown>[] = [];
  // The line is written after the reply has gone out, so a test waits for it rather than reading at once.
  const accessWaiters: Waiter[] = [];
  const logWaiters: Waiter[] = [];
  const app = await buildApp(testConfig(databaseUrl, env), {
    store: wrapStore(store),
    apns,
    now: clock.now,
    log: (level, message, fields) => {
      const line = { level, message, ...fields };
      logs.push(line);
      settle(logWaiters, line);
    },
    accessLog: (line) => {
      accessLog.push(line);
      settle(accessWaiters, line);
    },
  });
  const baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
  return {
    app,
    baseUrl,
    client: createRelayClient({ baseUrl }),
    apns,
    clock,
    store,
    logs,
    accessLog,
    accessLogLine: (match) => firstLine(accessLog, accessWaiters, match),
    logLine: (match) => firstLine(logs, logWaiters, match),
    close: async () => {
      await app.close();
      await store.close();
    },
  };
}

interface Waiter {
  match: (line: Record<string, unknown>) => boolean;
  resolve: (line: Record<string, unknown>) => void;
}

function settle(waiters: Waiter[], line: Record<string, unknown>): void {
  for (const waiter of waiters.filter((w) => w.match(line))) {
    waiters.splice(waiters.indexOf(waiter), 1);
    waiter.resolve(line);
  }
}

function firstLine(
  written: Record<string, unknown>[],
  waiters: Waiter[],
  match: (line: Record<string, unknown>) => boolean,
): Promise<Record<string, unknown>> {
  const found = written.find(match);
  return found ? Promise.resolve(found) : new Promise((resolve) => waiters.push({ match, resolve }));
}

let ipCounter = 0;
/** A distinct client address per call (the relay runs with TRUST_PROXY=1 in tests), so per-IP limits stay out of the way. */
export function nextIp(): string {
  ipCounter += 1;
  return `10.${(ipCounter >> 16) & 255}.${(ipCounter >> 8) & 255}.${ipCounter & 255}`;
}

export const deviceToken = (seed: number): string => seed.toString(16).padStart(2, '0').repeat(32);

/** Registers a phone and returns its credential pieces. */
export async function register(
  relay: Relay,
  extra: {
    voip_token?: string;
    watch_voip_token?: string;
    location_push_token?: string;
    preferences?: Record<string, boolean>;
  } = {},
  seed = Math.floor(Math.random() * 200) + 16,
) {
  const { data, response } = await relay.client.POST('/v1/installations', {
    headers: { 'x-forwarded-for': nextIp() },
    body: { bundle_id: TOPIC, device_token: deviceToken(seed), environment: 'production', ...extra },
  });
  if (response.status !== 201 || !data) throw new Error(`register failed: ${response.status}`);
  return { id: data.installation.id, credential: data.credential, token: deviceToken(seed), body: data };
}

/** Registers a phone and pairs one gateway with it. */
export async function paired(relay: Relay, extra: Parameters<typeof register>[1] = {}, dashboardId?: string) {
  const phone = await register(relay, extra);
  const pairing = await relay.client.POST('/v1/installations/{id}/pairings', {
    params: { path: { id: phone.id } },
    headers: { authorization: `Bearer ${phone.credential}` },
    body: dashboardId ? { dashboard_id: dashboardId } : {},
  });
  if (!pairing.data) throw new Error(`pairing failed: ${pairing.response.status}`);
  const claim = await relay.client.POST('/v1/pairings/claim', {
    headers: { 'x-forwarded-for': nextIp() },
    body: { pairing_code: pairing.data.pairing_code, gateway_name: 'Test host' },
  });
  if (!claim.data) throw new Error(`claim failed: ${claim.response.status}`);
  return {
    phone,
    gatewayId: claim.data.gateway_id,
    gatewayAuth: { authorization: `Bearer ${claim.data.credential}` },
    deviceAuth: { authorization: `Bearer ${phone.credential}` },
  };
}

/** Budgets raised so a file's many registrations and events never hit a process-wide window. */
export const ROOMY_BUDGETS = {
  RELAY_REGISTRATIONS_PER_MINUTE: '100000',
  RELAY_DEVICE_CHANGES_PER_MINUTE: '100000',
  RELAY_EVENTS_PER_MINUTE: '100000',
  RELAY_DECISION_ACTIONS_PER_MINUTE: '100000',
  RELAY_REVOCATIONS_PER_MINUTE: '100000',
  TRUST_PROXY: '1',
};
