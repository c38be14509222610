/**
 * `npm run bench:relay` — throughput and latency of a real relay process (APNs in capture mode,
 * budgets raised by env) with 1,000 and 50,000 stored installations, on SQLite and PostgreSQL.
 * Prints one table; not a test (figures depend on the machine).
 *
 *   POST /v1/events     response.ready, valid, distinct event ids, spread over up to 10,000 paired
 *                       gateways (the per-installation limit of 30 events/min is part of the wire, not
 *                       raised), so every measured event is accepted
 *   POST /v1/installations  registrations, distinct X-Forwarded-For (TRUST_PROXY=1)
 *   POST /v1/pairings/claim claims of pre-created codes (written to the database before the relay
 *                       starts, so each claim also pays a cold installation lookup)
 *
 * Options: BENCH_DURATION_S (default 10), BENCH_CONNECTIONS (default 16), BENCH_STORES=sqlite,postgres,
 * BENCH_INSTALLATIONS=1000,50000, DATABASE_URL_PG (else the local server at 127.0.0.1:5432, else
 * embedded PostgreSQL), BENCH_RELAY_NODE_FLAGS (node flags of the relay process only, space-separated,
 * e.g. `--cpu-prof --cpu-prof-dir=/tmp/relay-prof` to profile it).
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { createDb, migrate } from '@conduit/prisma';
import { acquirePostgres } from '@conduit/prisma/testing/postgres';
import { normalizePreferences } from '../src/domain/preferences.js';
import { pairingCodeHash } from '../src/domain/pairing-code.js';
import { startRelayProcess } from '../test/support/relay-process.js';

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const STORES = (process.env.BENCH_STORES ?? 'sqlite,postgres').split(',') as ('sqlite' | 'postgres')[];
const SIZES = (process.env.BENCH_INSTALLATIONS ?? '1000,50000').split(',').map(Number);
const RELAY_NODE_FLAGS = (process.env.BENCH_RELAY_NODE_FLAGS ?? '').split(' ').filter(Boolean);
/**
 * Installations that get a gateway. The relay keeps its fixed per-installation event window (30 a
 * minute, API.md §1.1) — no bench-only bypass — so the event run spreads over many installations and
 * stops at EVENTS_PER_RUN requests, well inside every window: the figures are for accepted events only.
 */
const pairedFor = (installations: number) => Math.min(installations, 10_000);
const EVENTS_PER_RUN = (installations: number) => Math.min(pairedFor(installations) * 28, 40_000);
const TOPIC = 'com.example.bench';
const sha = (value: string) => createHash('sha256').update(value).digest('hex');

interface Seeded {
  gatewayCredentials: string[];
  pairingCodes: string[];
}

/** Writes `count` installations, the first pairedFor(count) with one gateway each, plus pairing codes to claim. */
async function seed(url: string, count: number, codes: number): Promise<Seeded> {
  await migrate(url);
  const db = createDb(url);
  const preferences = JSON.stringify(normalizePreferences({}));
  const now = new Date();
  const ids: string[] = [];
  const gatewayCredentials: string[] = [];
  const gatewaySecretHash = sha('bench-gateway-secret-'.padEnd(43, 'x'));
  for (let start = 0; start < count; start += 2000) {
    const rows = [];
    for (let i = start; i < Math.min(count, start + 2000); i += 1) {
      const id = randomUUID();
      ids.push(id);
      rows.push({
        id,
        bundleId: TOPIC,
        deviceToken: randomBytes(32).toString('hex'),
        voipToken: null,
        watchVoipToken: null,
        environment: 'production',
        deviceSecretHash: sha(randomBytes(8).toString('hex')),
        active: true,
        preferences,
        createdAt: now,
        updatedAt: now,
      });
    }
    await db.installation.createMany({ data: rows });
  }
  const gateways = ids.slice(0, pairedFor(count)).map((installationId) => {
    const id = randomUUID();
    gatewayCredentials.push(`${installationId}.${id}.${'bench-gateway-secret-'.padEnd(43, 'x')}`);
    return { installationId, id, name: 'bench', secretHash: gatewaySecretHash, createdAt: now };
  });
  await db.gateway.createMany({ data: gateways });
  const pairingCodes: string[] = [];
  const pairings = [];
  for (let i = 0; i < codes; i += 1) {
    const code = `BENCH${String(i).padStart(5, '0')}`;
    pairingCodes.push(code);
    pairings.push({
      codeHash: pairingCodeHash(code) ?? '',
      installationId: ids[pairedFor(count) + (i % (count - pairedFor(count)))] ?? '',
      expiresAt: new Date(Date.now() + 60 * 60_000),
    });
  }
  await db.pairing.createMany({ data: pairings });
  await db.$disconnect();
  return { gatewayCredentials, pairingCodes };
}

interface Figures {
  requestsPerS: number;
  p50: number;
  p99: number;
  non2xx: number;
  /** CPU time the relay process spent per request: independent of what else the machine runs. */
  cpuMsPerRequest: number;
}

const TICK_MS = 10; // USER_HZ = 100 on Linux

/** utime + stime of a process, in ms (Linux /proc). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
}

async function run(pid: number, options: autocannon.Options): Promise<Figures> {
  const before = cpuMs(pid);
  const started = performance.now();
  let lastResponse = started;
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon({ connections: CONNECTIONS, duration: DURATION_S, ...options }, (error, done) =>
      error ? reject(error instanceof Error ? error : new Error(String(error))) : resolve(done),
    );
    instance.on('response', () => (lastResponse = performance.now()));
  });
  const spent = cpuMs(pid) - before;
  return {
    // Total over the time to the last response: autocannon stops on its next whole-second tick, so a
    // run bounded by `amount` would otherwise count up to a second of idling (and `duration` with it).
    requestsPerS: Math.round(result.requests.total / Math.max(0.001, (lastResponse - started) / 1000)),
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    cpuMsPerRequest: Math.round((spent / Math.max(1, result.requests.total)) * 1000) / 1000,
  };
}

let ip = 0;
const nextIp = () => {
  ip += 1;
  return `10.${(ip >> 16) & 255}.${(ip >> 8) & 255}.${ip & 255}`;
};

async function database(kind: 'sqlite' | 'postgres'): Promise<{ url: string; release: () => Promise<void> }> {
  if (kind === 'sqlite') {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'relay-bench-'));
    return { url: path.join(dir, 'relay.sqlite'), release: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  return acquirePostgres({
    ...process.env,
    DATABASE_URL_PG: process.env.DATABASE_URL_PG ?? 'postgresql://postgres@127.0.0.1:5432/postgres',
  });
}

async function bench(
  kind: 'sqlite' | 'postgres',
  installations: number,
  withWrites: boolean,
): Promise<Record<string, Figures>> {
  const db = await database(kind);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'relay-bench-capture-'));
  try {
    const seeded = await seed(db.url, installations, withWrites ? 50_000 : 0);
    const relay = await startRelayProcess(
      {
        PUBLIC_URL: 'https://bench.example.test',
        APNS_TOPIC: TOPIC,
        APNS_CAPTURE_PATH: path.join(dir, 'capture.jsonl'),
        TRUST_PROXY: '1',
        ...(kind === 'sqlite'
          ? { DATA_PATH: db.url, DATABASE_URL: '' }
          : { DATA_PATH: path.join(dir, 'x'), DATABASE_URL: db.url }),
        RELAY_MAX_INSTALLATIONS: '10000000',
        RELAY_EVENTS_PER_MINUTE: '100000000',
        RELAY_REGISTRATIONS_PER_MINUTE: '100000000',
        RELAY_DEVICE_CHANGES_PER_MINUTE: '100000000',
        RELAY_MAX_EVENT_IDS: '10000000',
      },
      120_000,
      RELAY_NODE_FLAGS,
    );
    // Silence the access log: the bench measures the relay, not a pipe to a terminal.
    relay.child.stdout?.removeAllListeners('data');
    relay.child.stdout?.resume();
    const out: Record<string, Figures> = {};
    try {
      let n = 0;
      const pid = relay.child.pid ?? 0;
      // Warm-up: one event per gateway, so the measured run sees the steady state (credentials cached
      // after their first lookup) rather than 1,000 first lookups. Uses 1 of each installation's 30/min.
      let w = 0;
      await autocannon({
        url: `${relay.url}/v1/events`,
        method: 'POST',
        connections: CONNECTIONS,
        amount: seeded.gatewayCredentials.length,
        requests: [
          {
            setupRequest: (request) => {
              const credential = seeded.gatewayCredentials[w % seeded.gatewayCredentials.length] ?? '';
              w += 1;
              return {
                ...request,
                headers: { 'content-type': 'application/json', authorization: `Bearer ${credential}` },
                body: JSON.stringify({ type: 'response.ready', event_id: `bench-warmup-${w}` }),
              };
            },
          },
        ],
      });
      out.events = await run(pid, {
        amount: EVENTS_PER_RUN(installations),
        url: `${relay.url}/v1/events`,
        method: 'POST',
        requests: [
          {
            setupRequest: (request) => {
              n += 1;
              const credential = seeded.gatewayCredentials[n % seeded.gatewayCredentials.length] ?? '';
              return {
                ...request,
                headers: { 'content-type': 'application/json', authorization: `Bearer ${credential}` },
                body: JSON.stringify({
                  type: 'response.ready',
                  event_id: `bench-event-${n}`,
                  session_id: 'bench-session',
                }),
              };
            },
          },
        ],
      });
      if (withWrites) {
        out.registration = await run(pid, {
          url: `${relay.url}/v1/installations`,
          method: 'POST',
          requests: [
            {
              setupRequest: (request) => ({
                ...request,
                headers: { 'content-type': 'application/json', 'x-forwarded-for': nextIp() },
                body: JSON.stringify({
                  bundle_id: TOPIC,
                  device_token: randomBytes(32).toString('hex'),
                  environment: 'production',
                }),
              }),
            },
          ],
        });
        let c = 0;
        out.claim = await run(pid, {
          url: `${relay.url}/v1/pairings/claim`,
          method: 'POST',
          requests: [
            {
              setupRequest: (request) => {
                const code = seeded.pairingCodes[c % seeded.pairingCodes.length] ?? '';
                c += 1;
                return {
                  ...request,
                  headers: { 'content-type': 'application/json', 'x-forwarded-for': nextIp() },
                  body: JSON.stringify({ pairing_code: code, gateway_name: 'bench' }),
                };
              },
            },
          ],
        });
      }
    } finally {
      relay.child.kill('SIGTERM');
      await relay.exited;
    }
    return out;
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await db.release();
  }
}

const rows: string[] = [];
for (const kind of STORES) {
  for (const installations of SIZES) {
    const figures = await bench(kind, installations, installations === 50_000);
    for (const [route, f] of Object.entries(figures)) {
      const line = `| ${kind} | ${installations.toLocaleString('en-US')} | ${route} | ${f.requestsPerS} | ${f.p50} | ${f.p99} | ${f.cpuMsPerRequest} | ${f.non2xx} |`;
      rows.push(line);
      console.log(line);
    }
  }
}
console.log(
  `\n${CONNECTIONS} connections, ${DURATION_S} s per run, ${os.cpus().length} CPUs, Node ${process.version}, load average ${os
    .loadavg()
    .map((value) => value.toFixed(1))
    .join(' ')}`,
);
console.log('| store | installations | route | req/s | p50 ms | p99 ms | relay CPU ms/req | non-2xx |');
console.log('|---|---|---|---|---|---|---|---|');
for (const row of rows) console.log(row);
