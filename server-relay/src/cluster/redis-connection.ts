import { Redis } from 'ioredis';
import type { RelayLog } from '../relay-context.js';
import { SharedStateUnavailable } from './shared-state-unavailable.js';

/**
 * How long one Redis command may take before the request that needs it is answered 503: long enough
 * for a loaded Redis (sub-millisecond normally), short enough that a hung one never holds a client.
 */
export const REDIS_COMMAND_TIMEOUT_MS = 1_000;
/** Reconnect attempts back off to this, and go on for ever: the relay recovers without a restart. */
const MAX_RECONNECT_DELAY_MS = 1_000;

/**
 * A Redis connection that fails fast: while Redis is away a command is refused at once (no offline
 * queue, no retry of a command in flight), so requests get their 503 in milliseconds instead of
 * piling up, and reconnection goes on in the background. Errors are reported through `log` once per
 * outage, never thrown (an 'error' event without a listener would end the process).
 */
export function connectRedis(url: string, role: string, log: RelayLog): Redis {
  const client = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
    connectTimeout: 2_000,
    autoResubscribe: false,
    retryStrategy: (attempt) => Math.min(attempt * 100, MAX_RECONNECT_DELAY_MS),
  });
  let down = false;
  const lost = (reason: string) => {
    if (down || closing.has(client)) return;
    down = true;
    // The reason names host and port at most (ioredis never puts the URL's password in it).
    log('error', 'redis unavailable', { role, error: reason });
  };
  client.on('error', (error: Error) => lost(error.message));
  // A Redis that stops cleanly closes the connection without an error.
  client.on('close', () => lost('connection closed'));
  client.on('ready', () => {
    if (!down) return;
    down = false;
    log('info', 'redis available again', { role });
  });
  return client;
}

const closing = new WeakSet<Redis>();

/** Closes a connection made by connectRedis without reporting it as an outage. */
export function closeRedis(client: Redis): void {
  closing.add(client);
  client.disconnect();
}

/** Waits until the connection is ready, up to `timeoutMs`; false when it is not (the relay starts anyway). */
export function whenReady(client: Redis, timeoutMs: number): Promise<boolean> {
  if (client.status === 'ready') return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (ready: boolean) => {
      clearTimeout(timer);
      client.off('ready', onReady);
      resolve(ready);
    };
    const onReady = () => done(true);
    const timer = setTimeout(() => done(false), timeoutMs);
    client.on('ready', onReady);
  });
}

/** Runs a Redis operation; any failure (refused, timed out, lost) becomes SharedStateUnavailable. */
export async function shared<T>(operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    throw new SharedStateUnavailable(error instanceof Error ? error.message : String(error));
  }
}
