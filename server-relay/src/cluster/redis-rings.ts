import type { Redis } from 'ioredis';
import { z } from 'zod';
import type { RingSessionStore } from '../ephemeral/ring-sessions.js';
import type { Ring, RingRegistry, RingSettlement } from '../ephemeral/rings.js';
import { shared } from './redis-connection.js';
import type { ReplicaBus } from './replica-bus.js';

const Settlement = z.object({
  by: z.enum(['phone', 'watch']),
  outcome: z.enum(['answered', 'declined']),
  start: z.string().optional(),
});

const StoredRing = z.object({
  id: z.string(),
  token: z.string(),
  installationId: z.string(),
  createdAt: z.number(),
  phoneToken: z.string(),
  watchToken: z.string().optional(),
});

/**
 * Rings shared by the replicas: the ring in one key and its settlement in another, both living the
 * ring's 10 minutes. The settlement is written with SET NX, so of two settles on two replicas exactly
 * one wins and the other reads the winner (409 already_settled), as in one process. Redis' expiry
 * replaces the in-memory bound of 10,000 rings: a ring costs a few hundred bytes for 10 minutes.
 */
export class RedisRingRegistry implements RingRegistry {
  constructor(
    private readonly client: Redis,
    private readonly keyPrefix: string,
    private readonly ttlMs: number,
    private readonly now: () => number,
  ) {}

  private ringKey(id: string): string {
    return `${this.keyPrefix}ring:${id}`;
  }

  private settledKey(id: string): string {
    return `${this.keyPrefix}ring-settled:${id}`;
  }

  async create(ring: Ring): Promise<void> {
    const { settled: _settled, ...stored } = ring;
    const ttl = Math.max(1, ring.createdAt + this.ttlMs - this.now());
    await shared(() => this.client.set(this.ringKey(ring.id), JSON.stringify(stored), 'PX', ttl));
  }

  async get(id: string): Promise<Ring | undefined> {
    const [ringText, settledText] = await shared(() => this.client.mget(this.ringKey(id), this.settledKey(id)));
    const ring = parse(StoredRing, ringText);
    if (!ring || ring.createdAt + this.ttlMs <= this.now()) return undefined;
    const settled = parse(Settlement, settledText);
    return { ...withoutUndefined(ring), ...(settled ? { settled: withoutUndefined(settled) } : {}) };
  }

  async settle(id: string, settled: RingSettlement): Promise<RingSettlement | undefined> {
    const ring = await this.get(id);
    if (!ring) return undefined;
    if (ring.settled) return ring.settled;
    const ttl = Math.max(1, ring.createdAt + this.ttlMs - this.now());
    const written = await shared(() => this.client.set(this.settledKey(id), JSON.stringify(settled), 'PX', ttl, 'NX'));
    if (written === 'OK') return settled;
    return (await this.get(id))?.settled;
  }
}

/**
 * Counts one more waiter of a ring and (re)arms the counter's expiry in the same step, so a counter
 * never outlives the longest wait. KEYS: the counter. ARGV: its expiry.
 */
const WAITER_JOIN_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return count`;

type WaiterClient = Redis & { conduitWaiterJoin(key: string, expiryMs: number): Promise<number> };

/**
 * Sealed ring sessions shared by the replicas: stored in Redis for their 2 minutes, and a waiting fetch
 * on any replica is woken through a relay-wide topic that carries only the ring id (the session itself
 * is read from its key). The two-waiters bound is a counter per ring, so it holds across replicas; it
 * expires with the longest wait, so a replica killed while holding waiters cannot keep a ring busy.
 * Redis' expiry replaces the in-memory 32 MB bound on stored sessions.
 */
export class RedisRingSessionStore implements RingSessionStore {
  private readonly waiters = new Map<string, Set<() => void>>();
  private unlisten: Promise<() => void> | undefined;
  private readonly client: WaiterClient;

  constructor(
    client: Redis,
    private readonly bus: ReplicaBus,
    private readonly keyPrefix: string,
    private readonly bounds: { ttlMs: number; maxWaiters: number; maxWaitMs: number },
  ) {
    client.defineCommand('conduitWaiterJoin', { numberOfKeys: 1, lua: WAITER_JOIN_SCRIPT });
    this.client = client as WaiterClient;
  }

  private sessionKey(ringId: string): string {
    return `${this.keyPrefix}ring-session:${ringId}`;
  }

  async put(ringId: string, sealed: string): Promise<void> {
    await shared(() => this.client.set(this.sessionKey(ringId), sealed, 'PX', this.bounds.ttlMs));
    await this.bus.announce('ring-session', ringId);
  }

  async take(ringId: string, waitMs: number, signal?: AbortSignal): Promise<string | null | 'busy'> {
    const stored = await shared(() => this.client.get(this.sessionKey(ringId)));
    if (stored !== null) return stored;
    if (waitMs <= 0) return null;
    await this.listening();
    const countKey = `${this.keyPrefix}ring-session-waiters:${ringId}`;
    const count = await shared(() => this.client.conduitWaiterJoin(countKey, this.bounds.maxWaitMs + 5_000));
    try {
      if (count > this.bounds.maxWaiters) return 'busy';
      return await this.wait(ringId, waitMs, signal);
    } finally {
      this.client.decr(countKey).catch(() => undefined);
    }
  }

  /** Waits for the ring's session: woken by a put on any replica, read from Redis each time. */
  private async wait(ringId: string, waitMs: number, signal?: AbortSignal): Promise<string | null> {
    let wake: () => void = () => undefined;
    let woken = new Promise<void>((resolve) => (wake = resolve));
    const listener = () => wake();
    const set = this.waiters.get(ringId) ?? new Set();
    set.add(listener);
    this.waiters.set(ringId, set);
    let ended = false;
    const end = () => {
      ended = true;
      wake();
    };
    const timer = setTimeout(end, waitMs);
    signal?.addEventListener('abort', end, { once: true });
    try {
      for (;;) {
        // Read after registering: a put between the first read and the registration is not missed.
        const sealed = await shared(() => this.client.get(this.sessionKey(ringId)));
        if (sealed !== null) return sealed;
        if (ended) return null;
        await woken;
        woken = new Promise<void>((resolve) => (wake = resolve));
        if (ended) return null;
      }
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', end);
      set.delete(listener);
      if (set.size === 0 && this.waiters.get(ringId) === set) this.waiters.delete(ringId);
    }
  }

  private listening(): Promise<() => void> {
    this.unlisten ??= this.bus
      .listen('ring-session', (ringId) => {
        for (const waiter of this.waiters.get(ringId) ?? []) waiter();
      })
      .catch((error: unknown) => {
        this.unlisten = undefined;
        throw error;
      });
    return this.unlisten;
  }
}

function parse<T>(schema: z.ZodType<T>, text: string | null | undefined): T | undefined {
  if (!text) return undefined;
  try {
    const parsed = schema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** Drops keys whose value is undefined (exactOptionalPropertyTypes). */
function withoutUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
