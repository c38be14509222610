/**
 * A gateway's plugin version, capabilities and last event, recorded by one replica and written to the
 * database only at its next deferred flush (up to 5 s later), are what /v1/meta on another replica
 * shows at once (issue 22: the deferred writes across replicas). Fails with the pending values per
 * process.
 */
import { describe, expect, it } from 'vitest';
import { eventId, ROOMY_BUDGETS } from '../conformance/relay.js';
import type { Replica } from './cluster.js';
import { clusterForFile, pairedPhone } from './fixtures.js';

const { one, two, three } = clusterForFile({
  replicas: 3,
  env: { ...ROOMY_BUDGETS, CONDUIT_CHECK_REPLIES: '1' },
});

async function gatewayOnMeta(on: Replica, device: string, gatewayId: string) {
  const meta = await on.call('GET', '/v1/meta', { auth: device });
  expect(meta.status, meta.text).toBe(200);
  return (meta.json as { gateways: Record<string, unknown>[] }).gateways.find((g) => g.id === gatewayId);
}

describe('gateway activity across replicas, before the deferred flush', () => {
  it('a plugin.hello through one replica is on /v1/meta of the others at once', async () => {
    const phone = await pairedPhone(one);
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
    const phone = await pairedPhone(two);
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
