import type { RelayStore } from './relay-store.js';
import type { GatewayActivity } from './records.js';

/**
 * Gateway last-seen times and plugin versions change on every event but matter only to /v1/meta, so
 * they are written at most every 5 s and on shutdown instead of once per event. Reads overlay the
 * pending values, so /v1/meta is current before the flush.
 */
export class DeferredActivity {
  private pending = new Map<string, { installationId: string; gatewayId: string; activity: GatewayActivity }>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: RelayStore,
    private readonly delayMs: number,
    private readonly onError: (error: unknown) => void,
  ) {}

  record(installationId: string, gatewayId: string, activity: GatewayActivity): void {
    const key = `${installationId}:${gatewayId}`;
    const existing = this.pending.get(key);
    this.pending.set(key, { installationId, gatewayId, activity: { ...existing?.activity, ...activity } });
    if (!this.timer) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        void this.flush().catch(this.onError);
      }, this.delayMs);
      this.timer.unref();
    }
  }

  /** The not-yet-written activity of one gateway. */
  overlay(installationId: string, gatewayId: string): GatewayActivity | undefined {
    return this.pending.get(`${installationId}:${gatewayId}`)?.activity;
  }

  /** Writes everything pending (also called on SIGTERM/SIGINT and when the app closes). */
  async flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    const batch = [...this.pending.values()];
    this.pending = new Map();
    // Flushes run one after another; each writes its gateways in bulk statements (RelayStore).
    this.flushing = this.flushing.then(() => this.store.recordGatewayActivities(batch));
    await this.flushing;
  }
}
