/**
 * Rings of a call pushed to both the phone and the Watch (§6): whoever answers or declines first
 * settles it, and the other device is told to stop. In memory for 10 minutes; a restart drops them
 * (the other device then rings out on its own).
 */
export interface Ring {
  id: string;
  /** sha256-free: the token is compared in constant time; it only ever lived in the two pushes. */
  token: string;
  installationId: string;
  createdAt: number;
  phoneToken: string;
  watchToken?: string;
  settled?: { by: 'phone' | 'watch'; outcome: 'answered' | 'declined'; start?: string };
}

export type RingSettlement = NonNullable<Ring['settled']>;

/** In memory for one process; in Redis for replicas (cluster/redis-rings.ts), hence the promises. */
export interface RingRegistry {
  create(ring: Ring): void | Promise<void>;
  get(id: string): Ring | undefined | Promise<Ring | undefined>;
  /**
   * Records the settlement; the first one wins. Returns the settlement in force: `settled` itself when
   * this call won, the earlier one when another settle got there first, undefined for an unknown ring.
   */
  settle(id: string, settled: RingSettlement): RingSettlement | undefined | Promise<RingSettlement | undefined>;
}

export class MemoryRingRegistry implements RingRegistry {
  private readonly rings = new Map<string, Ring>();

  constructor(
    private readonly bounds: { ttlMs: number; max: number },
    private readonly now: () => number,
  ) {}

  create(ring: Ring): void {
    this.sweep();
    this.rings.set(ring.id, ring);
    while (this.rings.size > this.bounds.max) {
      const oldest = this.rings.keys().next().value;
      if (oldest === undefined) break;
      this.rings.delete(oldest);
    }
  }

  get(id: string): Ring | undefined {
    const ring = this.rings.get(id);
    if (!ring) return undefined;
    if (ring.createdAt + this.bounds.ttlMs <= this.now()) {
      this.rings.delete(id);
      return undefined;
    }
    return ring;
  }

  settle(id: string, settled: RingSettlement): RingSettlement | undefined {
    const ring = this.get(id);
    if (ring && !ring.settled) ring.settled = settled;
    return ring?.settled;
  }

  private sweep(): void {
    const now = this.now();
    for (const [id, ring] of this.rings) {
      if (ring.createdAt + this.bounds.ttlMs > now) break;
      this.rings.delete(id);
    }
  }
}
