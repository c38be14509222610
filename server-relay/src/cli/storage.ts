import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Db } from '@conduit/prisma';
import { isPlainObject } from '../domain/text.js';
import { readReferenceStore } from '../store/import-json.js';
import { EXPIRED_INSTALLATIONS_KEY } from '../store/unpaired-expiry.js';

/**
 * Operator maintenance on the relay's database (the reference's storage:status and
 * storage:prune-inactive, same eligibility and flags).
 */

export const PRUNE_AGE_MS = 30 * 24 * 60 * 60 * 1000;

/**
 * The reference's storage-status output, `{installations: {total, active, inactive, capacity}}`
 * (capacity is RELAY_MAX_INSTALLATIONS), plus `expired`.
 */
export interface StorageStatus {
  installations: {
    total: number;
    active: number;
    inactive: number;
    capacity: number;
    /** Installations the relay removed because nobody paired them and their phone went unseen (all time). */
    expired: number;
  };
}

/** Counts only: no ids, tokens or credentials. */
export async function storageStatus(db: Db, capacity: number): Promise<StorageStatus> {
  const [total, active, expired] = await Promise.all([
    db.installation.count(),
    db.installation.count({ where: { active: true } }),
    db.storeMeta.findUnique({ where: { key: EXPIRED_INSTALLATIONS_KEY } }),
  ]);
  return {
    installations: { total, active, inactive: total - active, capacity, expired: Number(expired?.value ?? 0) || 0 },
  };
}

/**
 * The same counts read from a reference relay.json this relay has not imported yet, as the
 * reference's storage-status counts them (every record; active means `active === true`).
 * Throws ImportError for a file that is not a reference store.
 */
export function referenceStoreStatus(file: string, capacity: number): StorageStatus {
  const { data } = readReferenceStore(file);
  const records = Object.values(isPlainObject(data.installations) ? data.installations : {});
  const active = records.filter((record) => isPlainObject(record) && record.active === true).length;
  return {
    installations: { total: records.length, active, inactive: records.length - active, capacity, expired: 0 },
  };
}

export class MaintenanceError extends Error {}

/**
 * Eligible: inactive and unchanged for 30 days, no gateway credentials, and referenced by no pairing
 * and no decision. Everything else (active, recent, gateway-bound, referenced) is kept.
 */
async function eligibleIds(db: Db, nowMs: number): Promise<string[]> {
  const candidates = await db.installation.findMany({
    where: { active: false, updatedAt: { lte: new Date(nowMs - PRUNE_AGE_MS) } },
    select: { id: true, preferences: true },
  });
  const ids: string[] = [];
  for (const candidate of candidates) {
    // Fail closed: state the relay could not have written means something else touched the store.
    try {
      const preferences: unknown = JSON.parse(candidate.preferences);
      if (typeof preferences !== 'object' || preferences === null) throw new Error('preferences');
    } catch {
      throw new MaintenanceError('The store holds malformed state; nothing was changed.');
    }
    ids.push(candidate.id);
  }
  if (ids.length === 0) return [];
  const referenced = new Set<string>();
  for (let i = 0; i < ids.length; i += 500) {
    const chunk = ids.slice(i, i + 500);
    const [gateways, pairings, decisions] = await Promise.all([
      db.gateway.findMany({ where: { installationId: { in: chunk } }, select: { installationId: true } }),
      db.pairing.findMany({ where: { installationId: { in: chunk } }, select: { installationId: true } }),
      db.decision.findMany({ where: { installationId: { in: chunk } }, select: { installationId: true } }),
    ]);
    for (const row of [...gateways, ...pairings, ...decisions]) referenced.add(row.installationId);
  }
  return ids.filter((id) => !referenced.has(id));
}

/** The reference's storage-prune-inactive output, `{eligible, removed, remaining}`, plus where the backup went. */
export interface PruneResult {
  eligible: number;
  removed: number;
  /** Installations left in the store. */
  remaining: number;
  backupPath?: string;
}

/**
 * Preview by default. With apply (which requires relayStopped, the operator's acknowledgement that
 * no relay writes meanwhile), writes an exclusive 0600 backup of the rows first, then deletes them in
 * one transaction that re-checks eligibility row by row.
 */
export async function pruneInactive(
  db: Db,
  options: { apply: boolean; relayStopped: boolean; backupDir: string; nowMs?: number },
): Promise<PruneResult> {
  const nowMs = options.nowMs ?? Date.now();
  if (options.apply && !options.relayStopped) {
    throw new MaintenanceError('--apply needs --relay-stopped: stop every relay writer first.');
  }
  const ids = await eligibleIds(db, nowMs);
  if (!options.apply || ids.length === 0) {
    return { eligible: ids.length, removed: 0, remaining: await db.installation.count() };
  }
  const rows = await db.installation.findMany({ where: { id: { in: ids } } });
  const backupPath = path.join(
    options.backupDir,
    `relay-prune.backup-${new Date(nowMs).toISOString().replace(/[:.]/g, '-')}.json`,
  );
  writeFileSync(backupPath, `${JSON.stringify({ version: 1, installations: rows })}\n`, {
    mode: 0o600,
    flag: 'wx',
  });
  const removed = await db.$transaction(
    async (tx) => {
      let count = 0;
      for (const id of ids) {
        const [gateways, pairings, decisions] = await Promise.all([
          tx.gateway.count({ where: { installationId: id } }),
          tx.pairing.count({ where: { installationId: id } }),
          tx.decision.count({ where: { installationId: id } }),
        ]);
        if (gateways + pairings + decisions > 0) continue;
        const result = await tx.installation.deleteMany({
          where: { id, active: false, updatedAt: { lte: new Date(nowMs - PRUNE_AGE_MS) } },
        });
        count += result.count;
      }
      return count;
    },
    { timeout: 10 * 60 * 1000 },
  );
  return { eligible: ids.length, removed, remaining: await db.installation.count(), backupPath };
}
