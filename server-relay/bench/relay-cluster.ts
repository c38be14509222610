/**
 * `npm run bench:relay-cluster` — the event path of 1 and of 3 relay replicas on one PostgreSQL and one
 * Redis (issue 22 item 4), with the load of `bench:relay-cold`: a store of paired installations, POST
 * /v1/events (response.ready, distinct ids) from 16 connections, first one event for each of the cold
 * gateways (round-robin), then the first warm gateways again (25 events each, inside the fixed 30 a
 * minute per installation). With 3 replicas the connections are spread over them (client-side round
 * robin, as a TCP balancer would), so no proxy takes CPU from the replicas.
 *
 * Prints accepted events/s (over the time to the last response), p50/p99 latency, the replicas' CPU per
 * event (all replicas together) and per replica, and Redis' CPU per event (read from /proc when Redis
 * runs on this machine). On 2 cores three replicas share the cores the one replica had, so the gain is
 * bounded by the machine: the figure to read is CPU per event, which says what a core buys.
 *
 * PostgreSQL: DATABASE_URL_PG (a server; a fresh database is made and dropped), else an embedded one.
 * Redis: BENCH_REDIS_URL, else REDIS_URL_TEST, else redis://127.0.0.1:6379 (keys under a prefix of this
 * run, deleted at the end). Options: BENCH_INSTALLATIONS (50,000), BENCH_GATEWAYS (25,000),
 * BENCH_WARM_GATEWAYS (1,000), BENCH_CONNECTIONS (16), BENCH_REPLICAS (`1,3`), BENCH_RELAY_MAIN (the relay's
 * main module; default the compiled dist/main.js, build first; `src`: src/main.ts through tsx).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { Redis } from 'ioredis';
import { freePort } from '@conduit/contracts/testing';
import { acquirePostgres } from '@conduit/prisma/testing/postgres';
import { seedPairedInstallations } from './paired-store.js';

const RELAY_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** The compiled relay, as production runs it (build first); `src` runs src/main.ts through tsx instead. */
const MAIN = process.env.BENCH_RELAY_MAIN ?? path.join(RELAY_DIR, 'dist/main.js');
const INSTALLATIONS = Number(process.env.BENCH_INSTALLATIONS ?? 50_000);
const GATEWAYS = Number(process.env.BENCH_GATEWAYS ?? 25_000);
const WARM_GATEWAYS = Number(process.env.BENCH_WARM_GATEWAYS ?? 1_000);
const WARM_EVENTS_EACH = 25;
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const REPLICA_COUNTS = (process.env.BENCH_REPLICAS ?? '1,3').split(',').map(Number);
const REDIS_URL = process.env.BENCH_REDIS_URL ?? process.env.REDIS_URL_TEST ?? 'redis://127.0.0.1:6379';
const TOPIC = 'com.example.bench';
const TICK_MS = 10; // USER_HZ = 100 on Linux

function cpuMs(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
  } catch {
    return Number.NaN;
  }
}

interface Replica {
  url: string;
  child: ChildProcess;
  exited: Promise<void>;
}

async function startReplica(env: NodeJS.ProcessEnv): Promise<Replica> {
  const port = await freePort();
  const args =
    MAIN === 'src' ? ['--import', 'tsx', '--conditions=development', path.join(RELAY_DIR, 'src/main.ts')] : [MAIN];
  const child = spawn(process.execPath, args, {
    cwd: RELAY_DIR,
    env: { ...env, HOST: '127.0.0.1', PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  let stdout = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  // Read until the credential index is loaded, then drained unread (access-log lines cost CPU to parse).
  const onData = (chunk: Buffer) => {
    stdout += chunk.toString();
    if (stdout.includes('credential index loaded')) {
      child.stdout?.off('data', onData);
      child.stdout?.resume();
    }
  };
  child.stdout?.on('data', onData);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const started = performance.now();
  while (!stdout.includes('credential index loaded')) {
    if (child.exitCode !== null) throw new Error(`replica exited with ${child.exitCode}: ${stderr}`);
    if (performance.now() - started > 120_000) throw new Error(`replica not ready in 120 s: ${stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return { url, child, exited };
}

interface Figures {
  acceptedPerS: number;
  p50: number;
  p99: number;
  refused: Record<number, number>;
  cpuMsPerEvent: number;
  cpuMsPerEventPerReplica: number[];
  redisCpuMsPerEvent: number;
}

/** `amount` events over the replicas (connection i to replica i mod N), the n-th from `pick(n)`. */
async function drive(
  replicas: Replica[],
  redisPid: number | undefined,
  label: string,
  amount: number,
  pick: (n: number) => string,
): Promise<Figures> {
  let n = 0;
  const pids = replicas.map((replica) => replica.child.pid ?? 0);
  const before = pids.map(cpuMs);
  const redisBefore = redisPid ? cpuMs(redisPid) : Number.NaN;
  const started = performance.now();
  let lastResponse = started;
  const refused: Record<number, number> = {};
  const perReplica = replicas.map(
    (_, i) => Math.floor(amount / replicas.length) + (i < amount % replicas.length ? 1 : 0),
  );
  const results = await Promise.all(
    replicas.map(
      (replica, i) =>
        new Promise<autocannon.Result>((resolve, reject) => {
          const instance = autocannon(
            {
              url: `${replica.url}/v1/events`,
              method: 'POST',
              connections: Math.max(1, Math.round(CONNECTIONS / replicas.length)),
              amount: perReplica[i] ?? 0,
              requests: [
                {
                  setupRequest: (request) => {
                    const credential = pick(n);
                    n += 1;
                    return {
                      ...request,
                      headers: { 'content-type': 'application/json', authorization: `Bearer ${credential}` },
                      body: JSON.stringify({ type: 'response.ready', event_id: `bench-${label}-${n}` }),
                    };
                  },
                },
              ],
            },
            (error, done) =>
              error ? reject(error instanceof Error ? error : new Error(String(error))) : resolve(done),
          );
          instance.on('response', (_client, status: number) => {
            lastResponse = performance.now();
            if (status < 200 || status > 299) refused[status] = (refused[status] ?? 0) + 1;
          });
        }),
    ),
  );
  const total = results.reduce((sum, result) => sum + result.requests.total, 0);
  const accepted = results.reduce((sum, result) => sum + result.requests.total - result.non2xx, 0);
  const errors = results.reduce((sum, result) => sum + result.errors, 0);
  if (errors > 0) refused[0] = errors;
  // Latency over all replicas: the worst replica's percentile bounds the whole.
  const worst = (pick: (result: autocannon.Result) => number) => Math.max(...results.map(pick));
  const spent = pids.map((pid, i) => cpuMs(pid) - (before[i] ?? 0));
  const per = (ms: number) => Math.round((ms / Math.max(1, total)) * 1000) / 1000;
  return {
    acceptedPerS: Math.round(accepted / Math.max(0.001, (lastResponse - started) / 1000)),
    p50: worst((result) => result.latency.p50),
    p99: worst((result) => result.latency.p99),
    refused,
    cpuMsPerEvent: per(spent.reduce((sum, ms) => sum + ms, 0)),
    cpuMsPerEventPerReplica: spent.map((ms, i) => Math.round((ms / Math.max(1, perReplica[i] ?? 1)) * 1000) / 1000),
    redisCpuMsPerEvent: redisPid ? per(cpuMs(redisPid) - redisBefore) : Number.NaN,
  };
}

async function deleteKeys(client: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) await client.del(...keys);
  } while (cursor !== '0');
}

async function main(): Promise<void> {
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  const info = await redis.info('server');
  const redisPid = Number(/process_id:(\d+)/.exec(info)?.[1]);
  const redisLocal = Number.isFinite(redisPid) && cpuMs(redisPid) >= 0 ? redisPid : undefined;
  const database = await acquirePostgres();
  // Required by the configuration; the store is DATABASE_URL's (a JSON store here would be imported).
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'relay-cluster-bench-'));
  const load = os.loadavg();
  const rows: string[] = [];
  try {
    process.stdout.write(`seeding ${INSTALLATIONS.toLocaleString('en')} paired installations in PostgreSQL… `);
    const credentials = await seedPairedInstallations(database.url, INSTALLATIONS, TOPIC);
    console.log('done');
    for (const count of REPLICA_COUNTS) {
      const keyPrefix = `conduit-relay-bench:${randomBytes(4).toString('hex')}:`;
      const env: NodeJS.ProcessEnv = {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? os.tmpdir(),
        DATA_PATH: path.join(scratch, 'relay.sqlite'),
        DATABASE_URL: database.url,
        REDIS_URL,
        REDIS_KEY_PREFIX: keyPrefix,
        PUBLIC_URL: 'https://bench.example.test',
        APNS_TOPIC: TOPIC,
        APNS_MODE: 'accept',
        RELAY_EVENTS_PER_MINUTE: '100000000',
        RELAY_MAX_EVENT_IDS: '10000000',
      };
      const replicas: Replica[] = [];
      try {
        replicas.push(await startReplica(env));
        for (let i = 1; i < count; i += 1) replicas.push(await startReplica(env));
        const cold = await drive(
          replicas,
          redisLocal,
          `cold${count}`,
          GATEWAYS,
          (n) => credentials[n % GATEWAYS] ?? '',
        );
        const warm = await drive(
          replicas,
          redisLocal,
          `warm${count}`,
          WARM_GATEWAYS * WARM_EVENTS_EACH,
          (n) => credentials[n % WARM_GATEWAYS] ?? '',
        );
        for (const [name, events, f] of [
          [`cold (${GATEWAYS.toLocaleString('en')} gateways, one event each)`, GATEWAYS, cold],
          [`warm (${WARM_GATEWAYS.toLocaleString('en')} gateways again)`, WARM_GATEWAYS * WARM_EVENTS_EACH, warm],
        ] as const) {
          rows.push(
            `| ${count} | ${name} | ${events.toLocaleString('en')} | ${f.acceptedPerS} | ${f.p50} | ${f.p99} | ` +
              `${f.cpuMsPerEvent} | ${f.cpuMsPerEventPerReplica.join(' / ')} | ${f.redisCpuMsPerEvent} | ${JSON.stringify(f.refused)} |`,
          );
        }
      } finally {
        for (const replica of replicas) replica.child.kill('SIGTERM');
        await Promise.all(replicas.map((replica) => replica.exited));
        await deleteKeys(redis, keyPrefix);
      }
    }
    console.log(
      `\nNode ${process.version}, ${os.cpus().length} CPUs, ${CONNECTIONS} connections, ` +
        `${INSTALLATIONS.toLocaleString('en')} installations, PostgreSQL + Redis (${redisLocal ? 'local' : 'remote'}), ` +
        `load average ${load.map((v) => v.toFixed(1)).join(' ')} → ${os
          .loadavg()
          .map((v) => v.toFixed(1))
          .join(' ')}`,
    );
    console.log(`relay ${MAIN === 'src' ? 'src/main.ts through tsx' : path.relative(process.cwd(), MAIN)}`);
    console.log(
      '| replicas | run | events | accepted/s | p50 ms | p99 ms | relay CPU ms/event (all) | per replica | Redis CPU ms/event | refused |',
    );
    console.log('|---|---|---|---|---|---|---|---|---|---|');
    for (const row of rows) console.log(row);
  } finally {
    redis.disconnect();
    await database.release();
    rmSync(scratch, { recursive: true, force: true });
  }
}

await main();
