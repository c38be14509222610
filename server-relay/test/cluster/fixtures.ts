/**
 * What the cluster test files share: one cluster per file, a phone paired with a host, a Watch grant,
 * and the audio socket URLs and messages of a replica.
 */
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect } from 'vitest';
import { deviceToken, TOPIC } from '../conformance/relay.js';
import type { Opened } from '../watch/ws-clients.js';
import { startCluster, waitFor, type Cluster, type ClusterOptions, type Replica } from './cluster.js';

/**
 * Stands for the object `get()` returns once it exists: a file declares its cluster and replicas at
 * the top, where tests read them, while they only start in beforeAll.
 */
function late<T extends object>(get: () => T): T {
  return new Proxy({} as T, {
    get: (_stand, key) => {
      const target = get();
      const value: unknown = Reflect.get(target, key);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

export interface FileCluster {
  cluster: Cluster;
  /** Replicas 1–3 of it. */
  one: Replica;
  two: Replica;
  three: Replica;
}

/** One cluster for the whole file: started before its first test, stopped after its last. */
export function clusterForFile(options: ClusterOptions): FileCluster {
  let started: Cluster | undefined;
  beforeAll(async () => {
    started = await startCluster(options);
  }, 120_000);
  afterAll(async () => {
    await started?.stop();
  });
  const running = (): Cluster => {
    if (!started) throw new Error('the cluster has not started (see beforeAll)');
    return started;
  };
  const replica = (index: number) => late(() => running().replicas[index] as Replica);
  return { cluster: late(running), one: replica(0), two: replica(1), three: replica(2) };
}

/** A replica, or the cluster's balancer: whatever answers requests. */
export type Caller = Pick<Replica, 'call'>;

export interface Paired {
  installationId: string;
  /** The phone's `Bearer …` credential. */
  device: string;
  gatewayId: string;
  /** The host's `Bearer …` credential. */
  gateway: string;
}

/** A phone registered on `registerOn` (with `extra` registration fields) and a host paired through `claimOn`. */
export async function pairedPhone(
  registerOn: Caller,
  claimOn: Caller = registerOn,
  extra: Record<string, unknown> = {},
): Promise<Paired> {
  const registered = await registerOn.call('POST', '/v1/installations', {
    body: { bundle_id: TOPIC, device_token: deviceToken(), environment: 'production', ...extra },
  });
  expect(registered.status, registered.text).toBe(201);
  const phone = registered.json as { installation: { id: string }; credential: string };
  const device = `Bearer ${phone.credential}`;
  const created = await registerOn.call('POST', `/v1/installations/${phone.installation.id}/pairings`, {
    auth: device,
    body: {},
  });
  expect(created.status, created.text).toBe(201);
  const code = (created.json as { pairing_code: string }).pairing_code;
  const claimed = await claimOn.call('POST', '/v1/pairings/claim', { body: { pairing_code: code } });
  expect(claimed.status, claimed.text).toBe(200);
  const host = claimed.json as { gateway_id: string; credential: string };
  return {
    installationId: phone.installation.id,
    device,
    gatewayId: host.gateway_id,
    gateway: `Bearer ${host.credential}`,
  };
}

export interface WatchGrant {
  gid: string;
  /** The Watch's `Bearer <key>`. */
  watch: string;
}

/**
 * A Watch grant opened through `on`. A gateway's grants live on its home replica, which is the one its
 * first grant was opened through.
 */
export async function openGrant(on: Caller, gateway: string, audio = false): Promise<WatchGrant> {
  const key = randomBytes(32).toString('base64url');
  const created = await on.call('POST', '/v1/watch-tools/grants', {
    auth: gateway,
    body: {
      watch_key_sha256: createHash('sha256').update(key, 'ascii').digest('hex'),
      ttl_s: 600,
      max_calls: 10,
      audio,
    },
  });
  expect(created.status, created.text).toBe(201);
  return { gid: (created.json as { grant_id: string }).grant_id, watch: `Bearer ${key}` };
}

/** The audio socket URL of a grant's host or Watch on `replica`. */
export const wsUrl = (replica: Replica, gid: string, side: 'host' | 'watch'): string =>
  `${replica.url.replace('http', 'ws')}/v1/watch-audio/${gid}/${side}`;

/** Resolves with the first `count` messages once `socket` holds that many. */
export async function messagesOf(socket: Opened, count: number): Promise<Buffer[]> {
  await waitFor(
    () => socket.messages.length >= count,
    () => `${count} messages (have ${socket.messages.length})`,
  );
  return socket.messages.slice(0, count);
}
