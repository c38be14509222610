/**
 * compose.relay-cluster.yaml's HAProxy in front of three real replicas, as the deployment runs it: the
 * config is read from the compose file (configs.haproxy.content) and given to a real `haproxy`, with
 * only what needs Docker replaced (haproxyConfigFrom). Every request below goes through HAProxy, so
 * each test fails if the config broke what the relay needs of its proxy: round robin over shared
 * state, the client's address in X-Forwarded-For, WebSocket upgrades, held long polls.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { freePort } from '@conduit/contracts/testing';
import { FIXED_LIMITS } from '../../src/limits.js';
import { deviceToken, eventId, request, ROOMY_BUDGETS, TOPIC } from '../conformance/relay.js';
import { RELAY_DIR } from '../support/relay-process.js';
import { audioMessage, open } from '../watch/ws-clients.js';
import { startCluster, stopProcess, waitFor, type Cluster, type Replica } from './cluster.js';
import { messagesOf, openGrant, pairedPhone, type Caller } from './fixtures.js';

const COMPOSE_FILE = path.resolve(RELAY_DIR, '../compose.relay-cluster.yaml');
const HAPROXY = '/usr/sbin/haproxy';

/** Replaces the one line `pattern` matches; fails naming the compose file if it matches none or several. */
function replaceOnce(text: string, pattern: RegExp, replacement: (line: RegExpMatchArray) => string): string {
  const global = new RegExp(pattern.source, 'gm');
  const matches = [...text.matchAll(global)];
  if (matches.length !== 1) {
    throw new Error(`${COMPOSE_FILE}'s HAProxy config has ${matches.length} lines like ${pattern} (expected 1)`);
  }
  const [match] = matches as [RegExpMatchArray];
  return text.replace(match[0], () => replacement(match));
}

/**
 * The compose file's HAProxy config with only what needs Docker replaced: the `server-template` that
 * Docker's DNS fills becomes one static `server` per replica, and `bind :9120` a free loopback port.
 * Every other line stays as written (its `maxconn` must fit this machine's descriptor limit, 20,000
 * here: HAProxy refuses to start when it cannot have twice as many descriptors).
 */
function haproxyConfigFrom(composeText: string, listenPort: number, replicaPorts: number[]): string {
  const compose = parse(composeText) as { configs?: { haproxy?: { content?: unknown } } };
  const content = compose.configs?.haproxy?.content;
  if (typeof content !== 'string') throw new Error(`${COMPOSE_FILE} has no configs.haproxy.content`);
  let config = replaceOnce(content, /^([ \t]*)server-template\s.*$/, ([, indent = '']) =>
    replicaPorts.map((port, i) => `${indent}server r${i + 1} 127.0.0.1:${port} check`).join('\n'),
  );
  config = replaceOnce(
    config,
    /^([ \t]*)bind :9120[ \t]*$/,
    ([, indent = '']) => `${indent}bind 127.0.0.1:${listenPort}`,
  );
  return config;
}

interface Haproxy {
  url: string;
  stop: () => Promise<void>;
}

/** A real `haproxy -db` on `config` (written 0600 to a directory of its own); resolves once it answers /healthz. */
async function startHaproxy(config: string, listenPort: number): Promise<Haproxy> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'relay-haproxy-'));
  const configPath = path.join(dir, 'haproxy.cfg');
  writeFileSync(configPath, config, { mode: 0o600 });
  const child: ChildProcess = spawn(HAPROXY, ['-f', configPath, '-db'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<unknown>((resolve) => child.once('exit', resolve));
  child.once('error', (error) => (output += `\n${error.message}`));
  const url = `http://127.0.0.1:${listenPort}`;
  const stop = async () => {
    await stopProcess(child, exited);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitFor(
      async () => {
        if (child.exitCode !== null) throw new Error(`haproxy exited with ${child.exitCode}:\n${output}`);
        try {
          return (await fetch(`${url}/healthz`)).ok;
        } catch {
          return false;
        }
      },
      () => `HAProxy to answer /healthz on ${url}:\n${output}`,
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return { url, stop };
}

let cluster: Cluster | undefined;
let haproxy: Haproxy | undefined;

beforeAll(async () => {
  // Missing HAProxy fails the file, it never skips it: the config would go untested.
  if (!existsSync(HAPROXY)) {
    throw new Error(
      `${HAPROXY} is missing: this test runs compose.relay-cluster.yaml's HAProxy config in a real HAProxy (apt-get install haproxy)`,
    );
  }
  cluster = await startCluster({ replicas: 3, env: { ...ROOMY_BUDGETS, TRUST_PROXY: '1' } });
  const listenPort = await freePort();
  const ports = cluster.replicas.map((replica) => Number(new URL(replica.url).port));
  haproxy = await startHaproxy(haproxyConfigFrom(readFileSync(COMPOSE_FILE, 'utf8'), listenPort, ports), listenPort);
}, 120_000);

afterAll(async () => {
  await haproxy?.stop();
  await cluster?.stop();
});

const running = (): { cluster: Cluster; haproxy: Haproxy } => {
  if (!cluster || !haproxy) throw new Error('the cluster and HAProxy have not started (see beforeAll)');
  return { cluster, haproxy };
};

/** HAProxy as a caller: every request of these tests goes through it. */
const proxy: Caller = { call: (method, urlPath, options) => request(running().haproxy.url, method, urlPath, options) };

/** How many access-log lines `replica` printed for `method path` answered with `status`. */
function answered(replica: Replica, method: string, urlPath: string, status: number): number {
  return replica.process
    .output()
    .split('\n')
    .filter((line) => {
      if (!line.startsWith('{')) return false;
      try {
        const entry = JSON.parse(line) as { method?: unknown; path?: unknown; status?: unknown };
        return entry.method === method && entry.path === urlPath && entry.status === status;
      } catch {
        return false;
      }
    }).length;
}

/** Resolves once every replica has logged more `method path status` lines than `before` (stdout is batched). */
async function everyReplicaAnswered(before: number[], method: string, urlPath: string, status: number): Promise<void> {
  const replicas = running().cluster.replicas;
  const counts = () => replicas.map((replica) => answered(replica, method, urlPath, status));
  await waitFor(
    () => counts().every((count, i) => count > (before[i] ?? 0)),
    () =>
      `each replica to answer ${method} ${urlPath} ${status} (before ${before.join(',')}, now ${counts().join(',')})`,
  );
}

const countsOf = (method: string, urlPath: string, status: number): number[] =>
  running().cluster.replicas.map((replica) => answered(replica, method, urlPath, status));

/**
 * A registration sent to HAProxy from the loopback address `localAddress`, claiming in its own
 * X-Forwarded-For to come from `claimed`: HAProxy sees `localAddress` as the client.
 */
function registerFrom(localAddress: string, claimed: string): Promise<number> {
  const body = JSON.stringify({ bundle_id: TOPIC, device_token: deviceToken(), environment: 'production' });
  const { port } = new URL(running().haproxy.url);
  return new Promise((resolve, reject) => {
    const sent = http.request(
      {
        host: '127.0.0.1',
        port,
        localAddress,
        method: 'POST',
        path: '/v1/installations',
        agent: false,
        headers: { 'content-type': 'application/json', 'x-forwarded-for': claimed },
      },
      (reply) => {
        reply.resume();
        reply.on('end', () => resolve(reply.statusCode ?? 0));
      },
    );
    sent.on('error', reject);
    sent.end(body);
  });
}

const sealed = () => ({ n: randomBytes(12).toString('base64url'), ct: randomBytes(64).toString('base64url') });

describe("compose.relay-cluster.yaml's HAProxy in front of 3 replicas", () => {
  it('round robin: events land on every replica, and an event id sent again is a duplicate on each of them', async () => {
    const token = deviceToken();
    const phone = await pairedPhone(proxy, proxy, { device_token: token });
    const postEvent = (id: string) =>
      proxy.call('POST', '/v1/events', { auth: phone.gateway, body: { type: 'response.ready', event_id: id } });

    const delivered = countsOf('POST', '/v1/events', 202);
    const ids = [eventId('haproxy'), eventId('haproxy'), eventId('haproxy')];
    for (const id of ids) {
      const sent = await postEvent(id);
      expect(sent.status, sent.text).toBe(202);
      expect(sent.json).toEqual({ accepted: true, delivered: true });
    }
    await everyReplicaAnswered(delivered, 'POST', '/v1/events', 202);

    const duplicates = countsOf('POST', '/v1/events', 200);
    for (let i = 0; i < 3; i += 1) {
      const again = await postEvent(ids[0] as string);
      expect(again.status, again.text).toBe(200);
      expect(again.json).toEqual({ accepted: true, duplicate: true });
    }
    await everyReplicaAnswered(duplicates, 'POST', '/v1/events', 200);
    // One push per event id, none for the duplicates.
    expect(
      running()
        .cluster.captures()
        .filter((push) => push.deviceToken === token),
    ).toHaveLength(ids.length);
  });

  it("option forwardfor + TRUST_PROXY=1: the registration window counts the client's address across replicas, not what the client wrote", async () => {
    const limit = FIXED_LIMITS.registrationPerIp;
    const created = countsOf('POST', '/v1/installations', 201);
    // Each request claims another address in its own X-Forwarded-For; only HAProxy's appended entry
    // (the real peer, 127.0.0.2) may count. Without forwardfor the relay would count the claims and
    // admit them all; with TRUST_PROXY=0 it would count HAProxy itself, shared with 127.0.0.3 below.
    const statuses: number[] = [];
    for (let i = 1; i <= limit + 1; i += 1) statuses.push(await registerFrom('127.0.0.2', `198.51.100.${i}`));
    expect(statuses, statuses.join(' ')).toEqual([...Array.from({ length: limit }, () => 201), 429]);
    await everyReplicaAnswered(created, 'POST', '/v1/installations', 201);
    // Another client behind the same HAProxy has a window of its own.
    expect(await registerFrom('127.0.0.3', '198.51.100.1')).toBe(201);
  });

  it('the Watch audio bridge upgrades through HAProxy: byte-exact audio both ways, grant closed 4010 on both', async () => {
    const phone = await pairedPhone(proxy, proxy);
    const grant = await openGrant(proxy, phone.gateway, true);
    const socketUrl = (side: 'host' | 'watch') =>
      `${running().haproxy.url.replace('http', 'ws')}/v1/watch-audio/${grant.gid}/${side}`;
    const host = await open(socketUrl('host'), phone.gateway);
    const watch = await open(socketUrl('watch'), grant.watch);
    expect(await messagesOf(host, 1)).toEqual([Buffer.from([0, 1])]);

    const up = [audioMessage(1), audioMessage(640), audioMessage(65_536), audioMessage(3_000)];
    for (const message of up) watch.ws.send(message);
    const down = [audioMessage(320), audioMessage(65_536), audioMessage(7)];
    for (const message of down) host.ws.send(message);
    const heard = (await messagesOf(host, 1 + up.length)).slice(1);
    expect(heard.map((m) => m.toString('hex'))).toEqual(up.map((m) => m.toString('hex')));
    const received = await messagesOf(watch, down.length);
    expect(received.map((m) => m.toString('hex'))).toEqual(down.map((m) => m.toString('hex')));

    const closed = await proxy.call('DELETE', `/v1/watch-tools/grants/${grant.gid}`, { auth: phone.gateway });
    expect(closed.status).toBe(204);
    expect(await watch.closed).toEqual({ code: 4010, reason: 'grant_closed' });
    expect(await host.closed).toEqual({ code: 4010, reason: 'grant_closed' });
  });

  it("held requests pass HAProxy: the Watch's call waits for the host's poll and result, an empty poll is held its full wait", async () => {
    const phone = await pairedPhone(proxy, proxy);
    const grant = await openGrant(proxy, phone.gateway);
    const calls = `/v1/watch-tools/grants/${grant.gid}/calls`;
    const call = { rid: randomBytes(16).toString('base64url'), ...sealed() };
    // Held by the relay until the host has polled it and posted the result (two other requests).
    const calling = proxy.call('POST', calls, { auth: grant.watch, body: call });
    const polled = await proxy.call('GET', `${calls}?wait_ms=10000`, { auth: phone.gateway });
    expect(polled.status, polled.text).toBe(200);
    expect(polled.json).toEqual({ calls: [call] });
    const result = sealed();
    const posted = await proxy.call('POST', `/v1/watch-tools/grants/${grant.gid}/results/${call.rid}`, {
      auth: phone.gateway,
      body: result,
    });
    expect(posted.status, posted.text).toBe(200);
    const answer = await calling;
    expect(answer.status, answer.text).toBe(200);
    expect(answer.json).toEqual(result);

    // Nothing to hand over: the relay holds the poll for its whole wait, and HAProxy keeps it open.
    const waitMs = 2_000;
    const started = Date.now();
    const empty = await proxy.call('GET', `${calls}?wait_ms=${waitMs}`, { auth: phone.gateway });
    expect(empty.status, empty.text).toBe(200);
    expect(empty.json).toEqual({ calls: [] });
    expect(Date.now() - started).toBeGreaterThanOrEqual(waitMs - 100);
  });
});
