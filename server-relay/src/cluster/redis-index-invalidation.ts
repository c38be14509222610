import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import type { RelayLog } from '../relay-context.js';
import type { IndexInvalidation, InvalidationListener } from '../store/credential-index.js';

/** Ids held for a publication that failed; past it the replica asks the others to resync instead. */
const MAX_PENDING_IDS = 10_000;

/**
 * What a replica publishes after a commit: who wrote (its own messages are skipped) and which
 * installations, or `resync` when it could not tell the others what it changed (see `publish`).
 */
const InvalidationMessage = z.object({
  origin: z.string().min(1).max(64),
  // An expiry sweep publishes a batch at a time; a bound keeps a bad publisher from costing much.
  ids: z.array(z.string().min(1).max(200)).max(MAX_PENDING_IDS),
  resync: z.boolean().optional(),
});

/**
 * The credential index's invalidation over Redis pub/sub: each replica publishes the installations a
 * committed write changed, and every other replica forgets them, so its next lookup reads the database
 * (a revoked gateway or a deactivated installation is refused everywhere within a round trip of the
 * commit). Pub/sub delivers at most once: whenever the subscription was down (a Redis restart, a lost
 * connection, the first subscription racing the boot-time load) messages may have been missed, so each
 * subscription after the first asks the index to be loaded again (`resync`).
 */
export class RedisIndexInvalidation implements IndexInvalidation {
  private readonly origin = randomUUID();
  private readonly channel: string;
  private listener: InvalidationListener | undefined;
  private subscriptions = 0;
  /** Waiters of `subscribed()`, told at the first subscription. */
  private readonly onSubscribed = new Set<() => void>();
  /** Set once the relay serves: from then on every new subscription may have missed messages. */
  private serving = false;
  /** Installations whose publication failed, sent again when the connection is back. */
  private readonly pending = new Set<string>();
  private pendingOverflow = false;

  constructor(
    private readonly publisher: Redis,
    private readonly subscriber: Redis,
    keyPrefix: string,
    private readonly log: RelayLog,
  ) {
    this.channel = `${keyPrefix}index-invalidation`;
    subscriber.on('message', (channel: string, text: string) => {
      if (channel === this.channel) this.receive(text);
    });
    subscriber.on('ready', () => this.joinChannel());
    if (subscriber.status === 'ready') this.joinChannel();
    publisher.on('ready', () => this.publishPending());
  }

  /**
   * The relay starts serving (its index loads from now on): a subscription made later, the first one
   * included when Redis was down at boot, follows a gap and asks for a resync.
   */
  markServing(): void {
    this.serving = true;
  }

  /** Resolves once this replica has subscribed at least once (true), or when `timeoutMs` passed (false). */
  subscribed(timeoutMs: number): Promise<boolean> {
    if (this.subscriptions > 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.onSubscribed.delete(done);
        resolve(false);
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        resolve(true);
      };
      this.onSubscribed.add(done);
    });
  }

  publish(installationIds: readonly string[]): void {
    if (installationIds.length === 0) return;
    this.send({ origin: this.origin, ids: [...installationIds] }, installationIds);
  }

  /**
   * Not awaited and never thrown: the write has committed. A publication that fails (this replica's
   * connection is down while the others' may be up, so they would see no gap) is kept and sent again
   * when the connection is back; too many kept, and the others are asked to load their index again.
   */
  private send(message: z.infer<typeof InvalidationMessage>, ids: readonly string[]): void {
    this.publisher.publish(this.channel, JSON.stringify(message)).catch((error: unknown) => {
      this.log('warn', 'index invalidation not published, kept for the reconnection', {
        count: ids.length,
        error: error instanceof Error ? error.message : String(error),
      });
      if (message.resync) this.pendingOverflow = true;
      for (const id of ids) {
        if (this.pending.size >= MAX_PENDING_IDS) {
          this.pendingOverflow = true;
          break;
        }
        this.pending.add(id);
      }
    });
  }

  private publishPending(): void {
    if (this.pendingOverflow) {
      this.pendingOverflow = false;
      this.pending.clear();
      this.send({ origin: this.origin, ids: [], resync: true }, []);
      return;
    }
    if (this.pending.size === 0) return;
    const ids = [...this.pending];
    this.pending.clear();
    this.send({ origin: this.origin, ids }, ids);
  }

  subscribe(listener: InvalidationListener): () => void {
    this.listener = listener;
    return () => {
      this.listener = undefined;
    };
  }

  private joinChannel(): void {
    this.subscriber.subscribe(this.channel).then(
      () => {
        this.subscriptions += 1;
        for (const waiter of this.onSubscribed) waiter();
        this.onSubscribed.clear();
        if (this.serving) this.listener?.resync();
      },
      (error: unknown) =>
        this.log('warn', 'index invalidation subscription failed', {
          error: error instanceof Error ? error.message : String(error),
        }),
    );
  }

  private receive(text: string): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return;
    }
    const message = InvalidationMessage.safeParse(parsed);
    if (!message.success || message.data.origin === this.origin) return;
    if (message.data.resync) this.listener?.resync();
    else this.listener?.forget(message.data.ids);
  }
}
