/**
 * `npm run bench:host`: figures for the host service (printed, not asserted).
 *
 * 1. hook → relay latency (p50/p99): a real relay process on loopback (APNs capture mode) and the
 *    host service; time from the turn-end hook reaching the service to the relay's 202 for its event.
 *    The relay allows 30 events a minute per installation, so the samples are spread over several
 *    paired profiles.
 * 2. hook command round trip (p50/p95): each bridge setup-hermes can install (sh + curl, Node), run
 *    as Hermes runs the command it wrote, process start included, with the load average and the
 *    bridge processes' CPU time (which load does not move).
 * 3. queue throughput with a slow relay (every POST takes RELAY_DELAY_MS), and how long hooks wait.
 * 4. enqueue p99 inside the service (DeliveryQueue.enqueue with the spool on).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { createRelayClient } from '@conduit/sdk/relay';
import { buildHost } from '../src/app.js';
import { chooseHookRunner, findOnPath, hookRunner, type BridgeKind } from '../src/bridge/bridge-script.js';
import { writeRuntimeFile } from '../src/bridge/runtime-file.js';
import { mcpUrl, setupHermes } from '../src/bridge/setup-hermes.js';
import { systemClock } from '../src/clock.js';
import { DeliveryQueue } from '../src/delivery/delivery-queue.js';
import { Spool } from '../src/delivery/spool.js';
import { defaultLimits } from '../src/limits.js';
import { silentLogger } from '../src/log.js';
import { eventId } from '../src/notifier/event-id.js';
import { VOICE_LIVE_PREFIX } from '../src/notifier/voice-note.js';
import { buildEvent } from '../src/notifier/events.js';
import { runPush, defaultPushDeps } from '../src/pairing/cli.js';
import { freePort } from '@conduit/contracts/testing';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const PROFILES = Number(process.env.BENCH_PROFILES ?? 8);
const EVENTS_PER_PROFILE = Number(process.env.BENCH_EVENTS_PER_PROFILE ?? 25);
const HOOK_RUNS = Number(process.env.BENCH_HOOK_RUNS ?? 60);
const SLOW_EVENTS = Number(process.env.BENCH_SLOW_EVENTS ?? 400);
const RELAY_DELAY_MS = Number(process.env.BENCH_RELAY_DELAY_MS ?? 200);
const ENQUEUES = Number(process.env.BENCH_ENQUEUES ?? 20_000);

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}
const ms = (v: number) => `${v.toFixed(2)} ms`;

async function startRelay(dataDir: string): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn(path.join(ROOT, 'node_modules/.bin/tsx'), [path.join(ROOT, 'server-relay/src/main.ts')], {
    env: {
      ...process.env,
      HOST: '127.0.0.1',
      PORT: String(port),
      DATA_PATH: path.join(dataDir, 'relay.sqlite'),
      PUBLIC_URL: 'https://localhost',
      APNS_TOPIC: 'dev.conduit.bench',
      APNS_MODE: 'accept',
      APNS_CAPTURE_PATH: path.join(dataDir, 'capture.jsonl'),
    },
    stdio: 'ignore',
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(`${url}/healthz`)).ok) return { url, child };
    } catch {
      // starting
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('relay did not start');
}

async function pairProfile(relayUrl: string, hermesHome: string, profile: string, index: number): Promise<void> {
  const relay = createRelayClient({ baseUrl: relayUrl });
  const registered = await relay.POST('/v1/installations', {
    body: {
      bundle_id: 'dev.conduit.bench',
      device_token: index.toString(16).padStart(2, '0').repeat(32),
      environment: 'production',
    },
  });
  if (!registered.data) throw new Error(`register: ${registered.response.status}`);
  const minted = await relay.POST('/v1/installations/{id}/pairings', {
    params: { path: { id: registered.data.installation.id } },
    headers: { authorization: `Bearer ${registered.data.credential}` },
    body: {},
  });
  if (!minted.data) throw new Error(`pairing: ${minted.response.status}`);
  const deps = { ...defaultPushDeps(), out: () => {}, err: () => {} };
  const code = await runPush(
    ['pair', minted.data.pairing_code, '--relay-url', relayUrl, '--home', hermesHome, '--profile', profile],
    deps,
  );
  if (code !== 0) throw new Error(`pair exit ${code}`);
}

async function hookToRelayLatency(dataDir: string): Promise<void> {
  const hermesHome = path.join(dataDir, 'hermes');
  const relay = await startRelay(dataDir);
  const profiles = Array.from({ length: PROFILES }, (_, i) => `bench${i}`);
  for (const [i, name] of profiles.entries()) {
    mkdirSync(path.join(hermesHome, 'profiles', name), { recursive: true });
    await pairProfile(relay.url, hermesHome, name, i + 1);
  }
  const answered = new Map<string, number>();
  const relayFetch: typeof fetch = async (input, init) => {
    const request = input instanceof Request ? input : new Request(input, init);
    const body = request.method === 'POST' ? ((await request.clone().json()) as { event_id?: string }) : {};
    const response = await fetch(request, init);
    if (body.event_id) answered.set(body.event_id, performance.now());
    return response;
  };
  const host = await buildHost({
    host: '127.0.0.1',
    port: 0,
    loadedVersion: '0.1.0',
    readDiskVersion: () => '0.1.0',
    hermesHome,
    stateDir: path.join(hermesHome, 'conduit-host'),
    fronting: { mode: 'standalone', bearerToken: 'bench-token-0123456789' },
    limits: { ...defaultLimits(), replyHoldMs: 600_000 },
    clock: systemClock,
    log: silentLogger,
    relayFetch,
  });
  const url = await host.app.listen({ host: '127.0.0.1', port: 0 });
  const started = new Map<string, number>();
  const post = (payload: unknown) =>
    fetch(`${url}/_conduit/hook`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-conduit-hook-token': host.hookToken },
      body: JSON.stringify(payload),
    });
  for (let n = 0; n < EVENTS_PER_PROFILE; n++) {
    for (const profile of profiles) {
      const session = `bench-${profile}-${n}`;
      await post({
        hook_event_name: 'post_llm_call',
        session_id: session,
        profile,
        extra: { turn_id: 't', assistant_response: `reply ${n}` },
      });
      started.set(eventId('response', 't', session), performance.now());
      await post({
        hook_event_name: 'on_session_end',
        session_id: session,
        profile,
        extra: { turn_id: 't', completed: true },
      });
    }
    await host.queue.whenIdle();
  }
  await host.queue.whenIdle();
  const latencies = [...started].flatMap(([id, t0]) => {
    const t1 = answered.get(id);
    return t1 === undefined ? [] : [t1 - t0];
  });
  console.log(
    `hook → relay latency (${latencies.length} events, ${PROFILES} paired profiles, relay on loopback, SQLite):`,
  );
  console.log(`  p50 ${ms(percentile(latencies, 50))}   p99 ${ms(percentile(latencies, 99))}`);

  await writeRuntimeFile(path.join(hermesHome, 'conduit-host'), { url, token: host.hookToken, pid: process.pid });
  await hookRoundTrip(hermesHome);
  await host.app.close();
  relay.child.kill('SIGTERM');
}

/** CPU time (user + system, ms) of this process's waited-for children, from /proc (Linux). */
function childrenCpuMs(): number {
  try {
    const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]?.split(' ') ?? [];
    // Fields after the command: state is [0], so utime…cstime (14–17 in proc(5)) are [11]…[14].
    return ((Number(fields[13]) + Number(fields[14])) * 1000) / 100;
  } catch {
    return NaN;
  }
}

/**
 * The hook command round trip as Hermes runs it: setup-hermes writes each bridge into a profile's
 * config.yaml, and the command found there is run split into argv (no shell), the payload on stdin,
 * process start included. The two bridges alternate run by run, so a change of load hits both alike;
 * the CPU time of the bridge processes is the figure that load does not move.
 */
async function hookRoundTrip(hermesHome: string): Promise<void> {
  const stateDir = path.join(hermesHome, 'conduit-host');
  const installed = chooseHookRunner({ pathList: process.env.PATH, nodePath: process.execPath }).runner.kind;
  const kinds = [...new Set<BridgeKind>([installed, 'sh', 'node'])].filter(
    (kind) => kind === 'node' || findOnPath('curl', process.env.PATH) !== null,
  );
  const commands = new Map<BridgeKind, string[]>();
  for (const kind of kinds) {
    const profileHome = path.join(hermesHome, 'profiles', `setup-${kind}`);
    mkdirSync(profileHome, { recursive: true });
    await setupHermes({
      profileHome,
      stateDir,
      runner: hookRunner(kind, kind === 'sh' ? '/bin/sh' : process.execPath),
      mcp: { url: mcpUrl(9119, `setup-${kind}`), token: 'bench-mcp-token-0123456789abcdef0123456' },
      remove: false,
      now: new Date(),
    });
    const config = parse(readFileSync(path.join(profileHome, 'config.yaml'), 'utf8')) as {
      hooks: Record<string, { command: string }[]>;
    };
    const command = config.hooks.pre_llm_call?.[0]?.command;
    if (!command) throw new Error(`setup-hermes wrote no pre_llm_call hook for ${kind}`);
    commands.set(kind, command.split(' '));
  }
  // A voice turn's first message, so the service answers with context: a bridge that never reached
  // the service (and exits 0 silently, as it must) cannot pass for a fast one.
  const payload = JSON.stringify({
    hook_event_name: 'pre_llm_call',
    session_id: 's',
    profile: 'bench0',
    extra: { user_message: `${VOICE_LIVE_PREFIX}] hello` },
  });
  const rounds = new Map<BridgeKind, number[]>(kinds.map((kind) => [kind, []]));
  const cpu = new Map<BridgeKind, number>(kinds.map((kind) => [kind, 0]));
  const load0 = os.loadavg()[0] ?? NaN;
  for (let i = 0; i < HOOK_RUNS; i++) {
    for (const kind of kinds) {
      const [file, ...args] = commands.get(kind)!;
      const cpu0 = childrenCpuMs();
      const t0 = performance.now();
      const answered = await new Promise<boolean>((resolve) => {
        const child = spawn(file!, args, { stdio: ['pipe', 'pipe', 'ignore'] });
        let out = '';
        child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
        child.on('close', (code) => resolve(code === 0 && out.includes('"context"')));
        child.stdin.end(payload);
      });
      rounds.get(kind)!.push(performance.now() - t0);
      cpu.set(kind, cpu.get(kind)! + childrenCpuMs() - cpu0);
      if (!answered) throw new Error(`the ${kind} bridge did not bring back the service's answer`);
    }
  }
  const load1 = os.loadavg()[0] ?? NaN;
  console.log(
    `hook command round trip (${HOOK_RUNS} runs per bridge, alternating, the command setup-hermes writes, process start included; load ${load0.toFixed(1)} → ${load1.toFixed(1)}):`,
  );
  for (const kind of kinds) {
    const times = rounds.get(kind)!;
    const label = kind === 'sh' ? 'sh + curl' : 'node    ';
    console.log(
      `  ${label}  p50 ${ms(percentile(times, 50))}   p95 ${ms(percentile(times, 95))}   bridge CPU ${ms(cpu.get(kind)! / HOOK_RUNS)} per run${kind === installed ? '   (installed here)' : ''}`,
    );
  }
}

async function slowRelayThroughput(dataDir: string): Promise<void> {
  let accepted = 0;
  const slow = http.createServer((req, res) => {
    req.resume();
    req.on('end', () =>
      setTimeout(() => {
        accepted++;
        res.writeHead(202, { 'content-type': 'application/json' }).end('{"accepted":true,"delivered":true}');
      }, RELAY_DELAY_MS),
    );
  });
  await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
  const relayUrl = `http://127.0.0.1:${(slow.address() as AddressInfo).port}`;
  const home = path.join(dataDir, 'slow');
  mkdirSync(home, { recursive: true });
  const { writeFileSync } = await import('node:fs');
  writeFileSync(
    path.join(home, 'conduit-push.json'),
    JSON.stringify({
      credential: '11111111-2222-4333-8444-555555555555.66666666-7777-4888-9999-aaaaaaaaaaaa.c2VjcmV0',
      installation_id: '11111111-2222-4333-8444-555555555555',
      gateway_id: '66666666-7777-4888-9999-aaaaaaaaaaaa',
      relay_url: relayUrl,
    }),
    { mode: 0o600 },
  );
  const host = await buildHost({
    host: '127.0.0.1',
    port: 0,
    loadedVersion: '0.1.0',
    readDiskVersion: () => '0.1.0',
    hermesHome: home,
    stateDir: path.join(home, 'conduit-host'),
    fronting: { mode: 'standalone', bearerToken: 'bench-token-0123456789' },
    limits: { ...defaultLimits(), queueCapacity: SLOW_EVENTS * 2, replyHoldMs: 600_000 },
    clock: systemClock,
    log: silentLogger,
  });
  const url = await host.app.listen({ host: '127.0.0.1', port: 0 });
  const waits: number[] = [];
  const t0 = performance.now();
  for (let i = 0; i < SLOW_EVENTS; i++) {
    const session = `slow-${i}`;
    for (const payload of [
      {
        hook_event_name: 'post_llm_call',
        session_id: session,
        profile: 'default',
        extra: { turn_id: 't', assistant_response: 'x' },
      },
      {
        hook_event_name: 'on_session_end',
        session_id: session,
        profile: 'default',
        extra: { turn_id: 't', completed: true },
      },
    ]) {
      const h0 = performance.now();
      await fetch(`${url}/_conduit/hook`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-conduit-hook-token': host.hookToken },
        body: JSON.stringify(payload),
      });
      waits.push(performance.now() - h0);
    }
  }
  const hooksDone = performance.now() - t0;
  await host.queue.whenIdle();
  const total = (performance.now() - t0) / 1000;
  console.log(
    `queue with a slow relay (${RELAY_DELAY_MS} ms per POST, ${SLOW_EVENTS} events, concurrency ${defaultLimits().deliveryConcurrency}):`,
  );
  console.log(
    `  ${(accepted / total).toFixed(1)} events/s delivered; all hooks answered in ${ms(hooksDone)}; hook wait p99 ${ms(percentile(waits, 99))}`,
  );
  await host.app.close();
  slow.closeAllConnections();
  slow.close();
}

async function enqueueP99(dataDir: string): Promise<void> {
  const never = { send: () => new Promise<never>(() => {}) };
  const queue = new DeliveryQueue(
    never,
    { capacity: ENQUEUES + 10, maxAgeMs: 86_400_000, concurrency: 1, backoff: { baseMs: 1000, maxMs: 1000 } },
    systemClock,
    silentLogger,
    new Spool(path.join(dataDir, 'enqueue-spool'), silentLogger),
  );
  await queue.start();
  const profile = { name: 'default', home: dataDir };
  const times: number[] = [];
  for (let i = 0; i < ENQUEUES; i++) {
    const event = buildEvent({
      eventId: `response:${i.toString().padStart(8, '0')}`,
      type: 'response.ready',
      pluginVersion: '0.1.0',
      body: 'x',
    });
    const t0 = performance.now();
    queue.enqueue(profile, event);
    times.push(performance.now() - t0);
  }
  console.log(`enqueue inside the service (${ENQUEUES} events, spool on):`);
  console.log(`  p50 ${ms(percentile(times, 50))}   p99 ${ms(percentile(times, 99))}`);
  await queue.stop();
}

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'conduit-host-bench-'));
try {
  console.log(
    `host service benchmark on ${os.cpus().length} cores, Node ${process.version}, load ${os.loadavg()[0]?.toFixed(1)}`,
  );
  await enqueueP99(dataDir);
  await hookToRelayLatency(dataDir);
  await slowRelayThroughput(dataDir);
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
process.exit(0);
