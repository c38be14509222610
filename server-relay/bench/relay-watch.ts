/**
 * `npm run bench:relay-watch` — the Watch features under load, against a real relay process.
 *
 * 1. Audio: 50 concurrent bridges, each carrying 48 KB/s in both directions (960-byte messages every
 *    20 ms, i.e. 24 kHz PCM16 mono). Each message carries its send time; the receiver records the
 *    one-way latency. The same load sent straight from sender to receiver over loopback WebSockets
 *    (no relay) is the baseline; "added" is the difference. Relay CPU comes from /proc/<pid>/stat.
 * 2. Watch calls: round trips through the relay with a host that answers each call at once, one Watch at
 *    a time and ten at once; the same exchanges against a bare hold-open server are the baseline.
 *
 * Figures are printed; nothing is asserted (benchmarks are not tests).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import WebSocket, { WebSocketServer } from 'ws';
import { createRelayClient } from '@conduit/sdk/relay';
import { freePort } from '@conduit/contracts/testing';

const BRIDGES = Number(process.env.BENCH_BRIDGES ?? 50);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const MESSAGE_BYTES = 960;
const INTERVAL_MS = 20;
const CALLS_PER_GRANT = Number(process.env.BENCH_CALLS_PER_GRANT ?? 30);
const CALL_GRANTS = Number(process.env.BENCH_CALL_GRANTS ?? 10);
const TOPIC = 'com.example.conduit';

const root = resolve(fileURLToPath(import.meta.url), '../../..');
const dir = mkdtempSync(join(tmpdir(), 'bench-relay-watch-'));

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function summary(values: number[]): { p50: number; p99: number; max: number; n: number } {
  const sorted = [...values].sort((a, b) => a - b);
  return {
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    max: sorted.at(-1) ?? Number.NaN,
    n: sorted.length,
  };
}

const fmt = (ms: number): string => `${ms.toFixed(2)} ms`;

/** CPU seconds (user + system) a process and its descendants (tsx runs the relay in a child node) have used. */
function cpuSeconds(pid: number): number {
  const stats = readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .flatMap((name) => {
      try {
        // Fields after "(comm) ": state, ppid, …; utime and stime are the 12th and 13th.
        const fields = readFileSync(`/proc/${name}/stat`, 'utf8').split(') ')[1]!.split(' ');
        return [{ pid: Number(name), ppid: Number(fields[1]), cpu: (Number(fields[11]) + Number(fields[12])) / 100 }];
      } catch {
        return [];
      }
    });
  const tree = new Set([pid]);
  for (let grew = true; grew;) {
    grew = false;
    for (const s of stats) {
      if (tree.has(s.ppid) && !tree.has(s.pid)) {
        tree.add(s.pid);
        grew = true;
      }
    }
  }
  return stats.filter((s) => tree.has(s.pid)).reduce((sum, s) => sum + s.cpu, 0);
}

/** Random filler, drawn once: the bench's own CPU goes to sending, not to the random generator. */
const FILLER = randomBytes(MESSAGE_BYTES);

/** A message: a non-zero first byte, the send time (ns, 8 bytes), filler. */
function stamped(): Buffer {
  const message = Buffer.from(FILLER);
  message[0] = 1;
  message.writeBigUInt64BE(process.hrtime.bigint(), 1);
  return message;
}

function latencyOf(message: Buffer): number {
  return Number(process.hrtime.bigint() - message.readBigUInt64BE(1)) / 1e6;
}

let sent = 0;

/**
 * Sends 48 KB/s from `from` for SECONDS; resolves when done. Sender `index` of `count` starts at its
 * own phase of the 20 ms period: real Watches and hosts do not share a clock, so their frames do not
 * all arrive in one burst (the baseline runs with the same phases).
 */
function pump(from: WebSocket, index: number, count: number): Promise<void> {
  return new Promise((done) => {
    setTimeout(
      () => {
        const timer = setInterval(() => {
          sent += 1;
          from.send(stamped());
        }, INTERVAL_MS);
        setTimeout(() => {
          clearInterval(timer);
          done();
        }, SECONDS * 1000);
      },
      (INTERVAL_MS * index) / count,
    );
  });
}

function connect(url: string, authorization?: string): Promise<WebSocket> {
  return new Promise((done, fail) => {
    const ws = new WebSocket(url, { headers: authorization ? { authorization } : {}, perMessageDeflate: false });
    ws.once('open', () => done(ws));
    ws.once('unexpected-response', (_req, res) => fail(new Error(`upgrade refused: ${res.statusCode}`)));
    ws.once('error', fail);
  });
}

async function startRelay(): Promise<{ child: ChildProcess; baseUrl: string; port: number }> {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  writeFileSync(join(dir, 'apns.p8'), privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  const port = await freePort();
  const child = spawn(join(root, 'node_modules/.bin/tsx'), [join(root, 'server-relay/src/main.ts')], {
    cwd: root,
    env: {
      ...process.env,
      HOST: '127.0.0.1',
      PORT: String(port),
      PUBLIC_URL: 'https://relay.example',
      DATA_PATH: join(dir, 'relay.sqlite'),
      DATABASE_URL: '',
      APNS_TOPIC: TOPIC,
      APNS_KEY_PATH: join(dir, 'apns.p8'),
      APNS_KEY_ID: 'BENCHKEY01',
      APNS_TEAM_ID: 'BENCHTEAM1',
      APNS_MODE: 'accept',
      // The bench spreads Watch calls over many client addresses, as many Watches would.
      TRUST_PROXY: '1',
      RELAY_MAX_WATCH_GRANTS_PER_GATEWAY: '64',
      RELAY_MAX_WATCH_AUDIO_BRIDGES_PER_GATEWAY: '64',
      RELAY_WATCH_CALLS_PER_MINUTE: '100000',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
  const baseUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`relay exited ${child.exitCode}: ${stderr}`);
    if (Date.now() > deadline) throw new Error(`relay did not start: ${stderr}`);
    if (
      await fetch(`${baseUrl}/healthz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
    await new Promise((r) => setTimeout(r, 200));
  }
  return { child, baseUrl, port };
}

/** Registers a phone and pairs a host with it; returns the gateway's Authorization header. */
async function pairedGateway(relay: ReturnType<typeof createRelayClient>): Promise<string> {
  const registered = await relay.POST('/v1/installations', {
    body: { bundle_id: TOPIC, device_token: randomBytes(32).toString('hex'), environment: 'production' },
  });
  const credential = registered.data!.credential;
  const pairing = await relay.POST('/v1/installations/{id}/pairings', {
    params: { path: { id: credential.split('.')[0]! } },
    headers: { authorization: `Bearer ${credential}` },
    body: {},
  });
  const claimed = await relay.POST('/v1/pairings/claim', { body: { pairing_code: pairing.data!.pairing_code } });
  return `Bearer ${claimed.data!.credential}`;
}

async function openGrant(relay: ReturnType<typeof createRelayClient>, gateway: string, audio: boolean) {
  const key = randomBytes(32).toString('base64url');
  const { data, response } = await relay.POST('/v1/watch-tools/grants', {
    headers: { authorization: gateway },
    body: {
      watch_key_sha256: createHash('sha256').update(key, 'ascii').digest('hex'),
      ttl_s: 1800,
      max_calls: 120,
      audio,
    },
  });
  if (response.status !== 201) throw new Error(`grant refused: ${response.status}`);
  return { gid: data!.grant_id, watchAuthorization: `Bearer ${key}` };
}

async function audioThroughRelay(
  relay: ReturnType<typeof createRelayClient>,
  gateways: string[],
  port: number,
  pid: number,
) {
  const pairs: { host: WebSocket; watch: WebSocket }[] = [];
  for (let i = 0; i < BRIDGES; i += 1) {
    const gateway = gateways[i % gateways.length]!;
    const { gid, watchAuthorization } = await openGrant(relay, gateway, true);
    const base = `ws://127.0.0.1:${port}/v1/watch-audio/${gid}`;
    const host = await connect(`${base}/host`, gateway);
    const watch = await connect(`${base}/watch`, watchAuthorization);
    pairs.push({ host, watch });
  }
  await new Promise((r) => setTimeout(r, 200));
  const up: number[] = [];
  const down: number[] = [];
  let bytes = 0;
  for (const { host, watch } of pairs) {
    host.on('message', (m: Buffer) => {
      if (m[0] === 0) return; // relay notices
      bytes += m.length;
      up.push(latencyOf(m));
    });
    watch.on('message', (m: Buffer) => {
      bytes += m.length;
      down.push(latencyOf(m));
    });
  }
  const cpuBefore = cpuSeconds(pid);
  sent = 0;
  const started = performance.now();
  await Promise.all(
    pairs.flatMap(({ host, watch }, i) => [pump(host, 2 * i, BRIDGES * 2), pump(watch, 2 * i + 1, BRIDGES * 2)]),
  );
  await new Promise((r) => setTimeout(r, 300));
  const elapsedS = (performance.now() - started) / 1000;
  const cpu = (cpuSeconds(pid) - cpuBefore) / elapsedS;
  for (const { host, watch } of pairs) {
    watch.close();
    host.close();
  }
  return { latency: summary([...up, ...down]), bytesPerS: bytes / elapsedS, cpuPercent: cpu * 100, sent };
}

/** The same message pattern straight from sender to receiver over loopback: the baseline. */
async function audioDirect() {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false });
  await new Promise<void>((r) => server.once('listening', () => r()));
  const latencies: number[] = [];
  const receivers: WebSocket[] = [];
  server.on('connection', (socket) => {
    receivers.push(socket);
    socket.on('message', (m: Buffer) => latencies.push(latencyOf(m)));
  });
  const { port } = server.address() as { port: number };
  const senders: WebSocket[] = [];
  for (let i = 0; i < BRIDGES * 2; i += 1) senders.push(await connect(`ws://127.0.0.1:${port}`));
  await Promise.all(senders.map((sender, i) => pump(sender, i, senders.length)));
  await new Promise((r) => setTimeout(r, 300));
  for (const s of senders) s.close();
  await new Promise<void>((r) => server.close(() => r()));
  return summary(latencies);
}

let ipCounter = 0;

/**
 * CALL_GRANTS grants (a grant takes at most 30 calls a minute), `concurrency` of them at a time, each
 * with its own host and CALLS_PER_GRANT calls in sequence. Concurrency 1 is the latency of one
 * Watch; higher values add queueing on this 2-core machine, where bench and relay share the CPUs.
 */
async function watchCalls(relay: ReturnType<typeof createRelayClient>, gateways: string[], concurrency: number) {
  const roundTrips: number[] = [];
  const indexes = Array.from({ length: CALL_GRANTS }, (_v, i) => i);
  for (let start = 0; start < indexes.length; start += concurrency) {
    await Promise.all(indexes.slice(start, start + concurrency).map((i) => oneGrant(relay, gateways, i, roundTrips)));
  }
  return summary(roundTrips);
}

async function oneGrant(
  relay: ReturnType<typeof createRelayClient>,
  gateways: string[],
  i: number,
  roundTrips: number[],
): Promise<void> {
  const gateway = gateways[i % gateways.length]!;
  const { gid, watchAuthorization } = await openGrant(relay, gateway, false);
  let running = true;
  // The host: long-polls and answers every call at once.
  const host = (async () => {
    while (running) {
      const { data } = await relay.GET('/v1/watch-tools/grants/{gid}/calls', {
        params: { path: { gid }, query: { wait_ms: '1000' } },
        headers: { authorization: gateway },
      });
      await Promise.all(
        (data?.calls ?? []).map((call) =>
          relay.POST('/v1/watch-tools/grants/{gid}/results/{rid}', {
            params: { path: { gid, rid: call.rid } },
            headers: { authorization: gateway },
            body: { n: call.n, ct: call.ct },
          }),
        ),
      );
    }
  })();
  await new Promise((r) => setTimeout(r, 100));
  for (let c = 0; c < CALLS_PER_GRANT; c += 1) {
    ipCounter += 1;
    const started = performance.now();
    const { response } = await relay.POST('/v1/watch-tools/grants/{gid}/calls', {
      params: { path: { gid } },
      headers: {
        authorization: watchAuthorization,
        'x-forwarded-for': `10.${(ipCounter >> 16) & 255}.${(ipCounter >> 8) & 255}.${ipCounter & 255}`,
      },
      body: {
        rid: randomBytes(16).toString('base64url'),
        n: randomBytes(12).toString('base64url'),
        ct: randomBytes(200).toString('base64url'),
      },
    });
    if (response.status === 200) roundTrips.push(performance.now() - started);
    else console.error(`call answered ${response.status}`);
  }
  running = false;
  await host;
}

/**
 * The baseline for Watch calls: the same three exchanges (held call, host long-poll, result) against
 * a bare node:http server in its own process, with no auth, validation, limits or store. "Added by
 * the relay" is the relay's round trip minus this one.
 */
const BARE_HOLD_OPEN_SERVER = `
const http = require('node:http');
let poll = null; const queued = []; const held = new Map();
http.createServer((req, res) => {
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    res.setHeader('content-type', 'application/json');
    if (req.url === '/call') {
      const call = JSON.parse(body);
      held.set(call.rid, res);
      if (poll) { const p = poll; poll = null; clearTimeout(p.timer); p.res.end(JSON.stringify({ calls: [call] })); }
      else queued.push(call);
    } else if (req.url === '/poll') {
      if (queued.length) res.end(JSON.stringify({ calls: queued.splice(0) }));
      else poll = { res, timer: setTimeout(() => { poll = null; res.end('{"calls":[]}'); }, 1000) };
    } else {
      const waiting = held.get(req.url.slice('/result/'.length));
      held.delete(req.url.slice('/result/'.length));
      waiting?.end(body);
      res.end('{"status":"delivered"}');
    }
  });
}).listen(0, '127.0.0.1', function () { process.stdout.write(this.address().port + '\\n'); });
`;

async function watchCallsDirect(): Promise<ReturnType<typeof summary>> {
  const child = spawn(process.execPath, ['-e', BARE_HOLD_OPEN_SERVER], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const port = await new Promise<string>((done) =>
      child.stdout!.once('data', (d: Buffer) => done(d.toString().trim())),
    );
    const base = `http://127.0.0.1:${port}`;
    const post = (path: string, body: unknown) =>
      fetch(`${base}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    let running = true;
    const host = (async () => {
      while (running) {
        const { calls } = (await (await fetch(`${base}/poll`)).json()) as {
          calls: { rid: string; n: string; ct: string }[];
        };
        await Promise.all(
          calls.map((call) => post(`/result/${call.rid}`, { n: call.n, ct: call.ct }).then((r) => r.text())),
        );
      }
    })();
    await new Promise((r) => setTimeout(r, 100));
    const roundTrips: number[] = [];
    for (let c = 0; c < CALL_GRANTS * CALLS_PER_GRANT; c += 1) {
      const started = performance.now();
      const response = await post('/call', {
        rid: randomBytes(16).toString('base64url'),
        n: randomBytes(12).toString('base64url'),
        ct: randomBytes(200).toString('base64url'),
      });
      await response.text();
      roundTrips.push(performance.now() - started);
    }
    running = false;
    await host;
    return summary(roundTrips);
  } finally {
    child.kill();
  }
}

async function main(): Promise<void> {
  console.log(
    `bench:relay-watch — ${BRIDGES} bridges × 48 KB/s each way for ${SECONDS} s; Node ${process.version}; load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  const { child, baseUrl, port } = await startRelay();
  try {
    const relay = createRelayClient({ baseUrl });
    const gateways: string[] = [];
    // 12 grants a minute per gateway: enough gateways for the bridges and both call runs.
    for (let i = 0; i < Math.ceil((BRIDGES + 2 * CALL_GRANTS) / 10); i += 1) gateways.push(await pairedGateway(relay));

    const direct = await audioDirect();
    const bridged = await audioThroughRelay(relay, gateways, port, child.pid!);
    console.log('\nAudio bridge');
    console.log(
      `  throughput through the relay: ${(bridged.bytesPerS / 1e6).toFixed(2)} MB/s (offered ${((BRIDGES * 2 * 48_000) / 1e6).toFixed(2)} MB/s); ${bridged.latency.n} of ${bridged.sent} messages delivered`,
    );
    console.log(
      `  one-way latency via relay:    p50 ${fmt(bridged.latency.p50)}  p99 ${fmt(bridged.latency.p99)}  max ${fmt(bridged.latency.max)}`,
    );
    console.log(
      `  one-way latency direct:       p50 ${fmt(direct.p50)}  p99 ${fmt(direct.p99)}  max ${fmt(direct.max)}`,
    );
    console.log(
      `  added by the relay:           p50 ${fmt(bridged.latency.p50 - direct.p50)}  p99 ${fmt(bridged.latency.p99 - direct.p99)}`,
    );
    console.log(`  relay CPU:                    ${bridged.cpuPercent.toFixed(1)} % of one core`);

    console.log('\nWatch calls (host answers at once)');
    const bare = await watchCallsDirect();
    const single = await watchCalls(relay, gateways, 1);
    const many = await watchCalls(relay, gateways, CALL_GRANTS);
    const line = (label: string, calls: ReturnType<typeof summary>) =>
      console.log(
        `  ${label.padEnd(30)} p50 ${fmt(calls.p50)}  p99 ${fmt(calls.p99)}  max ${fmt(calls.max)}  (${calls.n} calls)`,
      );
    line('one Watch, via relay:', single);
    line('one Watch, bare server:', bare);
    console.log(
      `  ${'added by the relay:'.padEnd(30)} p50 ${fmt(single.p50 - bare.p50)}  p99 ${fmt(single.p99 - bare.p99)}`,
    );
    line(`${CALL_GRANTS} Watches at once, via relay:`, many);
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
