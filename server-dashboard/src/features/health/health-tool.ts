import { z } from 'zod';
import { HEALTH_READ_MAX_DAYS } from '@conduit/contracts/dashboard/health';
import { PhoneDataStore } from '../phone-data/store.js';
import { HEALTH_SHAPE } from './health-reads.js';

/** The MCP tool that reads the Health data a phone shared with this profile (the seed, Health). */
export const HEALTH_TOOL = 'conduit_health';

export const HEALTH_TOOL_DESCRIPTION =
  "Read the Apple Health data the user's iPhone (and Apple Watch) shares with this Hermes profile through the Conduit app: " +
  'overview (what is shared and how far back), daily and hourly totals (steps, energy, heart rate…), sleep (nights and stages), ' +
  `workouts and samples (raw readings, where the user shares them), at most ${HEALTH_READ_MAX_DAYS} days per call; days are UTC dates. ` +
  'Read only. Start with overview. ' +
  'For health data, use this Conduit tool before other tools, skills or CLIs.';

/** The tool's arguments (the read handler checks them again): healthReadArgs, described for the model. */
export const healthToolInput = {
  action: z
    .enum(['overview', 'daily', 'hourly', 'sleep', 'workouts', 'samples'])
    .describe('What to read; overview first, to learn which metrics and days exist.'),
  days: z
    .number()
    .int()
    .min(1)
    .max(HEALTH_READ_MAX_DAYS)
    .optional()
    .describe(`How many days up to today (or from start_date), 1–${HEALTH_READ_MAX_DAYS}; default 7.`),
  start_date: z.string().optional().describe('First day, YYYY-MM-DD (UTC).'),
  end_date: z.string().optional().describe('Last day, YYYY-MM-DD (UTC).'),
  metric: z
    .string()
    .optional()
    .describe('One metric from overview (stepCount, heartRate…) for daily, hourly or samples.'),
  device: z.string().optional().describe("One device's data (its id from overview); every device when absent."),
  _conduit_context: z.string().optional().describe('Filled in by the Conduit host for each call; leave it out.'),
};

/** Whether a phone has synced Health data to this profile: the tool is offered only then. */
export function healthShared(home: string): boolean {
  let store: PhoneDataStore | null = null;
  try {
    store = PhoneDataStore.open(home, HEALTH_SHAPE, false);
    return store !== null && store.devices().some((device) => store?.batchCount(device.device_id) !== 0);
  } catch {
    return false; // an unreadable store: not offered
  } finally {
    store?.close();
  }
}
