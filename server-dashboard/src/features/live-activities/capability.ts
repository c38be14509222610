import type { LiveActivityReporter } from './reporter.js';

/**
 * `live-activities` in GET /capabilities: the host keeps a Live Activity current once the user leaves
 * Conduit, so the app hands its activities to the relay only when that works — the default profile
 * (the one the capabilities speak for) is paired, and its relay takes the reports.
 */
export const LIVE_ACTIVITIES_CAPABILITY = 'live-activities';

export function liveActivitiesCapability(
  reporter: Pick<LiveActivityReporter, 'reporting'>,
  hermesHome: string,
): { name: string; working(): Promise<boolean> } {
  return {
    name: LIVE_ACTIVITIES_CAPABILITY,
    working: () => reporter.reporting({ name: 'default', home: hermesHome }),
  };
}
