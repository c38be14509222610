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

export interface RingRegistry {
  create(ring: Ring): void;
  get(id: string): Ring | undefined;
  /** Records the settlement; the first one wins. */
  settle(id: string, settled: NonNullable<Ring['settled']>): void;
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

  settle(id: string, settled: NonNullable<Ring['settled']>): void {
    const ring = this.get(id);
    if (ring && !ring.settled) ring.settled = settled;
  }

  private sweep(): void {
    const now = this.now();
    for (const [id, ring] of this.rings) {
      if (ring.createdAt + this.bounds.ttlMs > now) break;
      this.rings.delete(id);
    }
  }
}
