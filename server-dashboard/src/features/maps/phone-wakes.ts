import path from 'node:path';
import { z } from 'zod';
import { setBounded } from '../../bounded-map.js';
import { JsonStateFile } from '../../state/json-state-file.js';
import { MAPS_LIMITS } from './maps-limits.js';

/** The file in a profile's home that counts its phone wakes for maps (0600). */
export const MAPS_WAKES_FILE = 'conduit-maps-wakes.json';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

const wakesShape = z.object({
  /** When each wake of the last day was taken, in ms since the epoch. */
  wakes: z.array(z.number()).max(10_000),
});
type Wakes = z.infer<typeof wakesShape>;

export type WakeTaken = { ok: true; atMs: number } | { ok: false; reason: string };

/**
 * The phone wakes a profile's maps lookups may spend (the seed: 30 an hour and 120 a day), in the
 * profile's home so a restart does not hand out a new hour. A wake is taken before the push is sent
 * (check and take under one lock, so two lookups at once cannot both pass) and given back when the push
 * never left, since it woke nothing.
 */
export class PhoneWakeBudget {
  /** One file object per profile, so its in-process lock serialises that profile's takes. */
  private readonly files = new Map<string, JsonStateFile<Wakes>>();

  private fileOf(home: string): JsonStateFile<Wakes> {
    let file = this.files.get(home);
    if (!file) {
      file = new JsonStateFile(path.join(home, MAPS_WAKES_FILE), wakesShape, () => ({ wakes: [] }));
      setBounded(this.files, home, file, MAPS_LIMITS.profilesRemembered);
    }
    return file;
  }

  async take(home: string, nowMs: number): Promise<WakeTaken> {
    let taken: WakeTaken = { ok: false, reason: '' };
    await this.fileOf(home).update(({ wakes }) => {
      // Entries from "the future" (a clock stepped back) count too, so stepping back frees nothing.
      const day = wakes.filter((at) => at > nowMs - DAY_MS);
      const hour = day.filter((at) => at > nowMs - HOUR_MS);
      if (hour.length >= MAPS_LIMITS.phoneWakesPerHour) {
        taken = {
          ok: false,
          reason: `The iPhone answers at most ${MAPS_LIMITS.phoneWakesPerHour} maps lookups an hour for this profile; that is spent for now.`,
        };
        return { wakes: day };
      }
      if (day.length >= MAPS_LIMITS.phoneWakesPerDay) {
        taken = {
          ok: false,
          reason: `The iPhone answers at most ${MAPS_LIMITS.phoneWakesPerDay} maps lookups a day for this profile; that is spent for today.`,
        };
        return { wakes: day };
      }
      taken = { ok: true, atMs: nowMs };
      return { wakes: [...day, nowMs] };
    });
    return taken;
  }

  /** Gives back a wake whose push never left. */
  async release(home: string, atMs: number): Promise<void> {
    await this.fileOf(home).update(({ wakes }) => {
      const index = wakes.lastIndexOf(atMs);
      return { wakes: index < 0 ? wakes : [...wakes.slice(0, index), ...wakes.slice(index + 1)] };
    });
  }
}
