import type { DecisionRecord } from '../domain/decisions.js';
import {
  MemoryCredentialIndex,
  SINGLE_PROCESS,
  type CredentialIndex,
  type IndexInvalidation,
} from './credential-index.js';
import type { GatewayActivity, GatewayRecord, InstallationRecord, PairingRecord } from './records.js';
import type { DecisionChange, InstallationPatch, RelayStore, SecondaryTokenField, StorePage } from './relay-store.js';

/** A database read of one installation with its gateways (the refill of a forgotten one). */
interface Read {
  installation: InstallationRecord | null;
  gateways: GatewayRecord[];
}

export interface IndexedStoreOptions {
  /**
   * Other processes insert installations too (replicas sharing one PostgreSQL): the installation count
   * is the database's, taken under its lock for each registration, not a count this process keeps.
   */
  sharedCapacity?: boolean;
  /**
   * Other processes write too: a miss ("no such installation", "no such gateway") is checked in the
   * database before it is answered. Their writes reach this index through the invalidation stream
   * only after they answered their client, so a phone registered, or a host paired, on another replica
   * may ask here first. A hit needs no check: what other processes revoke arrives within a round trip.
   */
  verifyMisses?: boolean;
  /**
   * The invalidation stream had a gap (other processes' changes may have been missed): the caller
   * reloads the index (`forgetInstallations`).
   */
  onResync?: () => void;
}

/**
 * The relay's store: the database beneath, the credential index (credential-index.ts) in front, so
 * the event path and every device or gateway authentication answer from memory. Reads ask the database
 * only while the index is loading and for installations it forgot. Each write goes to the database
 * first and reaches the index only once it committed; a write that fails makes the index forget the
 * installation (a failure may still have committed, e.g. a PostgreSQL connection lost after COMMIT),
 * so its next lookup reads whatever the database holds.
 */
export class IndexedStore implements RelayStore {
  private installationCount = 0;
  private installationCountLoaded = false;
  private installationCountLoad: Promise<void> | undefined;
  /** Registrations admitted whose insert has not resolved yet; they count against the capacity. */
  private installationsInFlight = 0;
  /** One database read per forgotten installation, however many requests ask for it meanwhile. */
  private readonly refills = new Map<string, Promise<Read>>();
  private readonly unsubscribe: () => void;

  constructor(
    private readonly inner: RelayStore,
    readonly index: CredentialIndex = new MemoryCredentialIndex(),
    private readonly invalidation: IndexInvalidation = SINGLE_PROCESS,
    private readonly options: IndexedStoreOptions = {},
  ) {
    this.unsubscribe = invalidation.subscribe({
      forget: (ids) => this.index.forget(ids),
      resync: () => options.onResync?.(),
    });
  }

  /** Loads the index from the database (at boot, in the background; again after a prune). */
  loadIndex(): Promise<{ installations: number; gateways: number } | null> {
    return this.index.load(this.inner);
  }

  pageInstallations(after: string | null, take: number): Promise<StorePage<InstallationRecord>> {
    return this.inner.pageInstallations(after, take);
  }

  pageGateways(after: string | null, take: number): Promise<StorePage<GatewayRecord>> {
    return this.inner.pageGateways(after, take);
  }

  writesElsewhere(): Promise<string | null> {
    return this.inner.writesElsewhere();
  }

  /**
   * The database write, then the index: `apply` runs only after `write` resolved. The ids are published
   * to other processes either way (IndexInvalidation), and forgotten here when the write failed.
   */
  private async writeThrough<T>(
    ids: readonly string[],
    write: () => Promise<T>,
    apply: (result: T) => void,
  ): Promise<T> {
    let result: T;
    try {
      result = await write();
    } catch (error) {
      this.index.forget(ids);
      this.invalidation.publish(ids);
      throw error;
    }
    apply(result);
    this.invalidation.publish(ids);
    return result;
  }

  /** The database's answer for a forgotten installation, put back in the index unless it changed meanwhile. */
  private refill(id: string): Promise<Read> {
    const pending = this.refills.get(id);
    if (pending) return pending;
    const ticket = this.index.ticket(id);
    const read = Promise.all([this.inner.findInstallation(id), this.inner.listGateways(id)]).then(
      ([installation, gateways]) => {
        if (ticket !== undefined) this.index.refill(id, ticket, installation, gateways);
        return { installation, gateways };
      },
    );
    this.refills.set(id, read);
    const done = () => this.refills.delete(id);
    read.then(done, done);
    return read;
  }

  /**
   * The installation count gates every registration; counting rows costs O(n), so it is read once
   * and then kept by this process's inserts and expiry sweeps (a prune through the admin API reads it
   * again). Every caller awaits the same first read, so no insert can slip in between that read and its result.
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
   * Installations were removed behind the store (the admin API's prune): the index is loaded again
   * (lookups ask the database meanwhile) and the count read again on next use.
   */
  forgetInstallations(): Promise<{ installations: number; gateways: number } | null> {
    this.installationCountLoaded = false;
    this.installationCountLoad = undefined;
    return this.loadIndex();
  }

  async countInstallations(): Promise<number> {
    if (this.options.sharedCapacity) return this.inner.countInstallations();
    await this.loadInstallationCount();
    return this.installationCount;
  }

  countActiveInstallations(): Promise<number> {
    return this.inner.countActiveInstallations();
  }

  async insertInstallation(record: InstallationRecord): Promise<void> {
    await this.insertInstallationIfAdmitted(record, () => undefined);
  }

  async insertInstallationIfAdmitted(
    record: InstallationRecord,
    admit: (count: number) => void | Promise<void>,
  ): Promise<void> {
    if (this.options.sharedCapacity) {
      // The database admits (under its lock, against every process's committed rows); the index follows.
      // A refusal wrote nothing, so nobody needs to hear of it; a failure after admission may have.
      let admitted = false;
      const admitOnce = async (count: number) => {
        await admit(count);
        admitted = true;
      };
      try {
        await this.inner.insertInstallationIfAdmitted(record, admitOnce);
      } catch (error) {
        if (admitted) {
          this.index.forget([record.id]);
          this.invalidation.publish([record.id]);
        }
        throw error;
      }
      this.index.putInstallation(record);
      this.invalidation.publish([record.id]);
      return;
    }
    await this.loadInstallationCount();
    // From the count to the reservation nothing awaits, and the slot stays held while `admit` awaits
    // (the shared budget) and the row is written: fifty racing registrations against ten free slots
    // admit exactly ten.
    const count = this.installationCount + this.installationsInFlight;
    this.installationsInFlight += 1;
    try {
      await admit(count);
      await this.writeThrough(
        [record.id],
        () => this.inner.insertInstallation(record),
        () => this.index.putInstallation(record),
      );
      this.installationCount += 1;
    } finally {
      this.installationsInFlight -= 1;
    }
  }

  async findInstallation(id: string): Promise<InstallationRecord | null> {
    const known = this.index.installation(id);
    if (known === null && this.options.verifyMisses) return (await this.reread(id)).installation;
    if (known !== undefined) return known;
    if (!this.index.complete) return this.inner.findInstallation(id);
    return (await this.refill(id)).installation;
  }

  /** A miss checked in the database (verifyMisses): forgotten, then read and put back like any forgotten one. */
  private reread(id: string): Promise<Read> {
    if (!this.refills.has(id)) this.index.forget([id]);
    return this.refill(id);
  }

  updateInstallation(id: string, patch: InstallationPatch): Promise<void> {
    return this.writeThrough(
      [id],
      () => this.inner.updateInstallation(id, patch),
      () => this.index.patchInstallation(id, patch),
    );
  }

  clearTokenIfUnchanged(id: string, field: SecondaryTokenField, expected: string): Promise<void> {
    return this.writeThrough(
      [id],
      () => this.inner.clearTokenIfUnchanged(id, field, expected),
      () => this.index.clearTokenIfUnchanged(id, field, expected),
    );
  }

  recordInstallationSeen(id: string, atMs: number): Promise<void> {
    // Written through: the stamp is what the next noteSeen compares with.
    return this.writeThrough(
      [id],
      () => this.inner.recordInstallationSeen(id, atMs),
      () => this.index.patchInstallation(id, { lastSeenAt: atMs }),
    );
  }

  async expireUnpairedInstallations(
    cutoffMs: number,
    nowMs: number,
    onRemoved?: (ids: string[]) => void,
  ): Promise<string[]> {
    // The count is loaded before the rows go, so subtracting them keeps it exact (inserts meanwhile
    // are counted by their own increment).
    await this.loadInstallationCount();
    // Batch by batch as each commits: a sweep that fails half-way has still removed the earlier batches.
    return this.inner.expireUnpairedInstallations(cutoffMs, nowMs, (ids) => {
      this.installationCount -= ids.length;
      this.index.removeInstallations(ids);
      this.invalidation.publish(ids);
      onRemoved?.(ids);
    });
  }

  async listGateways(installationId: string): Promise<GatewayRecord[]> {
    const known = this.index.gateways(installationId);
    if (known !== undefined) return known;
    if (!this.index.complete) return this.inner.listGateways(installationId);
    return (await this.refill(installationId)).gateways;
  }

  async findGateway(installationId: string, gatewayId: string): Promise<GatewayRecord | null> {
    const known = this.index.gateway(installationId, gatewayId);
    if (known === null && this.options.verifyMisses) {
      return (await this.reread(installationId)).gateways.find((gateway) => gateway.id === gatewayId) ?? null;
    }
    if (known !== undefined) return known;
    if (!this.index.complete) return this.inner.findGateway(installationId, gatewayId);
    return (await this.refill(installationId)).gateways.find((gateway) => gateway.id === gatewayId) ?? null;
  }

  async countGateways(installationId: string): Promise<number> {
    return (await this.listGateways(installationId)).length;
  }

  deleteGateway(installationId: string, gatewayId: string): Promise<void> {
    return this.writeThrough(
      [installationId],
      () => this.inner.deleteGateway(installationId, gatewayId),
      () => this.index.removeGateway(installationId, gatewayId),
    );
  }

  async recordGatewayActivities(
    entries: { installationId: string; gatewayId: string; activity: GatewayActivity }[],
  ): Promise<void> {
    // Not through writeThrough: these are latest-known times for /v1/meta, never a credential, and a
    // failed flush forgetting every busy installation would send all their next events to the database.
    // Other processes learn them from the database (they change no authentication).
    await this.inner.recordGatewayActivities(entries);
    this.index.recordActivities(entries);
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

  claimPairing(codeHash: string, gateway: GatewayRecord, maxGateways?: number): Promise<boolean> {
    // The claim adds the gateway and may set the installation's pairedAt, both in the index.
    return this.writeThrough(
      [gateway.installationId],
      () => this.inner.claimPairing(codeHash, gateway, maxGateways),
      (claimed) => {
        if (claimed) this.index.addGateway(gateway);
      },
    );
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
    this.unsubscribe();
    return this.inner.close();
  }
}
