/**
 * A gateway's plugin version, capabilities and last event, recorded by one replica and written to the
 * database only at its next deferred flush (up to 5 s later), are what /v1/meta on another replica
 * shows at once (issue 22: the deferred writes across replicas). Fails with the pending values per
 * process.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deviceToken, eventId, ROOMY_BUDGETS, TOPIC } from '../conformance/relay.js';
import { startCluster, type Cluster, type Replica } from './cluster.js';

let cluster: Cluster;
let one: Replica;
let two: Replica;
let three: Replica;

beforeAll(async () => {
  cluster = await startCluster({ replicas: 3, env: { ...ROOMY_BUDGETS, CONDUIT_CHECK_REPLIES: '1' } });
  [one, two, three] = cluster.replicas as [Replica, Replica, Replica];
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
});

async function paired(on: Replica): Promise<{ device: string; gateway: string; gatewayId: string }> {
  const registered = await on.call('POST', '/v1/installations', {
    body: { bundle_id: TOPIC, device_token: deviceToken(), environment: 'production' },
  });
  expect(registered.status, registered.text).toBe(201);
  const phone = registered.json as { installation: { id: string }; credential: string };
  const device = `Bearer ${phone.credential}`;
  const created = await on.call('POST', `/v1/installations/${phone.installation.id}/pairings`, {
    auth: device,
    body: {},
  });
  const code = (created.json as { pairing_code: string }).pairing_code;
  const claimed = await on.call('POST', '/v1/pairings/claim', { body: { pairing_code: code } });
  expect(claimed.status, claimed.text).toBe(200);
  const host = claimed.json as { gateway_id: string; credential: string };
  return { device, gateway: `Bearer ${host.credential}`, gatewayId: host.gateway_id };
}

async function gatewayOnMeta(on: Replica, device: string, gatewayId: string) {
  const meta = await on.call('GET', '/v1/meta', { auth: device });
  expect(meta.status, meta.text).toBe(200);
  return (meta.json as { gateways: Record<string, unknown>[] }).gateways.find((g) => g.id === gatewayId);
}

describe('gateway activity across replicas, before the deferred flush', () => {
  it('a plugin.hello through one replica is on /v1/meta of the others at once', async () => {
    const phone = await paired(one);
    const before = Date.now();
    const hello = await two.call('POST', '/v1/events', {
      auth: phone.gateway,
      body: { type: 'plugin.hello', event_id: eventId(), plugin_version: '3.1.4', plugin_capabilities: ['cap-x'] },
    });
    expect(hello.status).toBe(202);
    for (const replica of [three, one]) {
      const gateway = await gatewayOnMeta(replica, phone.device, phone.gatewayId);
      expect(gateway?.plugin_version).toBe('3.1.4');
      expect(gateway?.plugin_capabilities).toEqual(['cap-x']);
      expect(Date.parse(String(gateway?.last_event_at))).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
    }
  });

  it('a newer plugin version through a third replica replaces the first everywhere', async () => {
    const phone = await paired(two);
    const id = eventId();
    const send = (on: Replica, version: string) =>
      on.call('POST', '/v1/events', {
        auth: phone.gateway,
        body: { type: 'plugin.hello', event_id: id, plugin_version: version },
      });
    expect((await send(one, '1.0.0')).status).toBe(202);
    // The same event id again (a duplicate) still records the plugin metadata, on another replica.
    const dup = await send(three, '2.0.0');
    expect(dup.json).toEqual({ accepted: true, duplicate: true });
    for (const replica of [one, two, three]) {
      expect((await gatewayOnMeta(replica, phone.device, phone.gatewayId))?.plugin_version).toBe('2.0.0');
    }
  });
});
