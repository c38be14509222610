import type { Redis } from 'ioredis';
import { z } from 'zod';
import type { GatewayActivity } from '../store/records.js';
import type { SharedActivityOverlay } from '../store/deferred-activity.js';
import { shared } from './redis-connection.js';

/**
 * Publishes one gateway's pending activity: plugin fields as given, last-event time only forward,
 * and the key lives `ARGV[4]` ms from the last publish. KEYS: the gateway's hash.
 * ARGV: plugin version ('' = none), capabilities JSON ('' = none), last event ms ('' = none), ttl.
 */
const PUBLISH_SCRIPT = `
if ARGV[1] ~= '' then redis.call('HSET', KEYS[1], 'pluginVersion', ARGV[1]) end
if ARGV[2] ~= '' then redis.call('HSET', KEYS[1], 'pluginCapabilities', ARGV[2]) end
if ARGV[3] ~= '' then
  local current = tonumber(redis.call('HGET', KEYS[1], 'lastEventAt') or '0')
  if tonumber(ARGV[3]) > current then redis.call('HSET', KEYS[1], 'lastEventAt', ARGV[3]) end
end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1`;

type OverlayClient = Redis & {
  conduitActivityPublish(
    key: string,
    version: string,
    capabilities: string,
    lastEventAt: string,
    ttl: string,
  ): Promise<number>;
};

const Capabilities = z.array(z.string());

/**
 * The replicas' not-yet-written gateway activity (DeferredActivity): each replica writes its own
 * pending values to the database every 5 s, so /v1/meta on another replica would not see a plugin
 * version or last event recorded a moment ago. Each gateway's pending values are a Redis hash that
 * outlives the flushes that write them (`ttlMs`); /v1/meta reads it over the database row.
 */
export class RedisActivityOverlay implements SharedActivityOverlay {
  private readonly client: OverlayClient;

  constructor(
    client: Redis,
    private readonly keyPrefix: string,
    private readonly ttlMs: number,
  ) {
    client.defineCommand('conduitActivityPublish', { numberOfKeys: 1, lua: PUBLISH_SCRIPT });
    this.client = client as OverlayClient;
  }

  private key(installationId: string, gatewayId: string): string {
    return `${this.keyPrefix}gateway-activity:${installationId}:${gatewayId}`;
  }

  publish(installationId: string, gatewayId: string, activity: GatewayActivity): Promise<void> {
    return shared(async () => {
      await this.client.conduitActivityPublish(
        this.key(installationId, gatewayId),
        activity.pluginVersion ?? '',
        activity.pluginCapabilities ? JSON.stringify(activity.pluginCapabilities) : '',
        activity.lastEventAt !== undefined ? String(activity.lastEventAt) : '',
        String(this.ttlMs),
      );
    });
  }

  async read(installationId: string, gatewayIds: readonly string[]): Promise<Map<string, GatewayActivity>> {
    const out = new Map<string, GatewayActivity>();
    if (gatewayIds.length === 0) return out;
    const pipeline = this.client.pipeline();
    for (const gatewayId of gatewayIds) {
      pipeline.hmget(this.key(installationId, gatewayId), 'pluginVersion', 'pluginCapabilities', 'lastEventAt');
    }
    const rows = await shared(async () => (await pipeline.exec()) ?? []);
    rows.forEach(([error, row], index) => {
      const gatewayId = gatewayIds[index];
      if (error || gatewayId === undefined || !Array.isArray(row)) return;
      const [version, capabilities, lastEventAt] = row as (string | null)[];
      const activity: GatewayActivity = {};
      if (version) activity.pluginVersion = version;
      const parsed = Capabilities.safeParse(capabilities ? safeJson(capabilities) : undefined);
      if (parsed.success) activity.pluginCapabilities = parsed.data;
      const at = Number(lastEventAt);
      if (lastEventAt && Number.isSafeInteger(at)) activity.lastEventAt = at;
      if (Object.keys(activity).length > 0) out.set(gatewayId, activity);
    });
    return out;
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
