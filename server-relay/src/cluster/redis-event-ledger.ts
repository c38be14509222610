import type { Redis } from 'ioredis';
import type { EventLedger, EventLedgerBounds } from '../ephemeral/event-ledger.js';
import { shared } from './redis-connection.js';

/**
 * Records one id with the in-memory ledger's rules, atomically (one round trip): an id seen within the
 * TTL is a duplicate (0); an expired one is recorded again. Per installation a sorted set of
 * `gw:event_id` scored by the time it was seen, so its oldest ids go first at the per-installation
 * bound. Relay-wide, a sorted set of installations scored by how many ids each holds and a total:
 * over the total bound, the installation holding most ids pays (its expired ids first, then its
 * oldest, 0.1 % of the bound more so the next adds do not pay again), so one busy host cannot push a
 * quiet one's ids out. A loop rather than one drop: the heaviest may hold mostly expired ids.
 *
 * KEYS: the installation's set, the sizes, the total. ARGV: member, now, ttl, per-installation bound,
 * total bound, installation id, the prefix of installation sets (the heaviest's key is built here, so
 * the script needs one Redis, not Redis Cluster).
 */
const ADD_SCRIPT = `
local key, sizes, totalKey = KEYS[1], KEYS[2], KEYS[3]
local member, now, ttl = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local perInstallation, maxTotal = tonumber(ARGV[4]), tonumber(ARGV[5])
local installation, setPrefix = ARGV[6], ARGV[7]

local function recount(setKey, id)
  local size = redis.call('ZCARD', setKey)
  local recorded = tonumber(redis.call('ZSCORE', sizes, id) or '0')
  if size == 0 then redis.call('ZREM', sizes, id) else redis.call('ZADD', sizes, size, id) end
  return redis.call('INCRBY', totalKey, size - recorded)
end

local seenAt = redis.call('ZSCORE', key, member)
if seenAt and tonumber(seenAt) + ttl > now then return 0 end
redis.call('ZADD', key, now, member)
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - ttl)
local size = redis.call('ZCARD', key)
if size > perInstallation then redis.call('ZREMRANGEBYRANK', key, 0, size - perInstallation - 1) end
local total = recount(key, installation)
local rounds = 0
while total > maxTotal and rounds < 8 do
  rounds = rounds + 1
  local heaviest = redis.call('ZREVRANGE', sizes, 0, 0)[1]
  if not heaviest then break end
  local heavyKey = setPrefix .. heaviest
  redis.call('ZREMRANGEBYSCORE', heavyKey, '-inf', now - ttl)
  total = recount(heavyKey, heaviest)
  if total > maxTotal then
    local over = total - maxTotal + math.ceil(maxTotal / 1000)
    redis.call('ZREMRANGEBYRANK', heavyKey, 0, over - 1)
    total = recount(heavyKey, heaviest)
  end
end
return 1`;

type LedgerClient = Redis & {
  conduitLedgerAdd(
    key: string,
    sizes: string,
    total: string,
    member: string,
    now: number,
    ttlMs: number,
    perInstallation: number,
    maxTotal: number,
    installationId: string,
    setPrefix: string,
  ): Promise<number>;
};

/**
 * The event-id ledger shared by all replicas: an id sent to one replica is a duplicate on every other
 * for 24 h, with the in-memory ledger's bounds (RELAY_MAX_EVENT_IDS_PER_INSTALLATION, RELAY_MAX_EVENT_IDS).
 * Times are the relay's clock (`now`), as in memory. Sets carry no Redis expiry: the total bound caps
 * them, and the counts stay exact (an expiry would remove ids behind the total's back).
 */
export class RedisEventLedger implements EventLedger {
  private readonly client: LedgerClient;
  private readonly setPrefix: string;

  constructor(
    client: Redis,
    private readonly keyPrefix: string,
    private readonly bounds: EventLedgerBounds,
    private readonly now: () => number,
  ) {
    client.defineCommand('conduitLedgerAdd', { numberOfKeys: 3, lua: ADD_SCRIPT });
    this.client = client as LedgerClient;
    this.setPrefix = `${keyPrefix}ledger:`;
  }

  async has(installationId: string, gatewayId: string, eventId: string): Promise<boolean> {
    const seenAt = await shared(() => this.client.zscore(this.setPrefix + installationId, `${gatewayId}:${eventId}`));
    return seenAt !== null && Number(seenAt) + this.bounds.ttlMs > this.now();
  }

  async add(installationId: string, gatewayId: string, eventId: string): Promise<boolean> {
    const added = await shared(() =>
      this.client.conduitLedgerAdd(
        this.setPrefix + installationId,
        `${this.keyPrefix}ledger-sizes`,
        `${this.keyPrefix}ledger-total`,
        `${gatewayId}:${eventId}`,
        this.now(),
        this.bounds.ttlMs,
        this.bounds.perInstallation,
        this.bounds.total,
        installationId,
        this.setPrefix,
      ),
    );
    return added === 1;
  }
}
