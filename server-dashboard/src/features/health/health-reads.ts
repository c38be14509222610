import { HEALTH_READ_MAX_DAYS, healthReadArgs } from '@conduit/contracts/dashboard/health';
import type { z } from 'zod';
import { PhoneDataStore, type StoreShape } from '../../kernel/phone-data/store.js';
import { HEALTH_DEVICE_TABLES, HEALTH_SCHEMA } from './health-store.js';

/**
 * The `conduit_health` read handler (actions overview, daily, hourly, sleep, workouts, samples), one
 * plain function the MCP tool and the voice reads both call. Every read is logged in the store's reads
 * log (which action, which device, who read; never what it returned).
 */

export type HealthReadArgs = z.output<typeof healthReadArgs>;

export const HEALTH_SHAPE: StoreShape = {
  feature: 'health',
  schema: HEALTH_SCHEMA,
  deviceTables: HEALTH_DEVICE_TABLES,
};

/** Rows one answer carries at most: a 92-day hourly or raw read must still fit in a model's context. */
const ROWS_PER_READ = 2000;
const DAY_S = 86_400;

export interface HealthReadContext {
  nowS: number;
  /** `tool`, or the voice mode that read (`Gemini Live call`). */
  via: string;
  /** A voice read: only this device's data, whatever the arguments say. */
  onlyDevice?: string;
}

export type HealthReadResult = { ok: true; [key: string]: unknown } | { ok: false; error: string };

const dayOf = (unixS: number) => new Date(unixS * 1000).toISOString().slice(0, 10);
const startOfDay = (date: string) => Date.parse(`${date}T00:00:00Z`) / 1000;

/**
 * The UTC days a read covers, or an error for a window past 92 days or backwards. Both dates given:
 * exactly those; one date: `days` days from or up to it; none: the last `days` days up to today.
 */
export function readWindow(
  args: HealthReadArgs,
  nowS: number,
): { fromS: number; toS: number; from: string; to: string } | string {
  const spanS = ((args.days ?? 7) - 1) * DAY_S;
  let from: string;
  let to: string;
  if (args.start_date && args.end_date) [from, to] = [args.start_date, args.end_date];
  else if (args.start_date) [from, to] = [args.start_date, dayOf(startOfDay(args.start_date) + spanS)];
  else {
    to = args.end_date ?? dayOf(nowS);
    from = dayOf(startOfDay(to) - spanS);
  }
  const fromS = startOfDay(from);
  const toS = startOfDay(to) + DAY_S;
  if (toS <= fromS) return 'end_date is before start_date';
  if ((toS - fromS) / DAY_S > HEALTH_READ_MAX_DAYS) return `A read covers at most ${HEALTH_READ_MAX_DAYS} days`;
  return { fromS, toS, from, to };
}

/** Reads the profile's health data; `{ok: false, error}` for refused arguments or no data. */
export function readHealth(home: string, rawArgs: unknown, context: HealthReadContext): HealthReadResult {
  const parsed = healthReadArgs.safeParse(rawArgs);
  if (!parsed.success) {
    const field = parsed.error.issues[0]?.path[0];
    return { ok: false, error: `${typeof field === 'string' ? field : 'arguments'} is missing or invalid` };
  }
  const args = parsed.data;
  const window = readWindow(args, context.nowS);
  if (typeof window === 'string') return { ok: false, error: window };
  const store = PhoneDataStore.open(home, HEALTH_SHAPE, false);
  if (store === null) return { ok: false, error: 'No health data has been shared with this profile' };
  try {
    const device = context.onlyDevice ?? args.device ?? null;
    store.logRead({ at: context.nowS, deviceId: device, action: args.action, via: context.via });
    /** Rows in the window (by their start, or a night by its end), of the device and metric asked for. */
    const where = (time: 'start' | 'end', byMetric: boolean) =>
      `${time} >= @from AND ${time} < @to AND (@device IS NULL OR device_id = @device)` +
      (byMetric && args.metric ? ' AND metric = @metric' : '');
    const params = { from: window.fromS, to: window.toS, device, metric: args.metric ?? null };
    const all = (sql: string) => store.db.prepare(`${sql} LIMIT ${ROWS_PER_READ + 1}`).all(params);
    const clipped = (rows: unknown[]) => ({
      rows: rows.slice(0, ROWS_PER_READ),
      truncated: rows.length > ROWS_PER_READ,
    });
    const base = { ok: true as const, action: args.action, from: window.from, to: window.to };
    switch (args.action) {
      case 'daily':
      case 'hourly': {
        const rows = all(
          `SELECT device_id, metric, stat, start, value, unit FROM health_totals
           WHERE window = '${args.action === 'daily' ? 'day' : 'hour'}' AND ${where('start', true)} ORDER BY start, metric`,
        );
        const { rows: totals, truncated } = clipped(rows);
        return { ...base, totals, truncated };
      }
      case 'samples': {
        const { rows: samples, truncated } = clipped(
          all(
            `SELECT device_id, id, metric, start, end, value, unit FROM health_samples WHERE ${where('start', true)} ORDER BY start`,
          ),
        );
        return { ...base, samples, truncated };
      }
      case 'workouts': {
        const { rows: workouts, truncated } = clipped(
          all(
            `SELECT device_id, id, activity, start, end, energy_kcal, distance_m, avg_heart_rate FROM health_workouts
             WHERE ${where('start', false)} ORDER BY start`,
          ),
        );
        return { ...base, workouts, truncated };
      }
      case 'sleep': {
        const noMetric = where('end', false);
        const nights = all(
          `SELECT device_id, night, start, end, asleep_s, in_bed_s, awake_s, rem_s, core_s, deep_s
           FROM health_sleep_nights WHERE ${noMetric} ORDER BY night`,
        );
        const { rows: stages, truncated } = clipped(
          all(`SELECT device_id, stage, start, end FROM health_sleep_stages WHERE ${noMetric} ORDER BY start`),
        );
        return { ...base, nights, stages, truncated };
      }
      case 'overview': {
        const latest = store.db
          .prepare(
            `SELECT device_id, metric, stat, start, value, unit FROM health_totals t
             WHERE window = 'day' AND ${where('start', true)} AND start = (SELECT MAX(start) FROM health_totals
               WHERE window = 'day' AND device_id = t.device_id AND metric = t.metric AND stat = t.stat
               AND start >= @from AND start < @to)
             ORDER BY metric`,
          )
          .all(params);
        const lastNight = store.db
          .prepare(
            `SELECT device_id, night, asleep_s, in_bed_s, deep_s, rem_s FROM health_sleep_nights
             WHERE ${where('end', false)} ORDER BY night DESC LIMIT 1`,
          )
          .get(params);
        const workouts = (
          store.db.prepare(`SELECT COUNT(*) AS n FROM health_workouts WHERE ${where('start', false)}`).get(params) as {
            n: number;
          }
        ).n;
        // A voice read sees only the asking device, never which other devices share with the profile.
        const devices = store
          .devices()
          .filter((row) => context.onlyDevice === undefined || row.device_id === context.onlyDevice)
          .map((row) => ({ device_id: row.device_id, last_batch_at: row.last_batch_at }));
        return { ...base, devices, latest_daily: latest, last_night: lastNight ?? null, workouts };
      }
    }
  } finally {
    store.close();
  }
}
