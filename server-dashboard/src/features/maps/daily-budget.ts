import path from 'node:path';
import { z } from 'zod';
import type { Clock } from '../../clock.js';
import { JsonStateFile } from '../../state/json-state-file.js';

/** The file in the service's state directory that counts this host's Apple calls today (0600). */
export const MAPS_USAGE_FILE = 'conduit-maps-usage.json';

const usageShape = z.object({
  /** The UTC day counted, YYYY-MM-DD. */
  day: z.string(),
  calls: z.number().int().nonnegative(),
});
type Usage = z.infer<typeof usageShape>;

function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/**
 * This host's Apple Maps calls per UTC day, for every profile together (the seed: "Each host uses at
 * most 200 Apple calls a day"). Persisted so a restart does not hand out a second day's worth; a call
 * is counted before it is made, so a call that then fails still counts (Apple counted it too).
 */
export class MapsDailyBudget {
  private readonly file: JsonStateFile<Usage>;

  constructor(
    stateDir: string,
    private readonly perDay: number,
    private readonly clock: Clock,
  ) {
    this.file = new JsonStateFile(path.join(stateDir, MAPS_USAGE_FILE), usageShape, () => ({ day: '', calls: 0 }));
  }

  /**
   * Whether today's budget is already spent, without taking from it: checked before the relay is asked
   * for a token, so a host out of calls does not spend the relay's tokens either.
   */
  async spent(): Promise<boolean> {
    const usage = await this.file.read();
    return usage.day === utcDay(this.clock.now()) && usage.calls >= this.perDay;
  }

  /** Takes one call from today's budget; false when today's is spent. */
  async take(): Promise<boolean> {
    let taken = false;
    await this.file.update((usage) => {
      const today = utcDay(this.clock.now());
      const calls = usage.day === today ? usage.calls : 0;
      if (calls >= this.perDay) return { day: today, calls };
      taken = true;
      return { day: today, calls: calls + 1 };
    });
    return taken;
  }
}
