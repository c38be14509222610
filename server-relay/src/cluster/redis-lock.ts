import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { shared } from './redis-connection.js';
import { SharedStateUnavailable } from './shared-state-unavailable.js';

/**
 * How long a holder keeps the lock without renewing it: a replica killed while holding it blocks the
 * others this long at most. Renewed every third of it while the work runs (a clarify event's work
 * includes its APNs push).
 */
const LEASE_MS = 6_000;
/** Between two tries to take a held lock: the work it guards is a few milliseconds to an APNs round trip. */
const RETRY_MS = 5;
/** A request waiting longer than this for the lock is answered 503 rather than held on. */
const MAX_WAIT_MS = 10_000;

/** Deletes (or extends) the lock only while it is still this holder's. KEYS: the lock. ARGV: token[, lease]. */
const RELEASE_SCRIPT = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;
const RENEW_SCRIPT = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`;

type LockClient = Redis & {
  conduitLockRelease(key: string, token: string): Promise<number>;
  conduitLockRenew(key: string, token: string, leaseMs: number): Promise<number>;
};

/**
 * A mutex of all replicas (the relay's decision lock: a clarify event's capacity check and the save
 * that follows, which one process serialises in memory). Waiters on one replica queue in memory, so
 * only one of them at a time asks Redis; the lock itself is a key taken with SET NX under a lease the
 * holder renews, released only by its holder.
 */
export function redisLock(client: Redis, key: string): <T>(work: () => Promise<T>) => Promise<T> {
  client.defineCommand('conduitLockRelease', { numberOfKeys: 1, lua: RELEASE_SCRIPT });
  client.defineCommand('conduitLockRenew', { numberOfKeys: 1, lua: RENEW_SCRIPT });
  const redis = client as LockClient;
  let tail: Promise<unknown> = Promise.resolve();

  const acquire = async (): Promise<string> => {
    const token = randomUUID();
    const deadline = Date.now() + MAX_WAIT_MS;
    for (;;) {
      if ((await shared(() => redis.set(key, token, 'PX', LEASE_MS, 'NX'))) === 'OK') return token;
      if (Date.now() > deadline) throw new SharedStateUnavailable('the relay-wide decision lock stayed held');
      await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
    }
  };

  const holding = async <T>(work: () => Promise<T>): Promise<T> => {
    const token = await acquire();
    const renewal = setInterval(() => {
      redis.conduitLockRenew(key, token, LEASE_MS).catch(() => undefined);
    }, LEASE_MS / 3);
    renewal.unref();
    try {
      return await work();
    } finally {
      clearInterval(renewal);
      // A failed release leaves the lease to expire: the others wait for it, nothing breaks.
      await redis.conduitLockRelease(key, token).catch(() => undefined);
    }
  };

  return <T>(work: () => Promise<T>) => {
    const run = tail.then(
      () => holding(work),
      () => holding(work),
    );
    tail = run.catch(() => undefined);
    return run;
  };
}
