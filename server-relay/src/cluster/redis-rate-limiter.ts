import type { Redis } from 'ioredis';
import type { RateLimiter } from '../ephemeral/rate-limiter.js';
import { shared } from './redis-connection.js';

/**
 * One hit of a fixed window, atomically (one round trip): the window opens at the key's first hit
 * (the counter's expiry is set then) and every hit counts, refused ones too, exactly as the in-memory
 * limiter counts. The PTTL check re-arms a counter left without an expiry (only possible if someone
 * wrote the key by hand), so no key can block for ever.
 */
const HIT_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
if count == 1 or redis.call('PTTL', KEYS[1]) < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
return count`;

type WindowClient = Redis & { conduitRateHit(key: string, windowMs: number): Promise<number> };

/**
 * Every budget and rate window (per installation, per IP, per class, the daily call limit) shared by
 * all replicas: N replicas together allow `max` per window, not N × `max`. The windows run on Redis'
 * clock (the counters' expiry), so replicas whose clocks differ still agree on when a window ends.
 */
export class RedisRateLimiter implements RateLimiter {
  private readonly client: WindowClient;

  constructor(
    client: Redis,
    private readonly keyPrefix: string,
  ) {
    client.defineCommand('conduitRateHit', { numberOfKeys: 1, lua: HIT_SCRIPT });
    this.client = client as WindowClient;
  }

  async hit(key: string, max: number, windowMs = 60_000): Promise<boolean> {
    const count = await shared(() => this.client.conduitRateHit(`${this.keyPrefix}rate:${key}`, windowMs));
    return count <= max;
  }
}
