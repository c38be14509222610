/**
 * `npm run bench:relay-cold` — the event path with gateways the relay has not seen since it started,
 * the load of issue 22: a store of 50,000 installations, each paired with one gateway; the compiled
 * relay (`node dist/main.js`, build first) on SQLite with APNS_MODE=accept; POST /v1/events
 * (response.ready, distinct ids) from 16 connections.
 *
 *   cold   one event for each of 25,000 gateways, round-robin: every event is its gateway's first
 *   warm   the first 1,000 of them again, 25 events each (with the cold one, 26 of the fixed 30 a
 *          minute per installation, API.md §1.1, so every event is accepted and the limit is never the
 *          bottleneck; the process-wide budgets are raised by env)
 *
 * Prints accepted events/s (over the time to the last response), p50/p99 latency, the relay's CPU per
 * event (which hardly depends on what else the machine runs), boot time (spawn → first 200 from
 * /healthz), the time until the credential index is loaded (its log line), and the relay's resident
 * memory right after the runs (and its peak) and once idle, with its V8 heap figures. Not a test: the figures depend on the machine and its load,
 * printed with them.
 *
 * Options: BENCH_INSTALLATIONS (50,000), BENCH_GATEWAYS (25,000), BENCH_WARM_GATEWAYS (1,000),
 * BENCH_CONNECTIONS (16), BENCH_IDLE_S (45: how long RSS is watched after the runs), BENCH_RELAY_MAIN (another build's main.js, to compare builds; with a relay
 * that has no credential index set BENCH_INDEX_WAIT=0), BENCH_RELAY_NODE_FLAGS (node flags of the relay
 * process, e.g. `--cpu-prof --cpu-prof-dir=/tmp/relay-prof`).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { freePort } from '@conduit/contracts/testing';
import { seedPairedInstallations } from './paired-store.js';

const RELAY_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const MAIN = process.env.BENCH_RELAY_MAIN ?? path.join(RELAY_DIR, 'dist/main.js');
const INSTALLATIONS = Number(process.env.BENCH_INSTALLATIONS ?? 50_000);
const GATEWAYS = Number(process.env.BENCH_GATEWAYS ?? 25_000);
const WARM_GATEWAYS = Number(process.env.BENCH_WARM_GATEWAYS ?? 1_000);
/** Per warm gateway; with its cold event, inside the fixed 30 a minute per installation. */
const WARM_EVENTS_EACH = 25;
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const WAIT_FOR_INDEX = process.env.BENCH_INDEX_WAIT !== '0';
const RELAY_NODE_FLAGS = (process.env.BENCH_RELAY_NODE_FLAGS ?? '').split(' ').filter(Boolean);
const TOPIC = 'com.example.bench';
/** Seconds the bench watches the relay's RSS after the runs, idle. */
const IDLE_S = Number(process.env.BENCH_IDLE_S ?? 45);
const TICK_MS = 10; // USER_HZ = 100 on Linux
/** So the bench can read the relay's own heap figures (`GET /metrics`) after the runs. */
const METRICS_TOKEN = randomBytes(24).toString('hex');

/** Where the relay's memory is, from its process metrics: V8 heap (used / committed), off-heap. */
async function heapBreakdown(url: string): Promise<string> {
  const text = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } }).then((r) =>
    r.text(),
  );
  const mb = (name: string) => {
    const value = new RegExp(`^${name} ([0-9.e+]+)`, 'm').exec(text)?.[1];
    return value === undefined ? '?' : (Number(value) / 2 ** 20).toFixed(0);
  };
  const spaces = [...text.matchAll(/^nodejs_heap_space_size_total_bytes\{space="(\w+)"\} ([0-9.e+]+)/gm)]
    .map(([, space, bytes]) => `${space} ${(Number(bytes) / 2 ** 20).toFixed(0)}`)
    .join(', ');
  return (
    `V8 heap ${mb('nodejs_heap_size_used_bytes')} MB used of ${mb('nodejs_heap_size_total_bytes')} MB ` +
    `(${spaces}); external ${mb('nodejs_external_memory_bytes')} MB`
  );
}

function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
}

function memoryMb(pid: number): { rss: number; peak: number } {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(text)?.[1] ?? NaN);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}

interface Figures {
  acceptedPerS: number;
  p50: number;
  p99: number;
  /** Answers other than 2xx, by status (0: no answer). */
  refused: Record<number, number>;
  cpuMsPerEvent: number;
}

/** `amount` events, the n-th from gateway `pick(n)`, each with a distinct id. */
async function drive(
  url: string,
  pid: number,
  label: string,
  amount: number,
  pick: (n: number) => string,
): Promise<Figures> {
  let n = 0;
  const before = cpuMs(pid);
  const started = performance.now();
  let lastResponse = started;
  const refused: Record<number, number> = {};
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: `${url}/v1/events`,
        method: 'POST',
        connections: CONNECTIONS,
        amount,
        requests: [
          {
            setupRequest: (request) => {
              const credential = pick(n);
              n += 1;
              return {
                ...request,
                headers: { 'content-type': 'application/json', authorization: `Bearer ${credential}` },
                // Event ids are 8 to 128 characters (API.md): a short one would be refused 400 invalid_event_id.
                body: JSON.stringify({ type: 'response.ready', event_id: `bench-${label}-${n}`, session_id: 'bench' }),
              };
            },
          },
        ],
      },
      (error, done) => (error ? reject(error instanceof Error ? error : new Error(String(error))) : resolve(done)),
    );
    instance.on('response', (_client, status: number) => {
      lastResponse = performance.now();
      if (status < 200 || status > 299) refused[status] = (refused[status] ?? 0) + 1;
    });
  });
  if (result.errors > 0) refused[0] = result.errors;
  const accepted = result.requests.total - result.non2xx;
  return {
    // Over the time to the last response: autocannon stops on its next whole-second tick.
    acceptedPerS: Math.round(accepted / Math.max(0.001, (lastResponse - started) / 1000)),
    p50: result.latency.p50,
    p99: result.latency.p99,
    refused,
    cpuMsPerEvent: Math.round(((cpuMs(pid) - before) / Math.max(1, result.requests.total)) * 1000) / 1000,
  };
}

async function main(): Promise<void> {
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'relay-cold-bench-'));
  const load = os.loadavg();
  try {
    const dataPath = path.join(scratch, 'relay.sqlite');
    process.stdout.write(`seeding ${INSTALLATIONS.toLocaleString('en')} paired installations… `);
    const credentials = await seedPairedInstallations(`file:${dataPath}`, INSTALLATIONS, TOPIC);
    console.log('done');
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const spawnedAt = performance.now();
    const child = spawn(process.execPath, [...RELAY_NODE_FLAGS, MAIN], {
      cwd: RELAY_DIR,
      // As production starts it: nothing inherited but PATH and HOME.
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? os.tmpdir(),
        HOST: '127.0.0.1',
        PORT: String(port),
        DATA_PATH: dataPath,
        PUBLIC_URL: 'https://bench.example.test',
        APNS_TOPIC: TOPIC,
        APNS_MODE: 'accept',
        RELAY_EVENTS_PER_MINUTE: '100000000',
        RELAY_MAX_EVENT_IDS: '10000000',
        METRICS_TOKEN,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    // Read line by line until the index's line, then drained unread: parsing 50,000 access-log lines
    // would take CPU from the relay on the same cores.
    const lines = createInterface({ input: child.stdout });
    const indexLoaded = new Promise<Record<string, unknown>>((resolve) => {
      lines.on('line', (line) => {
        if (!line.includes('credential index')) return;
        lines.close();
        child.stdout.resume();
        resolve(JSON.parse(line) as Record<string, unknown>);
      });
    });
    if (!WAIT_FOR_INDEX) {
      lines.close();
      child.stdout.resume();
    }
    try {
      const pid = child.pid ?? 0;
      let bootMs = 0;
      for (;;) {
        if (child.exitCode !== null) throw new Error(`relay exited with ${child.exitCode}: ${stderr}`);
        const status = await fetch(`${url}/healthz`).then(
          (response) => response.status,
          () => 0,
        );
        if (status === 200) {
          bootMs = performance.now() - spawnedAt;
          break;
        }
        if (performance.now() - spawnedAt > 60_000) throw new Error(`relay not ready in 60 s: ${stderr}`);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      const index = WAIT_FOR_INDEX ? await indexLoaded : undefined;
      const indexMs = performance.now() - spawnedAt;
      if (index && index.message !== 'credential index loaded')
        throw new Error(`index not loaded: ${JSON.stringify(index)}`);
      const bootRss = memoryMb(pid).rss;
      const bootHeap = await heapBreakdown(url);
      const cold = await drive(url, pid, 'cold', GATEWAYS, (n) => credentials[n % GATEWAYS] ?? '');
      const warm = await drive(
        url,
        pid,
        'warm',
        WARM_GATEWAYS * WARM_EVENTS_EACH,
        (n) => credentials[n % WARM_GATEWAYS] ?? '',
      );
      const memory = memoryMb(pid);
      const heap = await heapBreakdown(url);
      // What the relay keeps once the burst is over: V8's memory reducer collects and shrinks the heap
      // some seconds into an idle spell; the lowest RSS over the next IDLE_S seconds, and when.
      let idleRss = memory.rss;
      let idleAfterS = 0;
      for (let second = 1; second <= IDLE_S; second += 1) {
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        const rss = memoryMb(pid).rss;
        if (rss < idleRss) [idleRss, idleAfterS] = [rss, second];
      }
      const idleHeap = await heapBreakdown(url);
      console.log(
        `\nNode ${process.version}, ${os.cpus().length} CPUs, ${CONNECTIONS} connections, ` +
          `${INSTALLATIONS.toLocaleString('en')} installations, load average ${load.map((v) => v.toFixed(1)).join(' ')} → ` +
          `${os
            .loadavg()
            .map((v) => v.toFixed(1))
            .join(' ')}`,
      );
      console.log(`relay ${path.relative(process.cwd(), MAIN)}`);
      console.log(
        `boot to /healthz ${bootMs.toFixed(0)} ms; credential index ${
          index
            ? `loaded ${indexMs.toFixed(0)} ms after spawn (${String(index.ms)} ms loading ${String(index.installations)} installations, ${String(index.gateways)} gateways)`
            : 'not waited for'
        }; RSS ${bootRss.toFixed(0)} MB then; ${bootHeap}`,
      );
      console.log('| run | events | accepted/s | p50 ms | p99 ms | relay CPU ms/event | refused |');
      console.log('|---|---|---|---|---|---|---|');
      for (const [name, events, f] of [
        [`cold (${GATEWAYS.toLocaleString('en')} gateways, one event each)`, GATEWAYS, cold],
        [`warm (${WARM_GATEWAYS.toLocaleString('en')} gateways again)`, WARM_GATEWAYS * WARM_EVENTS_EACH, warm],
      ] as const) {
        console.log(
          `| ${name} | ${events.toLocaleString('en')} | ${f.acceptedPerS} | ${f.p50} | ${f.p99} | ${f.cpuMsPerEvent} | ${JSON.stringify(f.refused)} |`,
        );
      }
      console.log(`RSS right after the runs ${memory.rss.toFixed(0)} MB (peak ${memory.peak.toFixed(0)} MB); ${heap}`);
      console.log(
        `RSS once idle: lowest over ${IDLE_S} s ${idleRss.toFixed(0)} MB, ${idleAfterS} s after the runs; ${idleHeap}`,
      );
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

await main();
