/**
 * Black-box harness for the conformance suite: the relay as an operator runs it (one node process,
 * configured only by its environment, APNs in capture mode), and raw HTTP helpers so tests can check
 * the exact bytes of the wire (status, headers, body) as the reference relay answers them.
 */
import { type ChildProcess } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRelayClient } from '@conduit/sdk/relay';
import { freePort, startServerProcess } from '@conduit/contracts/testing';

const RELAY_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const MAIN = path.join(RELAY_DIR, 'src/main.ts');

export const TOPIC = 'com.example.conduit.conformance';
export const PUBLIC_URL = 'https://relay.conformance.test';

export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  /** The parsed body, or undefined when empty / not JSON. */
  json: unknown;
}

export interface CallOptions {
  /** A JSON value to send (serialised), or a raw string sent as is. */
  body?: unknown;
  raw?: string;
  auth?: string;
  headers?: Record<string, string>;
  /** The client address the relay should count (TRUST_PROXY=1 is set by startRelay). */
  ip?: string;
}

/** A fresh APNs provider key (P-256 PKCS#8 PEM), as Apple's .p8 files hold it. */
function writeProviderKey(dir: string): string {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const keyPath = path.join(dir, 'AuthKey_CONFORM.p8');
  writeFileSync(keyPath, privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), { mode: 0o600 });
  return keyPath;
}

/** Environment every conformance relay shares; tests add or override entries. */
export function baseEnv(dir: string): Record<string, string> {
  return {
    PUBLIC_URL: `${PUBLIC_URL}/`,
    DATA_PATH: path.join(dir, 'relay.sqlite'),
    DATABASE_URL: '',
    APNS_KEY_PATH: writeProviderKey(dir),
    APNS_KEY_ID: 'CONFORMKEY',
    APNS_TEAM_ID: 'CONFORMTEAM',
    APNS_TOPIC: TOPIC,
    APNS_MODE: 'accept',
    APNS_CAPTURE_PATH: path.join(dir, 'apns.jsonl'),
    TRUST_PROXY: '1',
  };
}

export interface CapturedPush {
  deviceToken: string;
  notification: {
    payload: Record<string, unknown>;
    collapseId?: string;
    threadId?: string;
    pushType?: string;
    topic?: string;
    expiration?: number;
  };
}

export interface Relay {
  url: string;
  dir: string;
  child: ChildProcess;
  output: () => string;
  call: (method: string, urlPath: string, options?: CallOptions) => Promise<Reply>;
  client: ReturnType<typeof createRelayClient>;
  /** Every push the relay handed to APNs so far, in order. */
  captures: () => CapturedPush[];
  stop: () => Promise<void>;
}

let ipCounter = 0;
/** A distinct client address per call site, so per-IP limits never couple unrelated tests. */
export function nextIp(): string {
  ipCounter += 1;
  return `10.${(ipCounter >> 16) & 255}.${(ipCounter >> 8) & 255}.${ipCounter & 255}`;
}

export async function request(baseUrl: string, method: string, urlPath: string, options: CallOptions = {}) {
  const headers: Record<string, string> = { ...options.headers };
  if (options.auth !== undefined) headers.authorization = options.auth;
  headers['x-forwarded-for'] = options.ip ?? nextIp();
  let body: string | undefined;
  if (options.raw !== undefined) body = options.raw;
  else if (options.body !== undefined) body = JSON.stringify(options.body);
  if (body !== undefined && !headers['content-type']) headers['content-type'] = 'application/json';
  const response = await fetch(baseUrl + urlPath, { method, headers, ...(body !== undefined ? { body } : {}) });
  const text = await response.text();
  let json: unknown;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

/**
 * What the suite runs against, from CONFORMANCE_TARGET: `process` (unset: one relay process on SQLite)
 * or `cluster` (3 replica processes on PostgreSQL + Redis behind a round-robin balancer,
 * test/cluster/cluster.ts). vitest.config.ts runs the suite once per target.
 */
export type ConformanceTarget = 'process' | 'cluster';

export function conformanceTarget(): ConformanceTarget {
  const value = process.env.CONFORMANCE_TARGET?.trim() ?? '';
  if (value === '' || value === 'process') return 'process';
  if (value === 'cluster') return 'cluster';
  throw new Error(`CONFORMANCE_TARGET must be "process" or "cluster", not ${JSON.stringify(value)}`);
}

function readCaptures(capturePath: string): CapturedPush[] {
  return existsSync(capturePath)
    ? readFileSync(capturePath, 'utf8')
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as CapturedPush)
    : [];
}

/**
 * The replicas' logs as one append-only text: each call appends every replica's complete lines printed
 * since the last call, so an offset taken from `output().length` stays valid (a log check can read
 * "what was printed after this point" whichever replica printed it), and no line is ever cut in two.
 */
function mergedOutput(sources: (() => string)[]): () => string {
  const taken = sources.map(() => 0);
  let merged = '';
  return () => {
    sources.forEach((source, index) => {
      const text = source();
      const end = text.lastIndexOf('\n') + 1;
      const from = taken[index] ?? 0;
      if (end > from) {
        merged += text.slice(from, end);
        taken[index] = end;
      }
    });
    return merged;
  };
}

/** The relay as 3 replicas behind the balancer; the capture file is one for all of them. */
async function startClusterRelay(env: Record<string, string>): Promise<Relay> {
  const { startCluster } = await import('../cluster/cluster.js');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'relay-conformance-cluster-'));
  const capturePath = env.APNS_CAPTURE_PATH ?? path.join(dir, 'apns.jsonl');
  let cluster: Awaited<ReturnType<typeof startCluster>>;
  try {
    cluster = await startCluster({ replicas: 3, env: { ...env, APNS_CAPTURE_PATH: capturePath } });
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const first = cluster.replicas[0];
  if (!first) throw new Error('the cluster started no replica');
  return {
    url: cluster.url,
    dir,
    child: first.process.child,
    output: mergedOutput(cluster.replicas.map((replica) => replica.process.output)),
    call: cluster.call,
    client: createRelayClient({ baseUrl: cluster.url, headers: { 'x-forwarded-for': '10.255.255.254' } }),
    captures: () => readCaptures(capturePath),
    stop: async () => {
      await cluster.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Starts the relay under test (one process, or the cluster when CONFORMANCE_TARGET=cluster); `env`
 * overrides the conformance defaults.
 */
export async function startRelay(env: Record<string, string> = {}): Promise<Relay> {
  if (conformanceTarget() === 'cluster') return startClusterRelay(env);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'relay-conformance-'));
  const port = await freePort();
  const { url, child, output, exited } = await startServerProcess({
    name: 'relay',
    command: process.execPath,
    args: ['--import', 'tsx', MAIN],
    cwd: RELAY_DIR,
    env: { ...process.env, HOST: '127.0.0.1', PORT: String(port), ...baseEnv(dir), ...env },
    port,
    ready: async (base) => (await fetch(`${base}/healthz`)).ok,
    pollMs: 50,
  });
  const capturePath = env.APNS_CAPTURE_PATH ?? path.join(dir, 'apns.jsonl');
  return {
    url,
    dir,
    child,
    output,
    call: (method, urlPath, options) => request(url, method, urlPath, options),
    client: createRelayClient({ baseUrl: url, headers: { 'x-forwarded-for': '10.255.255.254' } }),
    captures: () => readCaptures(capturePath),
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

let tokenCounter = 0;
/** A distinct valid APNs device token (64 lowercase hex). */
export function deviceToken(): string {
  tokenCounter += 1;
  return (tokenCounter.toString(16).padStart(8, '0') + process.pid.toString(16).padStart(8, '0')).repeat(4);
}

export interface Phone {
  id: string;
  credential: string;
  auth: string;
  token: string;
}

export interface Host {
  installationId: string;
  gatewayId: string;
  credential: string;
  auth: string;
}

export async function registerPhone(relay: Relay, extra: Record<string, unknown> = {}): Promise<Phone> {
  const token = deviceToken();
  const reply = await relay.call('POST', '/v1/installations', {
    body: { bundle_id: TOPIC, device_token: token, environment: 'production', ...extra },
  });
  if (reply.status !== 201) throw new Error(`registration failed: ${reply.status} ${reply.text}`);
  const body = reply.json as { installation: { id: string }; credential: string };
  return { id: body.installation.id, credential: body.credential, auth: `Bearer ${body.credential}`, token };
}

export async function pairHost(
  relay: Relay,
  phone: Phone,
  pairing: Record<string, unknown> = {},
  claim: Record<string, unknown> = {},
): Promise<Host> {
  const created = await relay.call('POST', `/v1/installations/${phone.id}/pairings`, {
    auth: phone.auth,
    body: pairing,
  });
  if (created.status !== 201) throw new Error(`pairing failed: ${created.status} ${created.text}`);
  const code = (created.json as { pairing_code: string }).pairing_code;
  const claimed = await relay.call('POST', '/v1/pairings/claim', { body: { pairing_code: code, ...claim } });
  if (claimed.status !== 200) throw new Error(`claim failed: ${claimed.status} ${claimed.text}`);
  const body = claimed.json as { installation_id: string; gateway_id: string; credential: string };
  return {
    installationId: body.installation_id,
    gatewayId: body.gateway_id,
    credential: body.credential,
    auth: `Bearer ${body.credential}`,
  };
}

let eventCounter = 0;
export function eventId(prefix = 'conform'): string {
  eventCounter += 1;
  return `${prefix}-${process.pid}-${eventCounter}-${Date.now()}`;
}

/** The relay's settings that make a whole file's traffic fit in its budgets. */
export const ROOMY_BUDGETS: Record<string, string> = {
  RELAY_REGISTRATIONS_PER_MINUTE: '100000',
  RELAY_EVENTS_PER_MINUTE: '100000',
  RELAY_DEVICE_CHANGES_PER_MINUTE: '100000',
  RELAY_DECISION_ACTIONS_PER_MINUTE: '100000',
  RELAY_REVOCATIONS_PER_MINUTE: '100000',
};
