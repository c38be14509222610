import type { DecisionRecord } from '../domain/decisions.js';
import type { GatewayActivity, GatewayRecord, InstallationRecord, PairingRecord } from './records.js';

export type InstallationPatch = Partial<
  Pick<
    InstallationRecord,
    'deviceToken' | 'voipToken' | 'watchVoipToken' | 'locationPushToken' | 'preferences' | 'active' | 'updatedAt'
  >
>;

/** The optional tokens APNs may call gone one at a time, without the installation's alert token. */
export type SecondaryTokenField = 'voipToken' | 'watchVoipToken' | 'locationPushToken';

/** The installation holds its maximum of gateways (the claim consumed nothing). */
export class GatewayLimitReached extends Error {
  constructor() {
    super('the installation holds its maximum of gateways');
    this.name = 'GatewayLimitReached';
  }
}

/** What `updateDecision`'s callback decides: the outcome, and the record to write (none: no write). */
export interface DecisionChange<T> {
  result: T;
  next?: DecisionRecord;
}

/**
 * The relay's persistent state. Every method that resolves has made its write durable (the API
 * acknowledges only after it), and no method's cost grows with the number of installations.
 */
/** One page of a table read in pages, and where the next page starts (null: this was the last). */
export interface StorePage<T> {
  rows: T[];
  next: string | null;
}

export interface RelayStore {
  countInstallations(): Promise<number>;
  countActiveInstallations(): Promise<number>;
  insertInstallation(record: InstallationRecord): Promise<void>;
  /**
   * Inserts the installation if `admit` lets it in. `admit` gets the number of installations stored
   * or being inserted and throws (or rejects) to refuse; the slot is held from that count until `admit`
   * and the insert are done, so registrations racing each other, in this process or in other relay
   * processes on the same PostgreSQL, can never pass a capacity check together.
   */
  insertInstallationIfAdmitted(
    record: InstallationRecord,
    admit: (count: number) => void | Promise<void>,
  ): Promise<void>;
  findInstallation(id: string): Promise<InstallationRecord | null>;
  updateInstallation(id: string, patch: InstallationPatch): Promise<void>;
  /** Clears a secondary token only if it is still the one APNs refused (the phone may have sent a new one). */
  clearTokenIfUnchanged(id: string, field: SecondaryTokenField, expected: string): Promise<void>;
  /** The phone used its device credential at `atMs` (only the last-seen time changes). */
  recordInstallationSeen(id: string, atMs: number): Promise<void>;
  /**
   * Removes installations never paired (no pairedAt, no host) and not seen since `cutoffMs` (their
   * last-seen time, or their registration when never seen), unless a pairing code of theirs is live
   * at `nowMs`, with their expired codes; adds the number to the store's running total in the same
   * transaction. Each row is re-checked by the statement that deletes it, so a phone seen or paired
   * meanwhile keeps its row. Resolves with the removed ids, in batches that keep the event loop free;
   * `onRemoved` hears each batch as it commits (a sweep failing half-way has removed the earlier ones).
   */
  expireUnpairedInstallations(cutoffMs: number, nowMs: number, onRemoved?: (ids: string[]) => void): Promise<string[]>;
  /**
   * Up to `take` installations after the cursor (from the first when null), and the cursor of the next
   * page. The order is the store's own (SQLite: row order; PostgreSQL: id order): paging visits every
   * row once.
   */
  pageInstallations(after: string | null, take: number): Promise<StorePage<InstallationRecord>>;
  /** Up to `take` gateways after the cursor (from the first when null), as pageInstallations. */
  pageGateways(after: string | null, take: number): Promise<StorePage<GatewayRecord>>;
  /**
   * Changes whenever another connection committed to the database since the last call (SQLite's
   * `PRAGMA data_version`), so a boot-time load that paged through a table another process rewrote
   * meanwhile (a VACUUM renumbers SQLite's rows) knows to read it again. Null where paging needs no
   * such check (PostgreSQL pages by primary key).
   */
  writesElsewhere(): Promise<string | null>;

  listGateways(installationId: string): Promise<GatewayRecord[]>;
  findGateway(installationId: string, gatewayId: string): Promise<GatewayRecord | null>;
  countGateways(installationId: string): Promise<number>;
  deleteGateway(installationId: string, gatewayId: string): Promise<void>;
  /**
   * Many gateways' activity (the deferred flush): in bulk statements, not one per gateway, yielding
   * to the event loop between them so a large flush never stalls requests.
   */
  recordGatewayActivities(
    entries: { installationId: string; gatewayId: string; activity: GatewayActivity }[],
  ): Promise<void>;

  /** Replaces the installation's unclaimed codes with this one (one live code per installation). */
  replacePairing(record: PairingRecord): Promise<void>;
  findPairing(codeHash: string): Promise<PairingRecord | null>;
  deletePairing(codeHash: string): Promise<void>;
  /**
   * Consumes the code and adds the gateway in one transaction; false when the code was consumed
   * meanwhile. With `maxGateways`, the installation's gateways are counted in that transaction under a
   * lock of the installation, and a full installation throws GatewayLimitReached with the code kept:
   * claims racing on any relay processes never pass one count together.
   */
  claimPairing(codeHash: string, gateway: GatewayRecord, maxGateways?: number): Promise<boolean>;

  findDecision(key: string): Promise<DecisionRecord | null>;
  findDecisionsByRequest(installationId: string, requestId: string): Promise<DecisionRecord[]>;
  /**
   * Inserts unless the key exists, in one statement; false when it existed (a re-used request id
   * never sends a second card, and two racing events with one id park one decision).
   */
  insertDecision(record: DecisionRecord): Promise<boolean>;
  /**
   * Changes one decision atomically. `decide` sees the stored record (null when there is none) and
   * returns the outcome and, to change the record, its next state. The write is one conditional
   * statement that applies only while the record still holds what `decide` saw (its answer, its
   * answers and its release); if another write got there first, `decide` runs again on the fresh
   * record. So of concurrent answers to one decision (or one qid) exactly one is written and the
   * others see it answered, and answers to different qids are all kept. `decide` may run more than
   * once and must have no effect besides its result (or a thrown error, which ends the change).
   */
  updateDecision<T>(key: string, decide: (current: DecisionRecord | null) => DecisionChange<T>): Promise<T>;
  /** The card could not be delivered: sets `deliverable` false and touches nothing else (an answer may be in). */
  markDecisionUndeliverable(key: string): Promise<void>;
  /** Counts records created at or after `sinceMs` (within TTL), optionally per installation / active only. */
  countDecisions(filter: { sinceMs: number; installationId?: string; active?: boolean }): Promise<number>;
  /** Drops records created before `beforeMs` (lazy TTL pruning). */
  pruneDecisions(beforeMs: number): Promise<number>;

  close(): Promise<void>;
}
