import { HEALTH_LIMITS, healthBatch } from '@conduit/contracts/dashboard/health';
import type { z } from 'zod';
import { DetailError } from '../../kernel/detail-errors.js';
import type { BatchOutcome, DeviceSummary, PhoneDataStore } from '../../kernel/phone-data/index.js';

/**
 * Health's tables in the profile's conduit-health.sqlite3 and how a batch lands in them (the seed:
 * "A newer computation of a window replaces the older one; a deleted workout or reading stays
 * deleted"). Every row carries the device id: a re-key or a wipe drops a device's rows as one.
 */

export type HealthBatch = z.output<typeof healthBatch>;
type HealthItem = HealthBatch['items'][number];

export const HEALTH_SCHEMA = `
CREATE TABLE IF NOT EXISTS health_totals (
  device_id TEXT NOT NULL, metric TEXT NOT NULL, window TEXT NOT NULL, stat TEXT NOT NULL, start REAL NOT NULL,
  value REAL NOT NULL, unit TEXT NOT NULL, computed_at REAL NOT NULL,
  PRIMARY KEY (device_id, metric, window, stat, start)
);
CREATE TABLE IF NOT EXISTS health_sleep_nights (
  device_id TEXT NOT NULL, night TEXT NOT NULL, start REAL NOT NULL, end REAL NOT NULL, asleep_s REAL NOT NULL,
  in_bed_s REAL, awake_s REAL, rem_s REAL, core_s REAL, deep_s REAL, computed_at REAL NOT NULL,
  PRIMARY KEY (device_id, night)
);
CREATE TABLE IF NOT EXISTS health_sleep_stages (
  device_id TEXT NOT NULL, id TEXT NOT NULL, stage TEXT NOT NULL, start REAL NOT NULL, end REAL NOT NULL,
  PRIMARY KEY (device_id, id)
);
CREATE TABLE IF NOT EXISTS health_workouts (
  device_id TEXT NOT NULL, id TEXT NOT NULL, activity TEXT NOT NULL, start REAL NOT NULL, end REAL NOT NULL,
  energy_kcal REAL, distance_m REAL, avg_heart_rate REAL,
  PRIMARY KEY (device_id, id)
);
CREATE TABLE IF NOT EXISTS health_samples (
  device_id TEXT NOT NULL, id TEXT NOT NULL, metric TEXT NOT NULL, start REAL NOT NULL, end REAL NOT NULL,
  value REAL NOT NULL, unit TEXT NOT NULL,
  PRIMARY KEY (device_id, id)
);
CREATE TABLE IF NOT EXISTS health_deleted (
  device_id TEXT NOT NULL, kind TEXT NOT NULL, id TEXT NOT NULL, deleted_at REAL NOT NULL,
  PRIMARY KEY (device_id, kind, id)
);
`;

export const HEALTH_DEVICE_TABLES = [
  'health_totals',
  'health_sleep_nights',
  'health_sleep_stages',
  'health_workouts',
  'health_samples',
  'health_deleted',
] as const;

/** The tables of items with ids, by the `of` a deletion names. */
const ITEM_TABLES = {
  workout: 'health_workouts',
  sample: 'health_samples',
  sleep_stage: 'health_sleep_stages',
} as const;

/** The opened batch as a clean value: 400 for a refused item, 413 past 6,000 items. */
export function parseHealthBatch(plain: unknown): HealthBatch {
  const items = (plain as { items?: unknown } | null)?.items;
  if (Array.isArray(items) && items.length > HEALTH_LIMITS.itemsPerBatch) {
    throw new DetailError(413, `A batch carries at most ${HEALTH_LIMITS.itemsPerBatch} items`);
  }
  const parsed = healthBatch.safeParse(plain);
  if (!parsed.success) {
    const where = parsed.error.issues[0]?.path.join('.') ?? '';
    throw new DetailError(400, where ? `Batch item ${where} is invalid` : 'The batch is invalid');
  }
  for (const [index, item] of parsed.data.items.entries()) {
    if ('end' in item && item.end < item.start)
      throw new DetailError(400, `Batch item items.${index} ends before it starts`);
  }
  return parsed.data;
}

function isDeleted(store: PhoneDataStore, deviceId: string, kind: string, id: string): boolean {
  return (
    store.db
      .prepare('SELECT 1 FROM health_deleted WHERE device_id = ? AND kind = ? AND id = ?')
      .get(deviceId, kind, id) !== undefined
  );
}

/** Stores one item; false when it was left out (an older computation, or an item deleted before). */
function storeItem(store: PhoneDataStore, deviceId: string, item: HealthItem, nowS: number): boolean {
  const db = store.db;
  switch (item.kind) {
    case 'total':
      // `>=`: the same computation sent again (a retried batch under a new id) is stored, not ignored.
      return (
        db
          .prepare(
            `INSERT INTO health_totals (device_id, metric, window, stat, start, value, unit, computed_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?)
             ON CONFLICT (device_id, metric, window, stat, start) DO UPDATE SET value = excluded.value,
               unit = excluded.unit, computed_at = excluded.computed_at
             WHERE excluded.computed_at >= health_totals.computed_at`,
          )
          .run(deviceId, item.metric, item.window, item.stat, item.start, item.value, item.unit, item.computed_at)
          .changes > 0
      );
    case 'sleep_night':
      return (
        db
          .prepare(
            `INSERT INTO health_sleep_nights (device_id, night, start, end, asleep_s, in_bed_s, awake_s, rem_s, core_s,
               deep_s, computed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
             ON CONFLICT (device_id, night) DO UPDATE SET start = excluded.start, end = excluded.end,
               asleep_s = excluded.asleep_s, in_bed_s = excluded.in_bed_s, awake_s = excluded.awake_s,
               rem_s = excluded.rem_s, core_s = excluded.core_s, deep_s = excluded.deep_s,
               computed_at = excluded.computed_at
             WHERE excluded.computed_at >= health_sleep_nights.computed_at`,
          )
          .run(
            deviceId,
            item.night,
            item.start,
            item.end,
            item.asleep_s,
            item.in_bed_s ?? null,
            item.awake_s ?? null,
            item.rem_s ?? null,
            item.core_s ?? null,
            item.deep_s ?? null,
            item.computed_at,
          ).changes > 0
      );
    case 'sleep_stage':
      if (isDeleted(store, deviceId, 'sleep_stage', item.id)) return false;
      db.prepare(
        'INSERT OR REPLACE INTO health_sleep_stages (device_id, id, stage, start, end) VALUES (?, ?, ?, ?, ?)',
      ).run(deviceId, item.id, item.stage, item.start, item.end);
      return true;
    case 'workout':
      if (isDeleted(store, deviceId, 'workout', item.id)) return false;
      db.prepare(
        `INSERT OR REPLACE INTO health_workouts (device_id, id, activity, start, end, energy_kcal, distance_m, avg_heart_rate)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(
        deviceId,
        item.id,
        item.activity,
        item.start,
        item.end,
        item.energy_kcal ?? null,
        item.distance_m ?? null,
        item.avg_heart_rate ?? null,
      );
      return true;
    case 'sample':
      if (isDeleted(store, deviceId, 'sample', item.id)) return false;
      db.prepare(
        'INSERT OR REPLACE INTO health_samples (device_id, id, metric, start, end, value, unit) VALUES (?, ?, ?, ?, ?, ?, ?)',
      ).run(deviceId, item.id, item.metric, item.start, item.end, item.value, item.unit);
      return true;
    case 'deleted':
      db.prepare(`DELETE FROM ${ITEM_TABLES[item.of]} WHERE device_id = ? AND id = ?`).run(deviceId, item.id);
      db.prepare('INSERT OR IGNORE INTO health_deleted (device_id, kind, id, deleted_at) VALUES (?, ?, ?, ?)').run(
        deviceId,
        item.of,
        item.id,
        nowS,
      );
      return true;
  }
}

export function storeHealthBatch(
  store: PhoneDataStore,
  deviceId: string,
  batch: HealthBatch,
  nowS: number,
): BatchOutcome {
  let stored = 0;
  for (const item of batch.items) if (storeItem(store, deviceId, item, nowS)) stored += 1;
  return { stored, ignored: batch.items.length - stored };
}

const COUNTED = {
  totals: 'health_totals',
  sleep_nights: 'health_sleep_nights',
  sleep_stages: 'health_sleep_stages',
  workouts: 'health_workouts',
  samples: 'health_samples',
  deleted: 'health_deleted',
} as const;

/** Counts per kind and the days the data covers; never a value. */
export function summarizeHealth(store: PhoneDataStore, deviceId: string): DeviceSummary {
  const counts: Record<string, number> = {};
  for (const [name, table] of Object.entries(COUNTED)) {
    counts[name] = (
      store.db.prepare(`SELECT COUNT(*) AS n FROM ${table} WHERE device_id = ?`).get(deviceId) as { n: number }
    ).n;
  }
  const span = store.db
    .prepare(
      `SELECT date(MIN(start), 'unixepoch') AS first, date(MAX(start), 'unixepoch') AS last FROM (
         SELECT start FROM health_totals WHERE device_id = @id UNION ALL
         SELECT start FROM health_sleep_nights WHERE device_id = @id UNION ALL
         SELECT start FROM health_sleep_stages WHERE device_id = @id UNION ALL
         SELECT start FROM health_workouts WHERE device_id = @id UNION ALL
         SELECT start FROM health_samples WHERE device_id = @id)`,
    )
    .get({ id: deviceId }) as { first: string | null; last: string | null };
  return { counts, firstDay: span.first, lastDay: span.last };
}
