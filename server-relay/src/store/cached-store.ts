import type { DecisionRecord } from '../domain/decisions.js';
import type { GatewayActivity, GatewayRecord, InstallationRecord, PairingRecord } from './records.js';
import type { DecisionChange, InstallationPatch, RelayStore, SecondaryTokenField } from './relay-store.js';

function withActivity(gateway: GatewayRecord, activity: GatewayActivity): GatewayRecord {
  return {
    ...gateway,
    pluginVersion: activity.pluginVersion ?? gateway.pluginVersion,
    pluginCapabilities: activity.pluginCapabilities ?? gateway.pluginCapabilities,
    lastEventAt: activity.lastEventAt ?? gateway.lastEventAt,
  };
}

/**
 * A write-through read cache of installations and gateways in front of the database, so
 * authenticating an event costs no query (a Prisma round trip is about a millisecond here, and every
 * event authenticates). Coherent because every write of this process goes through it and the relay
 * runs one process per store, as the reference requires; only records that exist are cached, so
 * unknown credentials cannot grow it, and it holds at most `maxEntries` of each kind.
 */
export class CachedStore implements RelayStore {
  private readonly installations = new Map<string, InstallationRecord>();
  private readonly gateways = new Map<string, GatewayRecord>();
  private installationCount = 0;
  private installationCountLoaded = false;
  private installationCountLoad: Promise<void> | undefined;
  /** Registrations admitted whose insert has not resolved yet; they count against the capacity. */
  private installationsInFlight = 0;

  constructor(
    private readonly inner: RelayStore,
    private readonly maxEntries = 100_000,
  ) {}

  private remember<V>(map: Map<string, V>, key: string, value: V): void {
    map.delete(key);
    map.set(key, value);
    if (map.size > this.maxEntries) {
      const oldest = map.keys().next().value;
      if (oldest !== undefined) map.delete(oldest);
    }
  }

  /**
   * The installation count gates every registration; counting rows costs O(n), so it is read once
   * and then kept by this process's inserts and expiry sweeps (other removals happen offline, by the
   * prune CLI).
   * Every caller awaits the same first read, so no insert can slip in between that read and its result.
   */
  private loadInstallationCount(): Promise<void> {
    if (this.installationCountLoaded) return Promise.resolve();
    this.installationCountLoad ??= this.inner.countInstallations().then(
      (count) => {
        this.installationCount = count;
        this.installationCountLoaded = true;
      },
      (error: unknown) => {
        this.installationCountLoad = undefined;
        throw error;
      },
    );
    return this.installationCountLoad;
  }

  /**
   * Installations were removed behind this cache (the admin API's prune): forget the cached ones and
   * read the count again on next use.
   */
  forgetInstallations(): void {
    this.installations.clear();
    this.installationCountLoaded = false;
    this.installationCountLoad = undefined;
  }

  async countInstallations(): Promise<number> {
    await this.loadInstallationCount();
    return this.installationCount;
  }

  countActiveInstallations(): Promise<number> {
    return this.inner.countActiveInstallations();
  }

  async insertInstallation(record: InstallationRecord): Promise<void> {
    await this.insertInstallationIfAdmitted(record, () => undefined);
  }

  async insertInstallationIfAdmitted(record: InstallationRecord, admit: (count: number) => void): Promise<void> {
    await this.loadInstallationCount();
    // From the count to the reservation nothing awaits: a registration in flight holds its slot, so
    // fifty racing registrations against ten free slots admit exactly ten.
    admit(this.installationCount + this.installationsInFlight);
    this.installationsInFlight += 1;
    try {
      await this.inner.insertInstallation(record);
      this.installationCount += 1;
    } finally {
      this.installationsInFlight -= 1;
    }
    this.remember(this.installations, record.id, record);
  }

  async findInstallation(id: string): Promise<InstallationRecord | null> {
    const cached = this.installations.get(id);
    if (cached) return cached;
    const record = await this.inner.findInstallation(id);
    if (record) this.remember(this.installations, id, record);
    return record;
  }

  async updateInstallation(id: string, patch: InstallationPatch): Promise<void> {
    // Dropped before and after: a reader racing the write re-reads the database.
    this.installations.delete(id);
    try {
      await this.inner.updateInstallation(id, patch);
    } finally {
      this.installations.delete(id);
    }
  }

  async clearTokenIfUnchanged(id: string, field: SecondaryTokenField, expected: string): Promise<void> {
    this.installations.delete(id);
    try {
      await this.inner.clearTokenIfUnchanged(id, field, expected);
    } finally {
      this.installations.delete(id);
    }
  }

  async recordInstallationSeen(id: string, atMs: number): Promise<void> {
    await this.inner.recordInstallationSeen(id, atMs);
    // Written through rather than dropped: the stamp is what the next noteSeen compares with.
    const cached = this.installations.get(id);
    if (cached) this.installations.set(id, { ...cached, lastSeenAt: atMs });
  }

  async expireUnpairedInstallations(cutoffMs: number, nowMs: number): Promise<string[]> {
    // The count is loaded before the rows go, so subtracting them keeps it exact (inserts meanwhile
    // are counted by their own increment).
    await this.loadInstallationCount();
    const removed = await this.inner.expireUnpairedInstallations(cutoffMs, nowMs);
    this.installationCount -= removed.length;
    for (const id of removed) this.installations.delete(id);
    return removed;
  }

  listGateways(installationId: string): Promise<GatewayRecord[]> {
    return this.inner.listGateways(installationId);
  }

  async findGateway(installationId: string, gatewayId: string): Promise<GatewayRecord | null> {
    const key = `${installationId}:${gatewayId}`;
    const cached = this.gateways.get(key);
    if (cached) return cached;
    const record = await this.inner.findGateway(installationId, gatewayId);
    if (record) this.remember(this.gateways, key, record);
    return record;
  }

  countGateways(installationId: string): Promise<number> {
    return this.inner.countGateways(installationId);
  }

  async deleteGateway(installationId: string, gatewayId: string): Promise<void> {
    const key = `${installationId}:${gatewayId}`;
    this.gateways.delete(key);
    try {
      await this.inner.deleteGateway(installationId, gatewayId);
    } finally {
      this.gateways.delete(key);
    }
  }

  async recordGatewayActivities(
    entries: { installationId: string; gatewayId: string; activity: GatewayActivity }[],
  ): Promise<void> {
    await this.inner.recordGatewayActivities(entries);
    // Cached gateways take the written values rather than being dropped: the deferred flush touches
    // every busy gateway every few seconds, and dropping them would send each one's next event to
    // the database. Only entries still cached are updated, so a revoked gateway never comes back.
    for (const { installationId, gatewayId, activity } of entries) {
      const key = `${installationId}:${gatewayId}`;
      const cached = this.gateways.get(key);
      if (cached) this.gateways.set(key, withActivity(cached, activity));
    }
  }

  replacePairing(record: PairingRecord): Promise<void> {
    return this.inner.replacePairing(record);
  }

  findPairing(codeHash: string): Promise<PairingRecord | null> {
    return this.inner.findPairing(codeHash);
  }

  deletePairing(codeHash: string): Promise<void> {
    return this.inner.deletePairing(codeHash);
  }

  async claimPairing(codeHash: string, gateway: GatewayRecord): Promise<boolean> {
    // The claim may set the installation's pairedAt: its cached copy is re-read.
    this.installations.delete(gateway.installationId);
    try {
      return await this.inner.claimPairing(codeHash, gateway);
    } finally {
      this.installations.delete(gateway.installationId);
    }
  }

  findDecision(key: string): Promise<DecisionRecord | null> {
    return this.inner.findDecision(key);
  }

  findDecisionsByRequest(installationId: string, requestId: string): Promise<DecisionRecord[]> {
    return this.inner.findDecisionsByRequest(installationId, requestId);
  }

  insertDecision(record: DecisionRecord): Promise<boolean> {
    return this.inner.insertDecision(record);
  }

  updateDecision<T>(key: string, decide: (current: DecisionRecord | null) => DecisionChange<T>): Promise<T> {
    return this.inner.updateDecision(key, decide);
  }

  markDecisionUndeliverable(key: string): Promise<void> {
    return this.inner.markDecisionUndeliverable(key);
  }

  countDecisions(filter: { sinceMs: number; installationId?: string; active?: boolean }): Promise<number> {
    return this.inner.countDecisions(filter);
  }

  pruneDecisions(beforeMs: number): Promise<number> {
    return this.inner.pruneDecisions(beforeMs);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
