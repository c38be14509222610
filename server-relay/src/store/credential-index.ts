import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { Preferences } from '../domain/preferences.js';
import type { GatewayActivity, GatewayRecord, InstallationRecord } from './records.js';
import type { InstallationPatch, SecondaryTokenField, StorePage } from './relay-store.js';

/** Where the boot-time load reads the tables from: a page at a time, never the whole table at once. */
export interface IndexSource {
  pageInstallations(after: string | null, take: number): Promise<StorePage<InstallationRecord>>;
  pageGateways(after: string | null, take: number): Promise<StorePage<GatewayRecord>>;
  /** RelayStore.writesElsewhere: when it changed over a load, the load runs again. */
  writesElsewhere(): Promise<string | null>;
}

/**
 * Loads in a row when another connection kept writing to the database meanwhile (RelayStore
 * writesElsewhere); the last one stands (the relay is then not the database's only writer, which the
 * single-process mode asks of its operator anyway).
 */
const MAX_LOAD_ATTEMPTS = 3;

/**
 * Every installation with its gateways, in memory, so authenticating a gateway or a phone and reading
 * what a push needs (active flag, tokens, preferences, dashboard binding) costs no database round trip.
 * The database stays the truth: the index is loaded from it at boot and written through only after a
 * write committed (IndexedStore).
 *
 * A lookup answers the record, null (there is none), or undefined: the index does not know, ask the
 * database. It answers undefined for everything until its load is complete (a partial index must never
 * say "no such credential"), and afterwards for installations it was told to forget.
 *
 * The index sees only this process's writes. With several processes (REDIS_URL) a write committed by
 * another process reaches this one as `forget` (IndexInvalidation below, cluster/redis-index-invalidation.ts).
 */
export interface CredentialIndex {
  readonly complete: boolean;
  installation(id: string): InstallationRecord | null | undefined;
  gateway(installationId: string, gatewayId: string): GatewayRecord | null | undefined;
  /** The installation's gateways, oldest first (undefined: ask the database). */
  gateways(installationId: string): GatewayRecord[] | undefined;

  /**
   * Streams the tables into a fresh index; lookups ask the database until it resolves. Resolves null
   * when a later load replaced this one; rejects (leaving the index incomplete) when a read fails.
   */
  load(source: IndexSource): Promise<{ installations: number; gateways: number } | null>;

  // Write-through, called after the database committed the same change.
  putInstallation(record: InstallationRecord): void;
  patchInstallation(id: string, patch: IndexPatch): void;
  clearTokenIfUnchanged(id: string, field: SecondaryTokenField, expected: string): void;
  removeInstallations(ids: readonly string[]): void;
  /** A claimed pairing: the gateway is added and the installation paired (if it was not yet), as the claim's statement does. */
  addGateway(record: GatewayRecord): void;
  removeGateway(installationId: string, gatewayId: string): void;
  recordActivities(entries: readonly { installationId: string; gatewayId: string; activity: GatewayActivity }[]): void;

  /** Forgets these installations: their next lookup reads the database (and puts the answer back). */
  forget(ids: readonly string[]): void;
  /** The ticket a database read of a forgotten installation carries back to `refill` (undefined: not forgotten). */
  ticket(id: string): number | undefined;
  /** A forgotten installation read from the database; kept only if nothing changed it since `ticket`. */
  refill(id: string, ticket: number, installation: InstallationRecord | null, gateways: GatewayRecord[]): void;
}

/**
 * How several relay processes keep their indexes coherent: each publishes the installations whose rows
 * it changed, after the commit, and forgets what the others publish (Redis pub/sub,
 * cluster/redis-index-invalidation.ts). One process needs nothing: `SINGLE_PROCESS`.
 */
export interface IndexInvalidation {
  /** Never throws or rejects: the write has committed; a publication that cannot be sent is retried or ends in a `resync`. */
  publish(installationIds: readonly string[]): void;
  /**
   * Calls `forget` with the installations another process changed, and `resync` when changes may
   * have been missed (the stream was down: the index must be loaded again); returns the function that
   * stops it.
   */
  subscribe(listener: InvalidationListener): () => void;
}

export interface InvalidationListener {
  forget(installationIds: readonly string[]): void;
  resync(): void;
}

export const SINGLE_PROCESS: IndexInvalidation = {
  publish: () => undefined,
  subscribe: () => () => undefined,
};

/** A patch the index applies: the store's patch plus the stamps the relay writes on its own. */
export type IndexPatch = InstallationPatch & Partial<Pick<InstallationRecord, 'lastSeenAt'>>;

const SHA256_HEX = /^[0-9a-f]{64}$/;

/**
 * A sha256 hex digest as its 32 bytes in a latin1 string: 48 bytes on V8's heap, against 80 for the
 * 64-character hex and about 100 for a Buffer view, for two hashes per paired installation. A
 * malformed stored hash (which `secretMatches` never accepts) is kept as '' and unpacks to ''.
 */
function packHash(hex: string): string {
  return SHA256_HEX.test(hex) ? Buffer.from(hex, 'hex').toString('latin1') : '';
}

function unpackHash(packed: string): string {
  return packed === '' ? '' : Buffer.from(packed, 'latin1').toString('hex');
}

/**
 * Values most rows share (topic, environment, plugin versions, capability lists, preferences) are kept
 * once. Bounded, so names every row has its own cannot grow it: past the bound a value is kept as is.
 */
const MAX_SHARED_VALUES = 4096;

class SharedValues {
  private readonly strings = new Map<string, string>();
  private readonly lists = new Map<string, string[]>();
  private readonly preferences = new Map<string, Preferences>();

  string(value: string): string;
  string(value: string | null): string | null;
  string(value: string | null): string | null {
    if (value === null) return null;
    return this.share(this.strings, value, value);
  }

  list(value: string[] | null): string[] | null {
    if (value === null) return null;
    return this.share(this.lists, value.join('\n'), value);
  }

  /** Frozen objects already shared (the store hands the boot-time load one frozen object per text). */
  private readonly sharedPreferences = new WeakMap<Preferences, Preferences>();

  /** Frozen: one object serves many installations, so nobody may change it in place. */
  prefs(value: Preferences): Preferences {
    // Only a frozen object can be known by identity: a mutable one may have changed since.
    const frozen = Object.isFrozen(value);
    const known = frozen ? this.sharedPreferences.get(value) : undefined;
    if (known) return known;
    const kept = this.share(this.preferences, JSON.stringify(value), value, true);
    if (frozen) this.sharedPreferences.set(value, kept);
    return kept;
  }

  private share<V extends object | string>(table: Map<string, V>, key: string, value: V, freeze = false): V {
    const known = table.get(key);
    if (known !== undefined) return known;
    const kept = freeze && typeof value === 'object' ? (Object.freeze({ ...value }) as V) : value;
    if (table.size < MAX_SHARED_VALUES) table.set(key, kept);
    return kept;
  }
}

/** One gateway as the index keeps it: the record's fields, its hash packed. */
type GatewayEntry = Omit<GatewayRecord, 'installationId' | 'secretHash'> & { secret: string };

/** One installation as the index keeps it, with its gateways (oldest first; bounded by the per-installation limit). */
type InstallationEntry = Omit<InstallationRecord, 'deviceSecretHash'> & { secret: string; gateways: GatewayEntry[] };

/**
 * Rows per page of the boot-time load: a page is converted and dropped before the next is read, so
 * the load holds one page of rows at a time. Small, because a request arriving during the load waits
 * for the page under way (on SQLite the read is synchronous) and needs a few turns of the event loop:
 * with pages of 1,000 rows built row by row by Prisma, the relay's first answer after listening came
 * 0.3–0.7 s late on a busy machine; pages of 250 rows read as one JSON text (json-pages.ts) keep it
 * within about 50 ms.
 */
export const INDEX_PAGE_ROWS = 250;

/** The in-memory CredentialIndex of one relay process. */
export class MemoryCredentialIndex implements CredentialIndex {
  private entries = new Map<string, InstallationEntry>();
  /**
   * Installations the index must not answer for: changed while a load was reading (the page may hold
   * the row as it was), forgotten, or whose write failed (it may have committed). Each maps to the
   * change counter's value when it was last touched, so a database read that started before a later
   * change is not put back.
   */
  private unknown = new Map<string, number>();
  private changes = 0;
  /** Counts loads, so a superseded one stops at its next page. */
  private loads = 0;
  private reading = false;
  private loaded = false;
  private readonly shared = new SharedValues();

  constructor(private readonly pageRows = INDEX_PAGE_ROWS) {}

  get complete(): boolean {
    return this.loaded;
  }

  installation(id: string): InstallationRecord | null | undefined {
    const entry = this.known(id);
    return entry ? installationRecord(entry) : entry;
  }

  gateway(installationId: string, gatewayId: string): GatewayRecord | null | undefined {
    const entry = this.known(installationId);
    if (!entry) return entry;
    const gateway = entry.gateways.find((candidate) => candidate.id === gatewayId);
    return gateway ? gatewayRecord(installationId, gateway) : null;
  }

  gateways(installationId: string): GatewayRecord[] | undefined {
    const entry = this.known(installationId);
    if (entry === undefined) return undefined;
    return entry ? entry.gateways.map((gateway) => gatewayRecord(installationId, gateway)) : [];
  }

  /** The entry, null when the complete index knows there is none, undefined when it cannot say. */
  private known(id: string): InstallationEntry | null | undefined {
    if (!this.loaded || this.unknown.has(id)) return undefined;
    return this.entries.get(id) ?? null;
  }

  async load(source: IndexSource): Promise<{ installations: number; gateways: number } | null> {
    // A second load (after rows were removed behind the index) replaces the first; the first stops.
    const run = ++this.loads;
    this.loaded = false;
    this.reading = true;
    // What changed while a load was reading stays unknown across a repeated read (the database answers).
    this.unknown = new Map();
    try {
      for (let attempt = 1; ; attempt += 1) {
        this.entries = new Map();
        const before = await source.writesElsewhere();
        if (run !== this.loads) return null;
        const gateways = await this.readTables(source, () => run === this.loads);
        if (gateways === null) return null;
        const after = await source.writesElsewhere();
        if (run !== this.loads) return null;
        if (after === before || attempt === MAX_LOAD_ATTEMPTS) {
          this.loaded = true;
          return { installations: this.entries.size, gateways };
        }
      }
    } finally {
      if (run === this.loads) this.reading = false;
    }
  }

  /** Both tables, a page at a time; null as soon as `current` says a newer load took over. */
  private async readTables(source: IndexSource, current: () => boolean): Promise<number | null> {
    let after: string | null = null;
    do {
      const page: StorePage<InstallationRecord> = await source.pageInstallations(after, this.pageRows);
      if (!current()) return null;
      for (const record of page.rows) {
        // Changed or created while this page was read: the write-through's state (or the database) wins.
        if (!this.entries.has(record.id) && !this.unknown.has(record.id)) {
          this.entries.set(record.id, this.entryOf(record));
        }
      }
      after = page.next;
      // better-sqlite3 runs each page synchronously: requests get the loop between pages.
      if (after !== null) await yieldToEventLoop();
    } while (after !== null);
    let gateways = 0;
    do {
      const page: StorePage<GatewayRecord> = await source.pageGateways(after, this.pageRows);
      if (!current()) return null;
      for (const record of page.rows) {
        if (this.unknown.has(record.installationId)) continue;
        const entry = this.entries.get(record.installationId);
        // An orphan row (its installation removed outside the relay) authenticates nothing, as in the database.
        if (!entry || entry.gateways.some((gateway) => gateway.id === record.id)) continue;
        this.insertGateway(entry, record);
        gateways += 1;
      }
      after = page.next;
      if (after !== null) await yieldToEventLoop();
    } while (after !== null);
    return gateways;
  }

  putInstallation(record: InstallationRecord): void {
    this.changes += 1;
    if (!this.loaded && !this.reading) return;
    this.unknown.delete(record.id);
    this.entries.set(record.id, this.entryOf(record));
  }

  patchInstallation(id: string, patch: IndexPatch): void {
    const entry = this.changing(id);
    if (!entry) return;
    if (patch.deviceToken !== undefined) entry.deviceToken = patch.deviceToken;
    if (patch.voipToken !== undefined) entry.voipToken = patch.voipToken;
    if (patch.watchVoipToken !== undefined) entry.watchVoipToken = patch.watchVoipToken;
    if (patch.locationPushToken !== undefined) entry.locationPushToken = patch.locationPushToken;
    if (patch.preferences !== undefined) entry.preferences = this.shared.prefs(patch.preferences);
    if (patch.active !== undefined) entry.active = patch.active;
    if (patch.updatedAt !== undefined) entry.updatedAt = patch.updatedAt;
    if (patch.lastSeenAt !== undefined) entry.lastSeenAt = patch.lastSeenAt;
  }

  clearTokenIfUnchanged(id: string, field: SecondaryTokenField, expected: string): void {
    const entry = this.changing(id);
    if (entry && entry[field] === expected) entry[field] = null;
  }

  removeInstallations(ids: readonly string[]): void {
    for (const id of ids) {
      // While loading, a page read before the delete may still bring the row: forgotten, so it is skipped.
      if (this.changing(id)) this.entries.delete(id);
    }
  }

  addGateway(record: GatewayRecord): void {
    const entry = this.changing(record.installationId);
    if (!entry) return;
    if (!entry.gateways.some((gateway) => gateway.id === record.id)) this.insertGateway(entry, record);
    entry.pairedAt ??= record.createdAt;
  }

  removeGateway(installationId: string, gatewayId: string): void {
    const entry = this.changing(installationId);
    if (entry) entry.gateways = entry.gateways.filter((gateway) => gateway.id !== gatewayId);
  }

  recordActivities(entries: readonly { installationId: string; gatewayId: string; activity: GatewayActivity }[]): void {
    for (const { installationId, gatewayId, activity } of entries) {
      const entry = this.changing(installationId);
      const gateway = entry?.gateways.find((candidate) => candidate.id === gatewayId);
      if (!gateway) continue;
      if (activity.pluginVersion !== undefined) gateway.pluginVersion = this.shared.string(activity.pluginVersion);
      if (activity.pluginCapabilities !== undefined) {
        gateway.pluginCapabilities = this.shared.list(activity.pluginCapabilities);
      }
      if (activity.lastEventAt !== undefined) gateway.lastEventAt = activity.lastEventAt;
    }
  }

  forget(ids: readonly string[]): void {
    for (const id of ids) {
      this.changes += 1;
      this.entries.delete(id);
      this.unknown.set(id, this.changes);
    }
  }

  ticket(id: string): number | undefined {
    return this.unknown.get(id);
  }

  refill(id: string, ticket: number, installation: InstallationRecord | null, gateways: GatewayRecord[]): void {
    // Another change (or a new load) since the read began: the read may be older than the index's state.
    if (!this.loaded || this.unknown.get(id) !== ticket) return;
    this.unknown.delete(id);
    if (!installation) return;
    const entry = this.entryOf(installation);
    for (const gateway of gateways) this.insertGateway(entry, gateway);
    this.entries.set(id, entry);
  }

  /**
   * The entry a committed write applies to in place, or undefined. While a load is under way (or the
   * installation is forgotten) the write cannot be applied to what a page may still bring, so the
   * installation is forgotten instead and read from the database once the load is complete.
   */
  private changing(id: string): InstallationEntry | undefined {
    this.changes += 1;
    if (this.loaded && !this.unknown.has(id)) return this.entries.get(id);
    if (this.loaded || this.reading) {
      this.entries.delete(id);
      this.unknown.set(id, this.changes);
    }
    return undefined;
  }

  private entryOf(record: InstallationRecord): InstallationEntry {
    return {
      id: record.id,
      bundleId: this.shared.string(record.bundleId),
      deviceToken: record.deviceToken,
      voipToken: record.voipToken,
      watchVoipToken: record.watchVoipToken,
      locationPushToken: record.locationPushToken,
      environment: this.shared.string(record.environment),
      secret: packHash(record.deviceSecretHash),
      active: record.active,
      preferences: this.shared.prefs(record.preferences),
      createdAt: record.createdAt,
      updatedAt: record.updatedAt,
      pairedAt: record.pairedAt,
      lastSeenAt: record.lastSeenAt,
      gateways: [],
    };
  }

  /** In creation order, as the database lists them. */
  private insertGateway(entry: InstallationEntry, record: GatewayRecord): void {
    const gateway: GatewayEntry = {
      id: record.id,
      name: this.shared.string(record.name),
      secret: packHash(record.secretHash),
      dashboardId: record.dashboardId,
      createdAt: record.createdAt,
      pluginVersion: this.shared.string(record.pluginVersion),
      pluginCapabilities: this.shared.list(record.pluginCapabilities),
      lastEventAt: record.lastEventAt,
    };
    const at = entry.gateways.findIndex((other) => other.createdAt > gateway.createdAt);
    if (at === -1) entry.gateways.push(gateway);
    else entry.gateways.splice(at, 0, gateway);
  }
}

// Field by field rather than rest and spread: every authenticated request builds one of each, and
// V8 builds a literal of known shape several times faster than it copies an object's own keys. The
// keys in the order the records always had.
function installationRecord(entry: InstallationEntry): InstallationRecord {
  return {
    id: entry.id,
    bundleId: entry.bundleId,
    deviceToken: entry.deviceToken,
    voipToken: entry.voipToken,
    watchVoipToken: entry.watchVoipToken,
    locationPushToken: entry.locationPushToken,
    environment: entry.environment,
    active: entry.active,
    preferences: entry.preferences,
    createdAt: entry.createdAt,
    updatedAt: entry.updatedAt,
    pairedAt: entry.pairedAt,
    lastSeenAt: entry.lastSeenAt,
    deviceSecretHash: unpackHash(entry.secret),
  };
}

function gatewayRecord(installationId: string, entry: GatewayEntry): GatewayRecord {
  return {
    installationId,
    id: entry.id,
    name: entry.name,
    dashboardId: entry.dashboardId,
    createdAt: entry.createdAt,
    pluginVersion: entry.pluginVersion,
    lastEventAt: entry.lastEventAt,
    secretHash: unpackHash(entry.secret),
    // A copy of the shared list: a caller may keep or change what it was given.
    pluginCapabilities: entry.pluginCapabilities ? [...entry.pluginCapabilities] : null,
  };
}
