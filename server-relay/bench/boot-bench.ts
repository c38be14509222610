/**
 * `npm run bench:boot` — how fast the compiled servers start and how much memory they hold when idle,
 * run exactly as production runs them: `node <server>/dist/main.js`, no loader, no flags, no
 * NODE_OPTIONS (build first: `npm run build`). Prints one table; not a test (figures depend on the
 * machine and on its load, which is printed with them).
 *
 *   relay boot      spawn → first 200 from GET /healthz, with an empty SQLite store and with
 *                   BENCH_BOOT_INSTALLATIONS (default 50,000) installations, each paired with one
 *                   gateway (the credential index the relay builds at boot holds both)
 *   boot CPU        user + system CPU time of the server process at that moment (what the start
 *                   costs, unlike wall time mostly independent of what else the machine runs)
 *   idle RSS        resident memory after BENCH_BOOT_IDLE_S (default 5) seconds of idle following
 *                   the first answer, and the peak (VmHWM) until then
 *   host, voice     the host service (GET /api/plugins/conduit_push/capabilities) and the voice
 *                   gateway (GET /v1/realtime/discovery, 401 without the key) the same way
 *   from sources    the relay's old way, `node --import tsx src/main.ts`, for comparison
 *
 * Options: BENCH_BOOT_RUNS (default 5; the median and the range are printed), BENCH_BOOT_INSTALLATIONS,
 * BENCH_BOOT_IDLE_S, BENCH_BOOT_SOURCES=0 to skip the tsx comparison, BENCH_BOOT_REALTIME=1 to start
 * each server under `chrt -r 10` (real-time scheduling, root or CAP_SYS_NICE): on a machine busy with
 * other work it stands in for an idle one, since the server then waits for no other process's CPU.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '@conduit/contracts/testing';
import { seedPairedInstallations } from './paired-store.js';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const RUNS = Number(process.env.BENCH_BOOT_RUNS ?? 5);
const INSTALLATIONS = Number(process.env.BENCH_BOOT_INSTALLATIONS ?? 50_000);
const IDLE_S = Number(process.env.BENCH_BOOT_IDLE_S ?? 5);
const WITH_SOURCES = process.env.BENCH_BOOT_SOURCES !== '0';
const REALTIME = process.env.BENCH_BOOT_REALTIME === '1';
const TOPIC = 'com.example.bench';
const CLOCK_TICKS_PER_S = 100; // USER_HZ on Linux

interface Run {
  readyMs: number;
  cpuMs: number;
  idleRssMb: number;
  peakRssMb: number;
}

interface Server {
  name: string;
  /** Node arguments after the executable. */
  args: string[];
  cwd: string;
  env: Record<string, string>;
  readyPath: string;
  /** Ready when the answer has this status (the voice gateway's discovery needs its key: 401). */
  readyStatus: number;
}

function procStatus(pid: number): { rssMb: number; peakMb: number } {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(text)?.[1] ?? NaN);
  return { rssMb: kb('VmRSS') / 1024, peakMb: kb('VmHWM') / 1024 };
}

function procCpuMs(pid: number): number {
  // Fields after the parenthesised command name; utime and stime are the 14th and 15th of the line.
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_S;
}

/** The environment of a production start: nothing inherited that could add a loader or a condition. */
function cleanEnv(extra: Record<string, string>): Record<string, string> {
  return { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? os.tmpdir(), ...extra };
}

async function bootOnce(server: Server): Promise<Run> {
  const port = await freePort();
  const started = performance.now();
  // chrt execs node in its own process, so the pid read below is the server's.
  const [command, ...args] = REALTIME
    ? ['chrt', '-r', '10', process.execPath, ...server.args]
    : [process.execPath, ...server.args];
  const child = spawn(command ?? process.execPath, args, {
    cwd: server.cwd,
    env: { ...server.env, ...portEnv(server.name, port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    let readyMs = 0;
    let cpuMs = 0;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${server.name} exited with ${child.exitCode}: ${stderr}`);
      const status = await fetch(`http://127.0.0.1:${port}${server.readyPath}`).then(
        (response) => response.status,
        () => 0,
      );
      if (status === server.readyStatus) {
        readyMs = performance.now() - started;
        cpuMs = procCpuMs(child.pid ?? 0);
        break;
      }
      if (performance.now() - started > 60_000) throw new Error(`${server.name} not ready in 60 s: ${stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await new Promise((resolve) => setTimeout(resolve, IDLE_S * 1000));
    const memory = procStatus(child.pid ?? 0);
    return { readyMs, cpuMs, idleRssMb: memory.rssMb, peakRssMb: memory.peakMb };
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
}

function portEnv(name: string, port: number): Record<string, string> {
  if (name.startsWith('relay')) return { PORT: String(port) };
  if (name.startsWith('host')) return { CONDUIT_HOST_PORT: String(port) };
  return { HERMES_REALTIME_PORT: String(port) };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;
const range = (values: number[], digits: number) =>
  `${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)}`;

function relayServer(name: string, dataPath: string, fromSources = false): Server {
  return {
    name,
    args: fromSources ? ['--conditions=development', '--import', 'tsx', 'src/main.ts'] : ['dist/main.js'],
    cwd: path.join(REPO, 'server-relay'),
    env: cleanEnv({
      HOST: '127.0.0.1',
      DATA_PATH: dataPath,
      PUBLIC_URL: 'https://relay.example.test',
      APNS_TOPIC: TOPIC,
      APNS_MODE: 'accept',
    }),
    readyPath: '/healthz',
    readyStatus: 200,
  };
}

async function main(): Promise<void> {
  for (const workspace of ['server-relay', 'server-dashboard', 'server-voice']) {
    if (!existsSync(path.join(REPO, workspace, 'dist/main.js'))) {
      throw new Error(`${workspace}/dist/main.js is missing: run \`npm run build\` first`);
    }
  }
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'conduit-boot-bench-'));
  try {
    const seeded = path.join(scratch, 'seeded.sqlite');
    process.stdout.write(`seeding ${INSTALLATIONS.toLocaleString('en')} installations… `);
    await seedPairedInstallations(`file:${seeded}`, INSTALLATIONS, TOPIC);
    console.log('done');
    const hermesHome = path.join(scratch, 'hermes');
    mkdirSync(hermesHome, { recursive: true });
    const servers: { server: Server; freshStore?: boolean }[] = [
      { server: relayServer('relay, empty store', path.join(scratch, 'empty', 'relay.sqlite')), freshStore: true },
      { server: relayServer(`relay, ${INSTALLATIONS.toLocaleString('en')} installations`, seeded) },
      ...(WITH_SOURCES
        ? [
            {
              server: relayServer(
                'relay, empty store, from sources (tsx)',
                path.join(scratch, 'src', 'relay.sqlite'),
                true,
              ),
              freshStore: true,
            },
          ]
        : []),
      {
        server: {
          name: 'host service',
          args: ['dist/main.js'],
          cwd: path.join(REPO, 'server-dashboard'),
          env: cleanEnv({ HERMES_HOME: hermesHome, CONDUIT_HOST_BIND: '127.0.0.1' }),
          readyPath: '/api/plugins/conduit_push/capabilities',
          readyStatus: 200,
        },
      },
      {
        server: {
          name: 'voice gateway',
          args: ['dist/main.js'],
          cwd: path.join(REPO, 'server-voice'),
          env: cleanEnv({ HERMES_REALTIME_HOST: '127.0.0.1', HERMES_REALTIME_API_KEY: 'bench-key' }),
          readyPath: '/v1/realtime/discovery',
          readyStatus: 401,
        },
      },
    ];
    const rows: string[][] = [];
    const load = os.loadavg()[0]?.toFixed(2);
    for (const { server, freshStore } of servers) {
      const runs: Run[] = [];
      // One unmeasured start warms the file cache (a production restart finds it warm too).
      for (let i = 0; i <= RUNS; i += 1) {
        if (freshStore) rmSync(path.dirname(server.env.DATA_PATH ?? ''), { recursive: true, force: true });
        const run = await bootOnce(server);
        if (i > 0) runs.push(run);
      }
      const ready = runs.map((r) => r.readyMs);
      const cpu = runs.map((r) => r.cpuMs);
      const rss = runs.map((r) => r.idleRssMb);
      const peak = runs.map((r) => r.peakRssMb);
      rows.push([
        server.name,
        `${median(ready).toFixed(0)} (${range(ready, 0)})`,
        `${median(cpu).toFixed(0)} (${range(cpu, 0)})`,
        `${median(rss).toFixed(1)} (${range(rss, 1)})`,
        `${median(peak).toFixed(1)}`,
      ]);
      console.log(`  ${server.name}: ${rows.at(-1)?.slice(1).join(' | ')}`);
    }
    const header = [
      'server',
      'ready ms, median (range)',
      'boot CPU ms',
      `idle RSS MB after ${IDLE_S} s`,
      'peak RSS MB',
    ];
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]?.length ?? 0)));
    const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ');
    console.log(
      `\nNode ${process.version}, ${os.cpus().length} CPUs, ${RUNS} runs each${REALTIME ? ', servers at real-time priority' : ''}, load average ${load} → ${os.loadavg()[0]?.toFixed(2)}`,
    );
    console.log(line(header));
    for (const row of rows) console.log(line(row));
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

await main();
