import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { createDb, migrate, providerOf, type Db, type Provider } from '@conduit/prisma';
import type { DecisionRecord } from '../domain/decisions.js';
import { isActive } from '../domain/decisions.js';
import type { BatchQuestion } from '../domain/events.js';
import { normalizePreferences, type Preferences } from '../domain/preferences.js';
import { dateTimeParam, lastSeenStatements, type LastSeen } from './last-seen-statements.js';
import { dateTimeMs, jsonPageStatement, readJsonPage } from './json-pages.js';
import { assertRelayMayUse } from './database-state.js';
import { secureSqliteFiles } from './sqlite-files.js';
import type { GatewayActivity, GatewayRecord, InstallationRecord, PairingRecord } from './records.js';
import {
  GatewayLimitReached,
  type DecisionChange,
  type InstallationPatch,
  type RelayStore,
  type SecondaryTokenField,
  type StorePage,
} from './relay-store.js';
import { EXPIRED_INSTALLATIONS_KEY } from './unpaired-expiry.js';
import { FIXED_LIMITS } from '../limits.js';

type InstallationRow = NonNullable<Awaited<ReturnType<Db['installation']['findUnique']>>>;
type GatewayRow = NonNullable<Awaited<ReturnType<Db['gateway']['findUnique']>>>;
type DecisionRow = NonNullable<Awaited<ReturnType<Db['decision']['findUnique']>>>;

function parseJson(text: string | null, fallback: unknown): unknown {
  if (text === null) return fallback;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return fallback;
  }
}

function toInstallation(row: InstallationRow): InstallationRecord {
  return {
    id: row.id,
    bundleId: row.bundleId,
    deviceToken: row.deviceToken,
    voipToken: row.voipToken,
    watchVoipToken: row.watchVoipToken,
    locationPushToken: row.locationPushToken,
    environment: row.environment,
    deviceSecretHash: row.deviceSecretHash,
    active: row.active,
    preferences: normalizePreferences(parseJson(row.preferences, {})),
    createdAt: row.createdAt.getTime(),
    updatedAt: row.updatedAt.getTime(),
    pairedAt: row.pairedAt ? row.pairedAt.getTime() : null,
    lastSeenAt: row.lastSeenAt ? row.lastSeenAt.getTime() : null,
  };
}

function toGateway(row: GatewayRow): GatewayRecord {
  const capabilities = parseJson(row.pluginCapabilities, null);
  return {
    installationId: row.installationId,
    id: row.id,
    name: row.name,
    secretHash: row.secretHash,
    dashboardId: row.dashboardId,
    createdAt: row.createdAt.getTime(),
    pluginVersion: row.pluginVersion,
    pluginCapabilities: Array.isArray(capabilities)
      ? capabilities.filter((c): c is string => typeof c === 'string')
      : null,
    lastEventAt: row.lastEventAt ? row.lastEventAt.getTime() : null,
  };
}

function toDecision(row: DecisionRow): DecisionRecord {
  const answers = parseJson(row.answers, {});
  const record: DecisionRecord = {
    key: row.key,
    installationId: row.installationId,
    gatewayId: row.gatewayId,
    requestId: row.requestId,
    question: row.question,
    choices: parseJson(row.choices, []) as string[],
    questions: parseJson(row.questions, []) as BatchQuestion[],
    // A null-prototype map: qids are client strings and must never reach Object.prototype.
    answers: Object.assign(Object.create(null) as Record<string, string>, answers),
    deliverable: row.deliverable,
    createdAt: row.createdAt.getTime(),
  };
  if (row.answer !== null) record.answer = row.answer;
  if (row.answeredAt) record.answeredAt = row.answeredAt.getTime();
  if (row.cancelledAt) record.cancelledAt = row.cancelledAt.getTime();
  return record;
}

function decisionData(record: DecisionRecord) {
  return {
    key: record.key,
    installationId: record.installationId,
    gatewayId: record.gatewayId,
    requestId: record.requestId,
    question: record.question,
    choices: JSON.stringify(record.choices),
    questions: JSON.stringify(record.questions),
    answers: JSON.stringify({ ...record.answers }),
    deliverable: record.deliverable,
    active: isActive(record),
    createdAt: new Date(record.createdAt),
    answer: record.answer ?? null,
    answeredAt: record.answeredAt !== undefined ? new Date(record.answeredAt) : null,
    cancelledAt: record.cancelledAt !== undefined ? new Date(record.cancelledAt) : null,
  };
}

function gatewayData(record: GatewayRecord) {
  return {
    installationId: record.installationId,
    id: record.id,
    name: record.name,
    secretHash: record.secretHash,
    dashboardId: record.dashboardId,
    createdAt: new Date(record.createdAt),
    pluginVersion: record.pluginVersion,
    pluginCapabilities: record.pluginCapabilities ? JSON.stringify(record.pluginCapabilities) : null,
    lastEventAt: record.lastEventAt !== null ? new Date(record.lastEventAt) : null,
  };
}

export function installationData(record: InstallationRecord) {
  return {
    id: record.id,
    bundleId: record.bundleId,
    deviceToken: record.deviceToken,
    voipToken: record.voipToken,
    watchVoipToken: record.watchVoipToken,
    locationPushToken: record.locationPushToken,
    environment: record.environment,
    deviceSecretHash: record.deviceSecretHash,
    active: record.active,
    preferences: JSON.stringify(record.preferences),
    createdAt: new Date(record.createdAt),
    updatedAt: new Date(record.updatedAt),
    pairedAt: record.pairedAt !== null ? new Date(record.pairedAt) : null,
    lastSeenAt: record.lastSeenAt !== null ? new Date(record.lastSeenAt) : null,
  };
}

const INSTALLATION_COLUMNS = [
  'id',
  'bundleId',
  'deviceToken',
  'voipToken',
  'watchVoipToken',
  'locationPushToken',
  'environment',
  'deviceSecretHash',
  'active',
  'preferences',
  'createdAt',
  'updatedAt',
  'pairedAt',
  'lastSeenAt',
] as const;

const GATEWAY_COLUMNS = [
  'installationId',
  'id',
  'name',
  'secretHash',
  'dashboardId',
  'createdAt',
  'pluginVersion',
  'pluginCapabilities',
  'lastEventAt',
] as const;

function text(value: unknown): string {
  if (typeof value !== 'string') throw new Error('a text column holds something else');
  return value;
}

function textOrNull(value: unknown): string | null {
  return value === null || value === undefined ? null : text(value);
}

/** A two-column page cursor (`[installationId, id]` as JSON) back to its key values. */
function cursorKey(cursor: string): [string, string] {
  const key: unknown = JSON.parse(cursor);
  if (!Array.isArray(key) || key.length !== 2 || !key.every((part) => typeof part === 'string')) {
    throw new Error('a page cursor is not a two-part key');
  }
  return [key[0] as string, key[1] as string];
}

/** How many distinct preferences texts a store keeps parsed (rows mostly share a handful). */
const PREFERENCE_TEXTS_KEPT = 1024;

/**
 * The advisory lock registrations hold while they count and insert (PostgreSQL), in the two-key form:
 * 0x636e6474 ("cndt" in ASCII, so a reader of pg_locks can tell it from another application's lock),
 * 1 for installation capacity.
 */
const CAPACITY_LOCK_SQL = `SELECT 1 AS "locked" FROM (SELECT pg_advisory_xact_lock(1668179060, 1)) AS "lock"`;
/** The lock a claim holds on its installation's gateways (PostgreSQL): "cndu", the installation id's hash. */
const GATEWAY_LOCK_SQL = `SELECT 1 AS "locked" FROM (SELECT pg_advisory_xact_lock(1668179061, hashtext($1))) AS "lock"`;

/** Prisma's code for a unique-constraint violation, which both driver adapters report. */
function isUniqueViolation(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'P2002';
}

/** Prisma on SQLite (DATA_PATH) or PostgreSQL (DATABASE_URL); migrations are applied by `openPrismaStore`. */
export class PrismaStore implements RelayStore {
  private admissions: Promise<void> = Promise.resolve();
  /** Preferences texts read by the boot-time load, to their frozen objects (PREFERENCE_TEXTS_KEPT at most). */
  private readonly preferencesByText = new Map<string, Preferences>();

  constructor(
    readonly db: Db,
    readonly provider: Provider,
  ) {}

  async countInstallations(): Promise<number> {
    return this.db.installation.count();
  }

  async countActiveInstallations(): Promise<number> {
    return this.db.installation.count({ where: { active: true } });
  }

  async insertInstallation(record: InstallationRecord): Promise<void> {
    await this.db.installation.create({ data: installationData(record) });
  }

  /**
   * SQLite: count and insert run one after another in this process (one process per SQLite file).
   * PostgreSQL: in one transaction holding an advisory lock, so registrations racing on several relay
   * processes are admitted one at a time against the committed count (a plain `INSERT … WHERE count <
   * max` would let two concurrent statements see the same count). The count is O(n), but registrations
   * are rare (RELAY_REGISTRATIONS_PER_MINUTE); the event path never takes this lock.
   */
  insertInstallationIfAdmitted(
    record: InstallationRecord,
    admit: (count: number) => void | Promise<void>,
  ): Promise<void> {
    if (this.provider === 'postgres') {
      return this.db.$transaction(
        async (tx) => {
          await tx.$queryRawUnsafe(CAPACITY_LOCK_SQL);
          await admit(await tx.installation.count());
          await tx.installation.create({ data: installationData(record) });
        },
        // Registrations queue on the lock (and on the pool): a burst must wait its turn, not fail.
        { maxWait: 10_000, timeout: 15_000 },
      );
    }
    const admitted = this.admissions.then(async () => {
      await admit(await this.countInstallations());
      await this.insertInstallation(record);
    });
    this.admissions = admitted.catch(() => undefined);
    return admitted;
  }

  async findInstallation(id: string): Promise<InstallationRecord | null> {
    const row = await this.db.installation.findUnique({ where: { id } });
    return row ? toInstallation(row) : null;
  }

  async updateInstallation(id: string, patch: InstallationPatch): Promise<void> {
    const data: Record<string, unknown> = {};
    if (patch.deviceToken !== undefined) data.deviceToken = patch.deviceToken;
    if (patch.voipToken !== undefined) data.voipToken = patch.voipToken;
    if (patch.watchVoipToken !== undefined) data.watchVoipToken = patch.watchVoipToken;
    if (patch.locationPushToken !== undefined) data.locationPushToken = patch.locationPushToken;
    if (patch.preferences !== undefined) data.preferences = JSON.stringify(patch.preferences);
    if (patch.active !== undefined) data.active = patch.active;
    if (patch.updatedAt !== undefined) data.updatedAt = new Date(patch.updatedAt);
    await this.db.installation.update({ where: { id }, data });
  }

  async clearTokenIfUnchanged(id: string, field: SecondaryTokenField, expected: string): Promise<void> {
    await this.db.installation.updateMany({ where: { id, [field]: expected }, data: { [field]: null } });
  }

  async recordInstallationSeen(id: string, atMs: number): Promise<void> {
    await this.db.installation.updateMany({ where: { id }, data: { lastSeenAt: new Date(atMs) } });
  }

  async expireUnpairedInstallations(
    cutoffMs: number,
    nowMs: number,
    onRemoved?: (ids: string[]) => void,
  ): Promise<string[]> {
    const cutoff = new Date(cutoffMs);
    const now = new Date(nowMs);
    const expired = {
      pairedAt: null,
      OR: [{ lastSeenAt: { lte: cutoff } }, { lastSeenAt: null, createdAt: { lte: cutoff } }],
    };
    const removed: string[] = [];
    let after: string | undefined;
    for (;;) {
      const candidates = await this.db.installation.findMany({
        where: { ...expired, ...(after !== undefined ? { id: { gt: after } } : {}) },
        select: { id: true },
        orderBy: { id: 'asc' },
        take: FIXED_LIMITS.unpairedSweepBatch,
      });
      const last = candidates.at(-1);
      if (!last) break;
      after = last.id;
      const ids = candidates.map((candidate) => candidate.id);
      // A host row (an import, a pairedAt lost to a crash) or a live code means the phone is in use.
      const [hosts, liveCodes] = await Promise.all([
        this.db.gateway.findMany({ where: { installationId: { in: ids } }, select: { installationId: true } }),
        this.db.pairing.findMany({
          where: { installationId: { in: ids }, expiresAt: { gt: now } },
          select: { installationId: true },
        }),
      ]);
      const held = new Set([...hosts, ...liveCodes].map((row) => row.installationId));
      const eligible = ids.filter((id) => !held.has(id));
      if (eligible.length > 0) {
        const gone = await this.removeExpired(eligible, expired, now);
        removed.push(...gone);
        if (gone.length > 0) onRemoved?.(gone);
      }
      await yieldToEventLoop();
    }
    return removed;
  }

  /** One batch: delete (re-checking expiry in the statement), drop their dead codes, count them. */
  private removeExpired(ids: string[], expired: { pairedAt: null; OR: object[] }, now: Date): Promise<string[]> {
    return this.db.$transaction(async (tx) => {
      await tx.installation.deleteMany({ where: { id: { in: ids }, ...expired } });
      const kept = new Set(
        (await tx.installation.findMany({ where: { id: { in: ids } }, select: { id: true } })).map((row) => row.id),
      );
      const gone = ids.filter((id) => !kept.has(id));
      if (gone.length === 0) return gone;
      await tx.pairing.deleteMany({ where: { installationId: { in: gone }, expiresAt: { lte: now } } });
      await tx.storeMeta.upsert({
        where: { key: EXPIRED_INSTALLATIONS_KEY },
        create: { key: EXPIRED_INSTALLATIONS_KEY, value: '0' },
        update: {},
      });
      // An increment in the statement, not read-then-write: another process's sweep cannot lose it.
      await tx.$executeRaw`UPDATE "StoreMeta" SET "value" = CAST(CAST("value" AS INTEGER) + ${gone.length} AS TEXT) WHERE "key" = ${EXPIRED_INSTALLATIONS_KEY}`;
      return gone;
    });
  }

  async pageInstallations(after: string | null, take: number): Promise<StorePage<InstallationRecord>> {
    const page = await this.tablePage('Installation', INSTALLATION_COLUMNS, ['id'], after, take);
    // Straight to the record: times as numbers (no Date in between), preferences parsed once per text.
    const rows = page.rows.map((values): InstallationRecord => ({
      id: text(values[0]),
      bundleId: text(values[1]),
      deviceToken: text(values[2]),
      voipToken: textOrNull(values[3]),
      watchVoipToken: textOrNull(values[4]),
      locationPushToken: textOrNull(values[5]),
      environment: text(values[6]),
      deviceSecretHash: text(values[7]),
      active: values[8] === true || values[8] === 1,
      preferences: this.preferencesOf(text(values[9])),
      createdAt: this.ms(values[10]),
      updatedAt: this.ms(values[11]),
      pairedAt: dateTimeMs(this.provider, values[12]),
      lastSeenAt: dateTimeMs(this.provider, values[13]),
    }));
    return { rows, next: page.next };
  }

  async pageGateways(after: string | null, take: number): Promise<StorePage<GatewayRecord>> {
    const page = await this.tablePage('Gateway', GATEWAY_COLUMNS, ['installationId', 'id'], after, take);
    const rows = page.rows.map((values) => {
      const [installationId, id, name, secretHash, dashboardId, createdAt, version, capabilities, lastEventAt] = values;
      return toGateway({
        installationId: text(installationId),
        id: text(id),
        name: text(name),
        secretHash: text(secretHash),
        dashboardId: textOrNull(dashboardId),
        createdAt: this.date(createdAt),
        pluginVersion: textOrNull(version),
        pluginCapabilities: textOrNull(capabilities),
        lastEventAt: this.dateOrNull(lastEventAt),
      });
    });
    return { rows, next: page.next };
  }

  async writesElsewhere(): Promise<string | null> {
    if (this.provider !== 'sqlite') return null;
    const rows = await this.db.$queryRawUnsafe<{ data_version: unknown }[]>('PRAGMA data_version');
    return String(rows[0]?.data_version);
  }

  /**
   * One page of a table for the boot-time load, as JSON (json-pages.ts). SQLite pages by rowid: a
   * table without an integer primary key keeps its rows in rowid order, so each page is one sequential
   * run of the table, where primary-key order looks every row up through the key's index (about twice
   * the load's time at 50,000 installations). A rowid is stable but for a VACUUM, which other
   * connections' writes show (`writesElsewhere`). PostgreSQL pages by primary key (`key`).
   */
  private async tablePage(
    table: string,
    columns: readonly string[],
    key: readonly [string] | readonly [string, string],
    after: string | null,
    take: number,
  ): Promise<StorePage<unknown[]>> {
    if (this.provider === 'sqlite') {
      // The rowid rides as the last value; json_group_array keeps no order, so the page is sorted by it.
      const { sql, params } = jsonPageStatement(
        'sqlite',
        table,
        [...columns, 'rowid'],
        ['rowid'],
        after === null ? null : [after],
        take,
      );
      const rows = readJsonPage(await this.db.$queryRawUnsafe<{ page: unknown }[]>(sql, ...params));
      const at = columns.length;
      rows.sort((a, b) => Number(a[at]) - Number(b[at]));
      const last = rows.at(-1);
      return { rows, next: last && rows.length === take ? String(last[at]) : null };
    }
    const afterKey = after === null ? null : key.length === 1 ? [after] : cursorKey(after);
    const { sql, params } = jsonPageStatement(this.provider, table, columns, key, afterKey, take);
    const rows = readJsonPage(await this.db.$queryRawUnsafe<{ page: unknown }[]>(sql, ...params));
    const last = rows.at(-1);
    if (!last || rows.length < take) return { rows, next: null };
    return { rows, next: key.length === 1 ? String(last[0]) : JSON.stringify([last[0], last[1]]) };
  }

  /** A preferences column's object; rows mostly share a few texts, each parsed once (bounded). */
  private preferencesOf(stored: string): Preferences {
    const known = this.preferencesByText.get(stored);
    if (known) return known;
    // Frozen: one object serves every row with this text.
    const preferences = Object.freeze(normalizePreferences(parseJson(stored, {})));
    if (this.preferencesByText.size < PREFERENCE_TEXTS_KEPT) this.preferencesByText.set(stored, preferences);
    return preferences;
  }

  private ms(value: unknown): number {
    return dateTimeMs(this.provider, value) ?? Number.NaN;
  }

  private date(value: unknown): Date {
    return new Date(dateTimeMs(this.provider, value) ?? Number.NaN);
  }

  private dateOrNull(value: unknown): Date | null {
    const ms = dateTimeMs(this.provider, value);
    return ms === null ? null : new Date(ms);
  }

  async listGateways(installationId: string): Promise<GatewayRecord[]> {
    const rows = await this.db.gateway.findMany({ where: { installationId }, orderBy: { createdAt: 'asc' } });
    return rows.map(toGateway);
  }

  async findGateway(installationId: string, gatewayId: string): Promise<GatewayRecord | null> {
    const row = await this.db.gateway.findUnique({
      where: { installationId_id: { installationId, id: gatewayId } },
    });
    return row ? toGateway(row) : null;
  }

  async countGateways(installationId: string): Promise<number> {
    return this.db.gateway.count({ where: { installationId } });
  }

  async deleteGateway(installationId: string, gatewayId: string): Promise<void> {
    await this.db.gateway.deleteMany({ where: { installationId, id: gatewayId } });
  }

  async recordGatewayActivities(
    entries: { installationId: string; gatewayId: string; activity: GatewayActivity }[],
  ): Promise<void> {
    if (entries.length === 0) return;
    // Almost every entry is a bare last-seen time: those go out in bulk statements. The rare entry
    // with plugin metadata (plugin.hello, a changed plugin version) keeps its own update.
    const lastSeen: LastSeen[] = [];
    const detailed: PromiseLike<unknown>[] = [];
    for (const { installationId, gatewayId, activity } of entries) {
      if (activity.pluginVersion === undefined && activity.pluginCapabilities === undefined) {
        if (activity.lastEventAt !== undefined) {
          lastSeen.push({ installationId, gatewayId, lastEventAtMs: activity.lastEventAt });
        }
        continue;
      }
      const data: Record<string, unknown> = {};
      if (activity.pluginVersion !== undefined) data.pluginVersion = activity.pluginVersion;
      if (activity.pluginCapabilities !== undefined) {
        data.pluginCapabilities = JSON.stringify(activity.pluginCapabilities);
      }
      if (activity.lastEventAt !== undefined) data.lastEventAt = new Date(activity.lastEventAt);
      // updateMany: the gateway may have been revoked since the event; then there is nothing to record.
      // Prisma queries are lazy: this one runs when awaited below.
      detailed.push(this.db.gateway.updateMany({ where: { installationId, id: gatewayId }, data }));
    }
    // Each statement commits on its own and the event loop runs between them: on SQLite a statement
    // holds the loop while it runs (better-sqlite3 is synchronous), and one transaction for 10,000
    // gateways held it for a quarter of a second, which every request arriving meanwhile waited out.
    // Nothing needs the flush to be all-or-nothing: each value is a latest-known time.
    for (const { sql, params } of lastSeenStatements(this.provider, lastSeen)) {
      await this.db.$executeRawUnsafe(sql, ...params);
      await yieldToEventLoop();
    }
    for (const update of detailed) await update;
  }

  async replacePairing(record: PairingRecord): Promise<void> {
    await this.db.$transaction([
      this.db.pairing.deleteMany({ where: { installationId: record.installationId } }),
      this.db.pairing.create({
        data: {
          codeHash: record.codeHash,
          installationId: record.installationId,
          expiresAt: new Date(record.expiresAt),
          dashboardId: record.dashboardId,
        },
      }),
    ]);
  }

  async findPairing(codeHash: string): Promise<PairingRecord | null> {
    const row = await this.db.pairing.findUnique({ where: { codeHash } });
    return row
      ? {
          codeHash: row.codeHash,
          installationId: row.installationId,
          expiresAt: row.expiresAt.getTime(),
          dashboardId: row.dashboardId,
        }
      : null;
  }

  async deletePairing(codeHash: string): Promise<void> {
    await this.db.pairing.deleteMany({ where: { codeHash } });
  }

  async claimPairing(codeHash: string, gateway: GatewayRecord, maxGateways?: number): Promise<boolean> {
    if (this.provider === 'postgres') {
      if (maxGateways === undefined) return (await this.claimPairingInOneStatement(this.db, codeHash, gateway)) === 1;
      // The count and the claim under a lock of the installation: a statement's own count would be read
      // before it waits for a racing claim, so two claims could both see one free slot.
      return this.db.$transaction(async (tx) => {
        await tx.$queryRawUnsafe(GATEWAY_LOCK_SQL, gateway.installationId);
        if ((await tx.gateway.count({ where: { installationId: gateway.installationId } })) >= maxGateways) {
          throw new GatewayLimitReached();
        }
        return (await this.claimPairingInOneStatement(tx, codeHash, gateway)) === 1;
      });
    }
    return this.db.$transaction(async (tx) => {
      if (
        maxGateways !== undefined &&
        (await tx.gateway.count({ where: { installationId: gateway.installationId } })) >= maxGateways
      ) {
        throw new GatewayLimitReached();
      }
      const consumed = await tx.pairing.deleteMany({ where: { codeHash } });
      if (consumed.count !== 1) return false;
      await tx.gateway.create({ data: gatewayData(gateway) });
      await tx.installation.updateMany({
        where: { id: gateway.installationId, pairedAt: null },
        data: { pairedAt: new Date(gateway.createdAt) },
      });
      return true;
    });
  }

  /**
   * PostgreSQL: consume the code, add the gateway and mark the installation paired in one statement,
   * one round trip instead of the five of an interactive transaction. A claim racing for the same
   * code waits on the row lock of the DELETE, then finds the row gone and inserts nothing.
   */
  private claimPairingInOneStatement(
    db: Pick<Db, '$executeRawUnsafe'>,
    codeHash: string,
    gateway: GatewayRecord,
  ): Promise<number> {
    const data = gatewayData(gateway);
    return db.$executeRawUnsafe(
      `WITH "consumed" AS (DELETE FROM "Pairing" WHERE "codeHash" = $1 RETURNING "codeHash"), ` +
        `"paired" AS (UPDATE "Installation" SET "pairedAt" = $7::timestamp(3) ` +
        `WHERE "id" = $2 AND "pairedAt" IS NULL AND EXISTS (SELECT 1 FROM "consumed")) ` +
        `INSERT INTO "Gateway" ("installationId", "id", "name", "secretHash", "dashboardId", "createdAt", ` +
        `"pluginVersion", "pluginCapabilities", "lastEventAt") ` +
        `SELECT $2, $3, $4, $5, $6, $7::timestamp(3), $8, $9, $10::timestamp(3) FROM "consumed"`,
      codeHash,
      data.installationId,
      data.id,
      data.name,
      data.secretHash,
      data.dashboardId,
      dateTimeParam('postgres', gateway.createdAt),
      data.pluginVersion,
      data.pluginCapabilities,
      gateway.lastEventAt !== null ? dateTimeParam('postgres', gateway.lastEventAt) : null,
    );
  }

  async findDecision(key: string): Promise<DecisionRecord | null> {
    const row = await this.db.decision.findUnique({ where: { key } });
    return row ? toDecision(row) : null;
  }

  async findDecisionsByRequest(installationId: string, requestId: string): Promise<DecisionRecord[]> {
    const rows = await this.db.decision.findMany({
      where: { installationId, requestId },
      orderBy: { createdAt: 'asc' },
    });
    return rows.map(toDecision);
  }

  async insertDecision(record: DecisionRecord): Promise<boolean> {
    try {
      await this.db.decision.create({ data: decisionData(record) });
      return true;
    } catch (error) {
      // The key's primary-key constraint decides, so a check-then-insert race cannot park two.
      if (isUniqueViolation(error)) return false;
      throw error;
    }
  }

  async updateDecision<T>(key: string, decide: (current: DecisionRecord | null) => DecisionChange<T>): Promise<T> {
    for (let attempt = 1; ; attempt += 1) {
      const row = await this.db.decision.findUnique({ where: { key } });
      const change = decide(row ? toDecision(row) : null);
      if (!row || !change.next) return change.result;
      const { key: _unchangedKey, ...data } = decisionData(change.next);
      // One conditional UPDATE: it matches only while the row still holds what `decide` saw. A scalar
      // answer and a release each go from null to a value once, and a batch's answers only grow, so
      // "still null" / "still set" and the exact answers text identify that state. On PostgreSQL a
      // racing UPDATE waits for the row lock and then re-checks this condition on the new row.
      const written = await this.db.decision.updateMany({
        where: {
          key,
          answer: row.answer === null ? null : { not: null },
          cancelledAt: row.cancelledAt === null ? null : { not: null },
          answers: row.answers,
        },
        data,
      });
      if (written.count === 1) return change.result;
      if (attempt >= FIXED_LIMITS.maxDecisionWriteAttempts) {
        throw new Error('decision changed on every attempt to write it');
      }
    }
  }

  async markDecisionUndeliverable(key: string): Promise<void> {
    await this.db.decision.updateMany({ where: { key }, data: { deliverable: false } });
  }

  async countDecisions(filter: { sinceMs: number; installationId?: string; active?: boolean }): Promise<number> {
    return this.db.decision.count({
      where: {
        createdAt: { gt: new Date(filter.sinceMs) },
        ...(filter.installationId !== undefined ? { installationId: filter.installationId } : {}),
        ...(filter.active !== undefined ? { active: filter.active } : {}),
      },
    });
  }

  async pruneDecisions(beforeMs: number): Promise<number> {
    const result = await this.db.decision.deleteMany({ where: { createdAt: { lte: new Date(beforeMs) } } });
    return result.count;
  }

  async close(): Promise<void> {
    await this.db.$disconnect();
  }
}

/**
 * Applies the committed migrations, then opens the store (a SQLite file private to the relay's user).
 * A SQLite file of another application is refused first (ForeignDatabaseError), before anything is
 * created or migrated in it.
 */
export async function openPrismaStore(databaseUrl: string): Promise<PrismaStore> {
  await assertRelayMayUse(databaseUrl);
  secureSqliteFiles(databaseUrl);
  await migrate(databaseUrl);
  return new PrismaStore(createDb(databaseUrl), providerOf(databaseUrl));
}
