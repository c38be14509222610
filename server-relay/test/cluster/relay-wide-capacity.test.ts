/**
 * Relay-wide bounds across replicas. Decisions: a clarify event checks capacity and parks under one
 * lock, which one process holds in memory and replicas hold in Redis; parks racing on three replicas
 * at RELAY_MAX_ACTIVE_DECISIONS=5 park exactly 5 (with a lock per process, replicas counting at the
 * same time each see room and park together). Watch grants: each lives on its gateway's home replica,
 * and RELAY_MAX_WATCH_GRANTS counts them all, not each replica's.
 */
import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deviceToken, eventId, ROOMY_BUDGETS, TOPIC } from '../conformance/relay.js';
import { open, openSocket } from '../watch/ws-clients.js';
import { startCluster, waitFor, type Cluster, type Replica } from './cluster.js';

const MAX_ACTIVE = 5;
const MAX_GRANTS = 3;
const MAX_BRIDGES = 2;
const PARKS = 15;

let cluster: Cluster;

beforeAll(async () => {
  cluster = await startCluster({
    replicas: 3,
    env: {
      ...ROOMY_BUDGETS,
      RELAY_MAX_ACTIVE_DECISIONS: String(MAX_ACTIVE),
      RELAY_MAX_WATCH_GRANTS: String(MAX_GRANTS),
      RELAY_MAX_WATCH_AUDIO_BRIDGES: String(MAX_BRIDGES),
    },
  });
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
});

/** A host credential of a freshly paired phone, made on `on`. */
async function pairedGateway(on: Replica): Promise<string> {
  const registered = await on.call('POST', '/v1/installations', {
    body: { bundle_id: TOPIC, device_token: deviceToken(), environment: 'production' },
  });
  const phone = registered.json as { installation: { id: string }; credential: string };
  const created = await on.call('POST', `/v1/installations/${phone.installation.id}/pairings`, {
    auth: `Bearer ${phone.credential}`,
    body: {},
  });
  const claimed = await on.call('POST', '/v1/pairings/claim', {
    body: { pairing_code: (created.json as { pairing_code: string }).pairing_code },
  });
  expect(claimed.status, claimed.text).toBe(200);
  return `Bearer ${(claimed.json as { credential: string }).credential}`;
}

describe('decision capacity is relay-wide', () => {
  it(`${PARKS} clarify events racing on three replicas park exactly ${MAX_ACTIVE} decisions`, async () => {
    const replicas = cluster.replicas;
    const gateways = await Promise.all(
      Array.from({ length: PARKS }, (_, i) => pairedGateway(replicas[i % replicas.length] as Replica)),
    );
    const replies = await Promise.all(
      gateways.map((gateway, i) =>
        (replicas[i % replicas.length] as Replica).call('POST', '/v1/events', {
          auth: gateway,
          body: {
            type: 'input.needed',
            event_id: eventId('capacity'),
            decision: { kind: 'clarify', request_id: `req-capacity-${i}`, question: 'Q?', choices: ['a', 'b'] },
          },
        }),
      ),
    );
    expect(replies.filter((reply) => reply.status === 202)).toHaveLength(MAX_ACTIVE);
    expect(replies.filter((reply) => reply.status === 429).map((reply) => reply.json)).toEqual(
      Array.from({ length: PARKS - MAX_ACTIVE }, () => ({ error: 'decision_capacity_exceeded' })),
    );
    const db = new pg.Client({ connectionString: cluster.databaseUrl });
    await db.connect();
    try {
      const { rows } = await db.query<{ n: string }>('SELECT count(*)::text AS n FROM "Decision"');
      expect(Number(rows[0]?.n)).toBe(MAX_ACTIVE);
    } finally {
      await db.end();
    }
  });
});

function openGrant(on: Replica, gateway: string, audio = false) {
  const key = randomBytes(32).toString('base64url');
  return on.call('POST', '/v1/watch-tools/grants', {
    auth: gateway,
    body: {
      watch_key_sha256: createHash('sha256').update(key, 'ascii').digest('hex'),
      ttl_s: 600,
      max_calls: 5,
      audio,
    },
  });
}

describe('the Watch grant bound is relay-wide', () => {
  it(`${MAX_GRANTS} grants held on three replicas fill RELAY_MAX_WATCH_GRANTS=${MAX_GRANTS}; a closed one frees its slot`, async () => {
    const [one, two, three] = cluster.replicas as [Replica, Replica, Replica];
    const gateways = await Promise.all([one, two, three, one].map((on) => pairedGateway(on)));
    // Each gateway's first grant is opened on a different replica, which becomes its home.
    const opened: string[] = [];
    for (const [i, on] of [one, two, three].entries()) {
      const reply = await openGrant(on, gateways[i] as string);
      expect(reply.status, reply.text).toBe(201);
      opened.push((reply.json as { grant_id: string }).grant_id);
    }
    // Replica 1 holds one grant, far from the bound per process: the relay holds three.
    const refused = await openGrant(one, gateways[3] as string);
    expect(refused.status, refused.text).toBe(503);
    expect(refused.json).toEqual({ error: 'watch_grant_capacity' });
    // The host of the grant on replica 2 closes it (through replica 3): the slot is free again.
    expect(
      (await three.call('DELETE', `/v1/watch-tools/grants/${opened[1]}`, { auth: gateways[1] as string })).status,
    ).toBe(204);
    const admitted = await openGrant(one, gateways[3] as string);
    expect(admitted.status, admitted.text).toBe(201);
    // Leave the slots to the next test.
    for (const [gid, gateway] of [
      [opened[0], gateways[0]],
      [opened[2], gateways[2]],
      [(admitted.json as { grant_id: string }).grant_id, gateways[3]],
    ] as const) {
      expect((await two.call('DELETE', `/v1/watch-tools/grants/${gid}`, { auth: gateway as string })).status).toBe(204);
    }
  });
});

describe('the audio bridge bound is relay-wide', () => {
  it(`hosts attached on two replicas fill RELAY_MAX_WATCH_AUDIO_BRIDGES=${MAX_BRIDGES}; a host leaving frees room`, async () => {
    const [one, two, three] = cluster.replicas as [Replica, Replica, Replica];
    const replicas = [one, two, three];
    const gateways = await Promise.all(replicas.map((on) => pairedGateway(on)));
    const grants: string[] = [];
    for (const [i, on] of replicas.entries()) {
      const reply = await openGrant(on, gateways[i] as string, true);
      expect(reply.status, reply.text).toBe(201);
      grants.push((reply.json as { grant_id: string }).grant_id);
    }
    const hostUrl = (on: Replica, gid: string) => `${on.url.replace('http', 'ws')}/v1/watch-audio/${gid}/host`;
    const first = await open(hostUrl(one, grants[0] as string), gateways[0]);
    const second = await open(hostUrl(two, grants[1] as string), gateways[1]);
    // Replica 3 holds no bridge at all: per process it would have room.
    const third = await openSocket(hostUrl(three, grants[2] as string), gateways[2]);
    expect('status' in third ? { status: third.status, body: JSON.parse(third.body) as unknown } : 'opened').toEqual({
      status: 503,
      body: { error: 'watch_audio_capacity' },
    });
    first.ws.close(1000);
    await first.closed;
    let admitted: Awaited<ReturnType<typeof openSocket>> | undefined;
    await waitFor(async () => {
      admitted = await openSocket(hostUrl(three, grants[2] as string), gateways[2]);
      return !('status' in admitted);
    }, 'room for a third host once the first left');
    if (admitted && !('status' in admitted)) admitted.ws.close(1000);
    second.ws.close(1000);
  });
});
