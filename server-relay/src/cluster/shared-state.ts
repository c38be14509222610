import type { SharedStateConfig } from '../config.js';
import type { EventLedger, EventLedgerBounds } from '../ephemeral/event-ledger.js';
import type { RateLimiter } from '../ephemeral/rate-limiter.js';
import type { RelayLog } from '../relay-context.js';
import { closeRedis, connectRedis, whenReady } from './redis-connection.js';
import { RedisEventLedger } from './redis-event-ledger.js';
import { RedisIndexInvalidation } from './redis-index-invalidation.js';
import { RedisLiveActivities } from './redis-live-activities.js';
import { RedisActivityOverlay } from './redis-activity-overlay.js';
import { redisLock } from './redis-lock.js';
import { RedisRateLimiter } from './redis-rate-limiter.js';
import { RedisRingRegistry, RedisRingSessionStore } from './redis-rings.js';
import { ReplicaBus } from './replica-bus.js';
import { ClusterWatchGrants } from './watch-cluster.js';
import type { LocalWatchGrants } from '../watch/grant-service.js';
import type { WatchSettings } from '../watch/deps.js';

/** How long a booting replica waits for Redis before it starts anyway (answering 503 until Redis is up). */
const BOOT_WAIT_MS = 3_000;

/** A gateway's published pending activity outlives the 5 s flush that writes it (and a slow one). */
const ACTIVITY_OVERLAY_TTL_MS = 30_000;

/** What the replicas of one relay share through Redis (README, Several replicas). */
export interface SharedState {
  limiter: RateLimiter;
  ledger: EventLedger;
  invalidation: RedisIndexInvalidation;
  rings: RedisRingRegistry;
  ringSessions: RedisRingSessionStore;
  /** The replicas' channel to each other (Watch grants and audio bridges live on one replica). */
  bus: ReplicaBus;
  /** The gateway activity every replica recorded and has not written yet (/v1/meta). */
  activityOverlay: RedisActivityOverlay;
  /** Live Activity registrations of all replicas. */
  liveActivities: RedisLiveActivities;
  /** The decision lock of all replicas (capacity check and park, RelayContext.decisionLock). */
  decisionLock: <T>(work: () => Promise<T>) => Promise<T>;
  /** This replica's Watch grants as part of the relay's (each grant lives on one replica). */
  distributeWatch(local: LocalWatchGrants, settings: WatchSettings): ClusterWatchGrants;
  close(): Promise<void>;
}

/** The bounds of the rings and ring sessions (the in-memory ones' values, from FIXED_LIMITS). */
export interface RingBounds {
  ringTtlMs: number;
  sessionTtlMs: number;
  maxSessionWaiters: number;
  maxSessionWaitMs: number;
}

/**
 * Connects to Redis (three connections: commands, the invalidation subscription and the replica bus'
 * subscriptions, which Redis keeps apart from commands) and builds the shared implementations. Never fails on an unreachable Redis: the relay starts,
 * answers 503 shared_state_unavailable where it needs Redis, and recovers when Redis answers.
 */
export async function openSharedState(
  config: SharedStateConfig,
  ledgerBounds: EventLedgerBounds,
  ringBounds: RingBounds,
  now: () => number,
  log: RelayLog,
): Promise<SharedState> {
  const commands = connectRedis(config.redisUrl, 'commands', log);
  const subscriber = connectRedis(config.redisUrl, 'invalidation', log);
  const invalidation = new RedisIndexInvalidation(commands, subscriber, config.keyPrefix, log);
  const busSubscriber = connectRedis(config.redisUrl, 'bus', log);
  const bus = new ReplicaBus(commands, busSubscriber, config.keyPrefix, log);
  if ((await whenReady(commands, BOOT_WAIT_MS)) && (await invalidation.subscribed(BOOT_WAIT_MS))) {
    log('info', 'shared state connected', { key_prefix: config.keyPrefix });
  }
  invalidation.markServing();
  return {
    limiter: new RedisRateLimiter(commands, config.keyPrefix),
    ledger: new RedisEventLedger(commands, config.keyPrefix, ledgerBounds, now),
    invalidation,
    rings: new RedisRingRegistry(commands, config.keyPrefix, ringBounds.ringTtlMs, now),
    ringSessions: new RedisRingSessionStore(commands, bus, config.keyPrefix, {
      ttlMs: ringBounds.sessionTtlMs,
      maxWaiters: ringBounds.maxSessionWaiters,
      maxWaitMs: ringBounds.maxSessionWaitMs,
    }),
    bus,
    decisionLock: redisLock(commands, `${config.keyPrefix}decision-lock`),
    liveActivities: new RedisLiveActivities(commands, config.keyPrefix, now),
    activityOverlay: new RedisActivityOverlay(commands, config.keyPrefix, ACTIVITY_OVERLAY_TTL_MS),
    distributeWatch: (local, settings) => new ClusterWatchGrants(local, bus, commands, config.keyPrefix, settings, now),
    close: async () => {
      bus.close();
      closeRedis(commands);
      closeRedis(subscriber);
      closeRedis(busSubscriber);
    },
  };
}
