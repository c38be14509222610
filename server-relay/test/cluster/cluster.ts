/**
 * Several relay processes as one relay, as operators run it (README, Several replicas): N real relay
 * processes on one fresh PostgreSQL database and one Redis key prefix of their own (so parallel runs
 * never meet), and a round-robin HTTP balancer in the test process in front of them.
 *
 * PostgreSQL comes from acquirePostgres (DATABASE_URL_PG, else an embedded server); Redis from
 * REDIS_URL_TEST, else 127.0.0.1:6379. Both are required: an unreachable Redis fails the file, it never
 * skips it.
 */
import { randomBytes } from 'node:crypto';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { freePort, startServerProcess, type ServerProcess } from '@conduit/contracts/testing';
import { acquirePostgres } from '@conduit/prisma/testing/postgres';
import { baseEnv, request, type CallOptions, type CapturedPush, type Reply } from '../conformance/relay.js';
import { RELAY_DIR } from '../support/relay-process.js';

const MAIN = path.join(RELAY_DIR, 'src/main.ts');

export const TEST_REDIS_URL = process.env.REDIS_URL_TEST?.trim() || 'redis://127.0.0.1:6379';

/** A Redis client for a test; fails (never skips) when Redis does not answer within 3 s. */
export async function connectTestRedis(url = TEST_REDIS_URL): Promise<Redis> {
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 3_000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.ping();
  } catch (error) {
    client.disconnect();
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`Redis at ${url} is unreachable (${reason}); the cluster tests need it (REDIS_URL_TEST)`);
  }
  return client;
}

/** A key prefix no other run uses. */
export function uniquePrefix(): string {
  return `conduit-relay-test:${Date.now().toString(36)}-${randomBytes(4).toString('hex')}:`;
}

/** Deletes every key under `prefix` (a run's leftovers). */
export async function deleteKeys(client: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
    cursor = next;
    if (keys.length > 0) await client.del(...keys);
  } while (cursor !== '0');
}

export interface Replica {
  url: string;
  process: ServerProcess;
  call: (method: string, urlPath: string, options?: CallOptions) => Promise<Reply>;
}

export interface Cluster {
  replicas: Replica[];
  /** The round-robin balancer's URL: request n goes to replica n mod N. */
  url: string;
  call: (method: string, urlPath: string, options?: CallOptions) => Promise<Reply>;
  databaseUrl: string;
  keyPrefix: string;
  /** What the replicas printed, for a failing test's message. */
  output: () => string;
  /** Every push the replicas sent (APNs in capture mode, one file for all), in the order written. */
  captures: () => CapturedPush[];
  /** kill -9 of one replica; resolves once it has exited. The balancer skips it from then on. */
  kill: (replica: Replica) => Promise<void>;
  stop: () => Promise<void>;
}

/**
 * A balancer that sends each request (not each connection: fetch keeps connections alive) to the next
 * replica, passing headers through untouched like a TCP balancer, so X-Forwarded-For stays the test's.
 */
async function startBalancer(targets: () => string[]): Promise<{ url: string; close: () => Promise<void> }> {
  let next = 0;
  const server = http.createServer((incoming, outgoing) => {
    const list = targets();
    const target = new URL(list[next % list.length] ?? '');
    next += 1;
    const forwarded = http.request(
      {
        host: target.hostname,
        port: target.port,
        method: incoming.method,
        path: incoming.url,
        headers: incoming.headers,
      },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      },
    );
    forwarded.on('error', () => {
      if (!outgoing.headersSent) outgoing.writeHead(502, { 'content-type': 'application/json' });
      outgoing.end('{"error":"balancer_upstream_failed"}');
    });
    incoming.pipe(forwarded);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function startReplica(env: NodeJS.ProcessEnv): Promise<Replica> {
  const port = await freePort();
  const started = await startServerProcess({
    name: 'relay replica',
    command: process.execPath,
    args: ['--import', 'tsx', MAIN],
    cwd: RELAY_DIR,
    env: { ...env, HOST: '127.0.0.1', PORT: String(port) },
    port,
    ready: async (base) => (await fetch(`${base}/healthz`)).ok,
    pollMs: 50,
    timeoutMs: 60_000,
  });
  return {
    url: started.url,
    process: started,
    call: (method, urlPath, options) => request(started.url, method, urlPath, options),
  };
}

/** Resolves once `ready()` holds, polling every 10 ms; fails with `what` after `timeoutMs`. */
export async function waitFor(
  ready: () => boolean | Promise<boolean>,
  what: string | (() => string),
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await ready())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${typeof what === 'string' ? what : what()}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export interface ClusterOptions {
  replicas?: number;
  /** Extra environment for every replica (limits, CONDUIT_CHECK_REPLIES…). */
  env?: Record<string, string>;
  /** Redis the replicas use (default: the test Redis). */
  redisUrl?: string;
}

/**
 * Starts the cluster: the first replica alone (it applies the migrations), then the others together;
 * resolves once every replica's credential index is loaded, so a test sees the index, not the database.
 */
export async function startCluster(options: ClusterOptions = {}): Promise<Cluster> {
  const redisUrl = options.redisUrl ?? TEST_REDIS_URL;
  const redis = await connectTestRedis(options.redisUrl === undefined ? TEST_REDIS_URL : redisUrl);
  const database = await acquirePostgres();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'relay-cluster-'));
  const keyPrefix = uniquePrefix();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...baseEnv(dir),
    DATABASE_URL: database.url,
    REDIS_URL: redisUrl,
    REDIS_KEY_PREFIX: keyPrefix,
    ...options.env,
  };
  const replicas: Replica[] = [];
  let balancer: { url: string; close: () => Promise<void> } | undefined;
  const stop = async () => {
    await balancer?.close();
    await Promise.all(replicas.map((replica) => stopProcess(replica.process.child, replica.process.exited)));
    await deleteKeys(redis, keyPrefix).catch(() => undefined);
    redis.disconnect();
    await database.release();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    replicas.push(await startReplica(env));
    replicas.push(...(await Promise.all(Array.from({ length: (options.replicas ?? 3) - 1 }, () => startReplica(env)))));
    for (const replica of replicas) {
      await waitFor(() => replica.process.output().includes('credential index loaded'), 'the credential index');
    }
    balancer = await startBalancer(() =>
      replicas
        .filter((replica) => replica.process.child.exitCode === null && replica.process.child.signalCode === null)
        .map((replica) => replica.url),
    );
  } catch (error) {
    await stop();
    throw error;
  }
  const url = balancer.url;
  return {
    replicas,
    url,
    call: (method, urlPath, callOptions) => request(url, method, urlPath, callOptions),
    databaseUrl: database.url,
    keyPrefix,
    output: () => replicas.map((replica, i) => `--- replica ${i + 1}\n${replica.process.output()}`).join('\n'),
    captures: () => {
      const capturePath = path.join(dir, 'apns.jsonl');
      return existsSync(capturePath)
        ? readFileSync(capturePath, 'utf8')
            .split('\n')
            .filter((line) => line !== '')
            .map((line) => JSON.parse(line) as CapturedPush)
        : [];
    },
    kill: async (replica) => {
      replica.process.child.kill('SIGKILL');
      await replica.process.exited;
    },
    stop,
  };
}

/** SIGTERM, then SIGKILL if it has not exited within 5 s. */
export async function stopProcess(child: ChildProcess, exited: Promise<unknown>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

/** A redis-server of the test's own on a free port, without persistence, that the test can stop and start. */
export interface OwnRedis {
  url: string;
  start: () => Promise<void>;
  stop: () => Promise<void>;
}

export async function ownRedis(): Promise<OwnRedis> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  let exited: Promise<unknown> = Promise.resolve();
  const url = `redis://127.0.0.1:${port}`;
  return {
    url,
    start: async () => {
      const started = spawn(
        'redis-server',
        ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
        {
          stdio: 'ignore',
        },
      );
      child = started;
      exited = new Promise((resolve) => started.once('exit', resolve));
      started.once('error', () => undefined);
      const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      probe.on('error', () => undefined);
      await waitFor(async () => {
        try {
          if (probe.status !== 'ready') await probe.connect();
          return (await probe.ping()) === 'PONG';
        } catch {
          return false;
        }
      }, `redis-server on port ${port}`);
      probe.disconnect();
    },
    stop: async () => {
      if (child) await stopProcess(child, exited);
      child = undefined;
    },
  };
}
