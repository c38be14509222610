/** Something the registry can hang up (a live call). */
export interface Closable {
  readonly id: string;
  close(reason: string): Promise<void>;
}

/** A slot held while a call is being set up; committed to a live call or released. */
export interface Reservation {
  commit(call: Closable): void;
  release(): void;
}

/**
 * Live calls and calls being set up, capped together (HERMES_REALTIME_MAX_CALLS): a burst of slow uploads
 * cannot exceed the cap, and every unsuccessful setup gives its slot back.
 */
export class CallRegistry {
  private readonly calls = new Map<string, Closable>();
  private pending = 0;

  constructor(private readonly maxCalls: number) {}

  get activeCount(): number {
    return this.calls.size;
  }

  get pendingCount(): number {
    return this.pending;
  }

  /** A slot, or null when `active + pending` already reaches the cap. */
  reserve(): Reservation | null {
    if (this.calls.size + this.pending >= this.maxCalls) return null;
    this.pending += 1;
    let settled = false;
    const settle = () => {
      if (settled) return false;
      settled = true;
      this.pending -= 1;
      return true;
    };
    return {
      commit: (call) => {
        if (settle()) this.calls.set(call.id, call);
      },
      release: () => void settle(),
    };
  }

  /** A call ended (idempotent). */
  remove(id: string): void {
    this.calls.delete(id);
  }

  get(id: string): Closable | undefined {
    return this.calls.get(id);
  }

  async closeAll(reason: string): Promise<void> {
    await Promise.all([...this.calls.values()].map((call) => call.close(reason)));
  }
}
