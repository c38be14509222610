/**
 * Event ids seen in the last 24 h, per installation, scoped by gateway (`gw:event_id`). Only prevents
 * a repeated push; a restart forgets them (at most one duplicate push), so one process keeps it in
 * memory, and several replicas in Redis (cluster/redis-event-ledger.ts), hence the promises. It never
 * rejects an event: at a bound the oldest ids are forgotten instead.
 */
export interface EventLedger {
  has(installationId: string, gatewayId: string, eventId: string): Promise<boolean>;
  /** Records the id; false when it was already there (a concurrent duplicate). */
  add(installationId: string, gatewayId: string, eventId: string): Promise<boolean>;
}

export interface EventLedgerBounds {
  ttlMs: number;
  perInstallation: number;
  total: number;
}

const SWEEP_INTERVAL_MS = 60_000;

export class MemoryEventLedger implements EventLedger {
  /** Insertion-ordered per installation, so the first entry is the oldest. */
  private readonly byInstallation = new Map<string, Map<string, number>>();
  private size = 0;
  private lastSweep = 0;

  constructor(
    private readonly bounds: EventLedgerBounds,
    private readonly now: () => number,
  ) {}

  has(installationId: string, gatewayId: string, eventId: string): Promise<boolean> {
    return Promise.resolve(this.hasNow(installationId, gatewayId, eventId));
  }

  add(installationId: string, gatewayId: string, eventId: string): Promise<boolean> {
    return Promise.resolve(this.addNow(installationId, gatewayId, eventId));
  }

  private hasNow(installationId: string, gatewayId: string, eventId: string): boolean {
    this.sweep();
    const seenAt = this.byInstallation.get(installationId)?.get(`${gatewayId}:${eventId}`);
    return seenAt !== undefined && seenAt + this.bounds.ttlMs > this.now();
  }

  private addNow(installationId: string, gatewayId: string, eventId: string): boolean {
    if (this.hasNow(installationId, gatewayId, eventId)) return false;
    let ids = this.byInstallation.get(installationId);
    if (!ids) {
      ids = new Map();
      this.byInstallation.set(installationId, ids);
    }
    const key = `${gatewayId}:${eventId}`;
    if (ids.delete(key)) this.size -= 1; // an expired entry is re-added at the end
    ids.set(key, this.now());
    this.size += 1;
    if (ids.size > this.bounds.perInstallation) this.dropOldest(installationId, ids.size - this.bounds.perInstallation);
    if (this.size > this.bounds.total) {
      // The installation holding most ids pays, plus 0.1 % of the bound, so the next adds do not rescan.
      const heaviest = this.heaviest();
      if (heaviest) this.dropOldest(heaviest, this.size - this.bounds.total + Math.ceil(this.bounds.total / 1000));
    }
    return true;
  }

  get count(): number {
    return this.size;
  }

  private heaviest(): string | undefined {
    let best: string | undefined;
    let bestSize = -1;
    for (const [installationId, ids] of this.byInstallation) {
      if (ids.size > bestSize) {
        best = installationId;
        bestSize = ids.size;
      }
    }
    return best;
  }

  private dropOldest(installationId: string, count: number): void {
    const ids = this.byInstallation.get(installationId);
    if (!ids) return;
    for (const key of ids.keys()) {
      if (count <= 0) break;
      ids.delete(key);
      this.size -= 1;
      count -= 1;
    }
    if (ids.size === 0) this.byInstallation.delete(installationId);
  }

  private sweep(): void {
    const now = this.now();
    if (now - this.lastSweep < SWEEP_INTERVAL_MS) return;
    this.lastSweep = now;
    for (const [installationId, ids] of this.byInstallation) {
      for (const [key, seenAt] of ids) {
        if (seenAt + this.bounds.ttlMs > now) break; // insertion order: the rest are newer
        ids.delete(key);
        this.size -= 1;
      }
      if (ids.size === 0) this.byInstallation.delete(installationId);
    }
  }
}
