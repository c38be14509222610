import type { SharedStateConfig } from '../config.js';
import type { EventLedger, EventLedgerBounds } from '../ephemeral/event-ledger.js';
import type { RateLimiter } from '../ephemeral/rate-limiter.js';
import type { RelayLog } from '../relay-context.js';
import { closeRedis, connectRedis, whenReady } from './redis-connection.js';
import { RedisEventLedger } from './redis-event-ledger.js';
import { RedisIndexInvalidation } from './redis-index-invalidation.js';
import { RedisRateLimiter } from './redis-rate-limiter.js';

/** How long a booting replica waits for Redis before it starts anyway (answering 503 until Redis is up). */
const BOOT_WAIT_MS = 3_000;

/** What the replicas of one relay share through Redis (README, Several replicas). */
export interface SharedState {
  limiter: RateLimiter;
  ledger: EventLedger;
  invalidation: RedisIndexInvalidation;
  close(): Promise<void>;
}

/**
 * Connects to Redis (two connections: commands and the invalidation subscription, which Redis keeps
 * apart) and builds the shared implementations. Never fails on an unreachable Redis: the relay starts,
 * answers 503 shared_state_unavailable where it needs Redis, and recovers when Redis answers.
 */
export async function openSharedState(
  config: SharedStateConfig,
  ledgerBounds: EventLedgerBounds,
  now: () => number,
  log: RelayLog,
): Promise<SharedState> {
  const commands = connectRedis(config.redisUrl, 'commands', log);
  const subscriber = connectRedis(config.redisUrl, 'invalidation', log);
  const invalidation = new RedisIndexInvalidation(commands, subscriber, config.keyPrefix, log);
  if ((await whenReady(commands, BOOT_WAIT_MS)) && (await invalidation.subscribed(BOOT_WAIT_MS))) {
    log('info', 'shared state connected', { key_prefix: config.keyPrefix });
  }
  invalidation.markServing();
  return {
    limiter: new RedisRateLimiter(commands, config.keyPrefix),
    ledger: new RedisEventLedger(commands, config.keyPrefix, ledgerBounds, now),
    invalidation,
    close: async () => {
      closeRedis(commands);
      closeRedis(subscriber);
    },
  };
}
