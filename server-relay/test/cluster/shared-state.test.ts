/**
 * The Redis implementations keep the in-memory ones' rules (test/domain.test.ts pins those): the
 * ledger's TTL and bounds, the fixed windows, and 503-worthy failures instead of wrong answers.
 */
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisEventLedger } from '../../src/cluster/redis-event-ledger.js';
import { RedisRateLimiter } from '../../src/cluster/redis-rate-limiter.js';
import { SharedStateUnavailable } from '../../src/cluster/shared-state-unavailable.js';
import { connectRedis } from '../../src/cluster/redis-connection.js';
import { connectTestRedis, deleteKeys, uniquePrefix } from './cluster.js';

let redis: Redis;
const prefixes: string[] = [];

beforeAll(async () => {
  redis = await connectTestRedis();
});

afterAll(async () => {
  for (const prefix of prefixes) await deleteKeys(redis, prefix);
  redis?.disconnect();
});

function prefix(): string {
  const made = uniquePrefix();
  prefixes.push(made);
  return made;
}

describe('Redis event ledger', () => {
  it('forgets the oldest id at the per-installation bound, expires ids after the TTL, never rejects', async () => {
    let now = 1_000_000;
    const ledger = new RedisEventLedger(redis, prefix(), { ttlMs: 1000, perInstallation: 3, total: 100 }, () => now);
    for (const id of ['a', 'b', 'c', 'd']) {
      expect(await ledger.add('i', 'g', id)).toBe(true);
      now += 1;
    }
    expect(await ledger.has('i', 'g', 'a')).toBe(false);
    expect(await ledger.has('i', 'g', 'd')).toBe(true);
    expect(await ledger.has('i', 'h', 'd')).toBe(false);
    expect(await ledger.add('i', 'g', 'd')).toBe(false);
    now += 1000;
    expect(await ledger.has('i', 'g', 'd')).toBe(false);
    // An expired id is recorded again as new.
    expect(await ledger.add('i', 'g', 'd')).toBe(true);
  });

  it('at the relay-wide bound the installation holding most ids pays', async () => {
    let now = 5_000_000;
    const keys = prefix();
    const ledger = new RedisEventLedger(redis, keys, { ttlMs: 10_000, perInstallation: 100, total: 10 }, () => now);
    for (let i = 0; i < 8; i += 1) {
      await ledger.add('heavy', 'g', `h${i}`);
      now += 1;
    }
    for (let i = 0; i < 3; i += 1) {
      await ledger.add('light', 'g', `l${i}`);
      now += 1;
    }
    expect(Number(await redis.get(`${keys}ledger-total`))).toBeLessThanOrEqual(10);
    expect(await ledger.has('light', 'g', 'l0')).toBe(true);
    expect(await ledger.has('heavy', 'g', 'h0')).toBe(false);
    expect(await ledger.has('heavy', 'g', 'h7')).toBe(true);
  });

  it('of concurrent adds of one id exactly one records it', async () => {
    const ledger = new RedisEventLedger(redis, prefix(), { ttlMs: 10_000, perInstallation: 100, total: 100 }, Date.now);
    const added = await Promise.all(Array.from({ length: 20 }, () => ledger.add('i', 'g', 'same')));
    expect(added.filter(Boolean)).toHaveLength(1);
  });
});

describe('Redis rate limiter', () => {
  it('a fixed window: hits over max are refused until the window ends, refused hits count too', async () => {
    const limiter = new RedisRateLimiter(redis, prefix());
    const hits: boolean[] = [];
    for (let i = 0; i < 4; i += 1) hits.push(await limiter.hit('k', 2, 300));
    expect(hits).toEqual([true, true, false, false]);
    await expect.poll(() => limiter.hit('k', 2, 300), { timeout: 2_000, interval: 50 }).toBe(true);
  });

  it('concurrent hits from many clients admit exactly max', async () => {
    const keys = prefix();
    const others = [redis.duplicate(), redis.duplicate()];
    try {
      const limiters = [redis, ...others].map((client) => new RedisRateLimiter(client, keys));
      const hits = await Promise.all(
        Array.from({ length: 60 }, (_, i) => (limiters[i % 3] as RedisRateLimiter).hit('k', 25)),
      );
      expect(hits.filter(Boolean)).toHaveLength(25);
    } finally {
      for (const client of others) client.disconnect();
    }
  });

  it('an unreachable Redis is SharedStateUnavailable at once, not a hang or a wrong answer', async () => {
    const logged: string[] = [];
    const client = connectRedis('redis://127.0.0.1:1', 'test', (_level, message) => logged.push(message));
    try {
      const limiter = new RedisRateLimiter(client, prefix());
      const started = Date.now();
      await expect(limiter.hit('k', 1)).rejects.toBeInstanceOf(SharedStateUnavailable);
      expect(Date.now() - started).toBeLessThan(1_500);
      await expect.poll(() => logged).toContain('redis unavailable');
    } finally {
      client.disconnect();
    }
  });
});
