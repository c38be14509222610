import type { RelayStore } from './relay-store.js';
import type { GatewayActivity } from './records.js';

/**
 * Replicas (REDIS_URL): the pending activity every replica recorded, so /v1/meta on one replica shows
 * what another recorded before its flush (cluster/redis-activity-overlay.ts).
 */
export interface SharedActivityOverlay {
  publish(installationId: string, gatewayId: string, activity: GatewayActivity): Promise<void>;
  read(installationId: string, gatewayIds: readonly string[]): Promise<Map<string, GatewayActivity>>;
}

/** A replica publishes a gateway's last-event time at most this often (plugin fields always). */
export const SHARED_LAST_EVENT_EVERY_MS = 1_000;

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
    private readonly shared?: SharedActivityOverlay,
  ) {}

  /** When this replica last published each gateway's last-event time (cleared with the window's flush). */
  private published = new Map<string, number>();

  record(installationId: string, gatewayId: string, activity: GatewayActivity): void {
    const key = `${installationId}:${gatewayId}`;
    const existing = this.pending.get(key);
    if (existing) {
      // The pending entry's own object (never the caller's): merged in place, field by field.
      const merged = existing.activity;
      if (activity.pluginVersion !== undefined) merged.pluginVersion = activity.pluginVersion;
      if (activity.pluginCapabilities !== undefined) merged.pluginCapabilities = activity.pluginCapabilities;
      if (activity.lastEventAt !== undefined) merged.lastEventAt = activity.lastEventAt;
    } else {
      this.pending.set(key, { installationId, gatewayId, activity: copyActivity(activity) });
    }
    if (this.shared) this.publish(key, installationId, gatewayId, activity, this.shared);
    if (!this.timer) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        void this.flush().catch(this.onError);
      }, this.delayMs);
      this.timer.unref();
    }
  }

  /**
   * Sent now, not awaited: the command goes out on the connection ahead of the event path's next Redis
   * command (its ledger write), so it is applied before the event is answered. A failure only costs
   * /v1/meta on other replicas the value until the flush; the database stays the truth.
   */
  private publish(
    key: string,
    installationId: string,
    gatewayId: string,
    activity: GatewayActivity,
    overlay: SharedActivityOverlay,
  ): void {
    const plugin = activity.pluginVersion !== undefined || activity.pluginCapabilities !== undefined;
    const at = activity.lastEventAt;
    const last = this.published.get(key);
    const due = at !== undefined && (last === undefined || at - last >= SHARED_LAST_EVENT_EVERY_MS);
    if (!plugin && !due) return;
    if (due) this.published.set(key, at);
    void overlay.publish(installationId, gatewayId, activity).catch(() => undefined);
  }

  /**
   * The not-yet-written activity of these gateways: this process' own, and with replicas every
   * replica's (plugin fields as last published, the latest last-event time).
   */
  async overlays(installationId: string, gatewayIds: readonly string[]): Promise<Map<string, GatewayActivity>> {
    const others = this.shared
      ? await this.shared.read(installationId, gatewayIds)
      : new Map<string, GatewayActivity>();
    const out = new Map<string, GatewayActivity>();
    for (const gatewayId of gatewayIds) {
      const own = this.overlay(installationId, gatewayId);
      const shared = others.get(gatewayId);
      if (!own && !shared) continue;
      const merged: GatewayActivity = { ...own, ...shared };
      const times = [own?.lastEventAt, shared?.lastEventAt].filter((t): t is number => t !== undefined);
      if (times.length > 0) merged.lastEventAt = Math.max(...times);
      out.set(gatewayId, merged);
    }
    return out;
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
    this.published = new Map();
    // Flushes run one after another; each writes its gateways in bulk statements (RelayStore).
    this.flushing = this.flushing.then(() => this.store.recordGatewayActivities(batch));
    await this.flushing;
  }
}

/** The fields given, and only those (a literal of one shape rather than a spread). */
function copyActivity(activity: GatewayActivity): GatewayActivity {
  const copy: GatewayActivity = {};
  if (activity.pluginVersion !== undefined) copy.pluginVersion = activity.pluginVersion;
  if (activity.pluginCapabilities !== undefined) copy.pluginCapabilities = activity.pluginCapabilities;
  if (activity.lastEventAt !== undefined) copy.lastEventAt = activity.lastEventAt;
  return copy;
}
