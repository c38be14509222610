import { z } from 'zod';
import { phoneDataRoutes } from './phone-data.js';

/**
 * Health (the seed's "Conduit can share Apple Health data"): the phone's sealed batches of Apple
 * Health summaries over the phone-data wire (phone-data.ts) with the label `conduit-health-v1`.
 * What is below is the plaintext inside a batch's seal; it never crosses the wire in the clear.
 */

export const HEALTH_LABEL = 'conduit-health-v1';

/** The seed's health limits. */
export const HEALTH_LIMITS = {
  devicesPerProfile: 4,
  itemsPerBatch: 6000,
  /** The seed's 4 MiB per batch, counted on the sealed bytes. */
  sealedBatchMaxBytes: 4 * 1024 * 1024,
  uploadsPerMinute: 120,
} as const;

/** The categories the user turns on in Conduit. */
export const healthCategory = z.enum(['activity', 'heart', 'sleep', 'workouts', 'body', 'vitals', 'fitness']);

/** Unix seconds. */
const unixS = z.number().min(0).max(32_503_680_000);
/** An item id as HealthKit gives it (a UUID) or the phone makes it. */
const itemId = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/);
/** A HealthKit quantity type without its prefix, e.g. `stepCount`, `heartRate`. */
const metric = z.string().regex(/^[A-Za-z][A-Za-z0-9_]{0,63}$/);
const unit = z.string().min(1).max(32);

/**
 * An hourly or daily total (or average, min, max) Apple Health computed on the phone. Keyed by
 * metric, window and start: a newer `computed_at` replaces the stored one, an older one is ignored.
 */
export const healthTotal = z.object({
  kind: z.literal('total'),
  window: z.enum(['hour', 'day']),
  metric,
  /** Unix seconds of the window's start (the phone's local hour or day). */
  start: unixS,
  /** `sum`, or a statistic for discrete metrics such as heart rate. */
  stat: z.enum(['sum', 'avg', 'min', 'max']).default('sum'),
  value: z.number(),
  unit,
  computed_at: unixS,
});

/** One night's summary, keyed by `night` (the local date the night ends); a newer computation replaces it. */
export const healthSleepNight = z.object({
  kind: z.literal('sleep_night'),
  night: z.iso.date(),
  start: unixS,
  end: unixS,
  asleep_s: z.number().min(0),
  in_bed_s: z.number().min(0).optional(),
  awake_s: z.number().min(0).optional(),
  rem_s: z.number().min(0).optional(),
  core_s: z.number().min(0).optional(),
  deep_s: z.number().min(0).optional(),
  computed_at: unixS,
});

/** One sleep stage segment. */
export const healthSleepStage = z.object({
  kind: z.literal('sleep_stage'),
  id: itemId,
  stage: z.enum(['in_bed', 'asleep', 'awake', 'rem', 'core', 'deep']),
  start: unixS,
  end: unixS,
});

export const healthWorkout = z.object({
  kind: z.literal('workout'),
  id: itemId,
  /** HealthKit's activity type name, e.g. `running`. */
  activity: z.string().min(1).max(64),
  start: unixS,
  end: unixS,
  energy_kcal: z.number().min(0).optional(),
  distance_m: z.number().min(0).optional(),
  avg_heart_rate: z.number().min(0).optional(),
});

/** A raw reading, sent only for categories where the user turned on detailed readings. */
export const healthSample = z.object({
  kind: z.literal('sample'),
  id: itemId,
  metric,
  start: unixS,
  end: unixS,
  value: z.number(),
  unit,
});

/** A workout, reading or stage deleted on the phone: removed here and never stored again. */
export const healthDeletion = z.object({
  kind: z.literal('deleted'),
  of: z.enum(['workout', 'sample', 'sleep_stage']),
  id: itemId,
});

export const healthItem = z.discriminatedUnion('kind', [
  healthTotal,
  healthSleepNight,
  healthSleepStage,
  healthWorkout,
  healthSample,
  healthDeletion,
]);

/** The plaintext of a sealed health batch. */
export const healthBatch = z.object({
  v: z.literal(1),
  /** At most 6,000 (413). */
  items: z.array(healthItem),
});

export const healthRoutes = phoneDataRoutes({
  feature: 'health',
  title: 'Health',
  batchLimitText: 'The sealed batch is over 4 MiB or carries more than 6,000 items; nothing is stored.',
  uploadLimitText: 'More than 120 health uploads a minute for this profile.',
});

export const postHealthKey = healthRoutes.key;
export const postHealthIngest = healthRoutes.ingest;
export const getHealthStatus = healthRoutes.status;
export const postHealthWipe = healthRoutes.wipe;

/** At most this many days per conduit_health call (the seed). */
export const HEALTH_READ_MAX_DAYS = 92;

/**
 * The arguments of the `conduit_health` tool (read actions only). Days are UTC dates; without dates a
 * read covers the last `days` days up to today. A voice read has no `device`: it covers only the
 * asking phone.
 */
export const healthReadArgs = z.object({
  action: z.enum(['overview', 'daily', 'hourly', 'sleep', 'workouts', 'samples']),
  /** 1–92, default 7; ignored when both dates are given. */
  days: z.int().min(1).max(HEALTH_READ_MAX_DAYS).optional(),
  start_date: z.iso.date().optional(),
  end_date: z.iso.date().optional(),
  /** One metric (`stepCount`) for daily, hourly and samples. */
  metric: z
    .string()
    .regex(/^[A-Za-z][A-Za-z0-9_]{0,63}$/)
    .optional(),
  /** One device's data (its id from status); all devices when absent. */
  device: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/)
    .optional(),
});
