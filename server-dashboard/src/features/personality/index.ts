import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { getPersonality } from '@conduit/contracts/dashboard/personality';
import { bindRoute } from '@conduit/contracts/server';
import { withDeadline } from '../../kernel/deadline.js';
import { answerWithDetail, DetailError } from '../../kernel/detail-errors.js';
import type { HostFeature } from '../../kernel/feature.js';
import { profileForRoute } from '../../kernel/profile-files.js';
import { limiterKey, perMinute } from '../../kernel/rate-window.js';
import { clipBlock } from '../../kernel/voice-text.js';
import { scannedSoul } from './soul-scan.js';

/** The bounds of this feature (ROUTES.md, Personality). */
const BOUNDS = {
  readsPerMinute: 30,
  /** A read of one small file; past this the disk (a network home) is not answering. */
  readTimeoutMs: 10_000,
  textMaxChars: 8000,
  /** SOUL.md is a prompt; a larger file is read only this far before clipping. */
  fileReadLimit: 256 * 1024,
} as const;

class PersonalityTimedOut extends Error {}

/** The profile's SOUL.md, or '' when it is missing or empty. */
async function readSoul(home: string): Promise<string> {
  try {
    return (await readFile(path.join(home, 'SOUL.md'), 'utf8')).slice(0, BOUNDS.fileReadLimit).trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return '';
    throw error;
  }
}

/**
 * Personality (`personality`): the profile's SOUL.md as Hermes loads it (trimmed, then its injection
 * scan), so a voice mode keeps the agent's character.
 */
export const personalityFeature: HostFeature = {
  name: 'personality',
  capabilities: [{ name: 'personality', method: 'GET', path: getPersonality.path }],
  register(scope, kernel) {
    const reads = perMinute(BOUNDS.readsPerMinute, kernel.clock);
    answerWithDetail(scope, {
      bodyLimitBytes: 1024,
      failure: (_request, type) => `Personality read failed on the host (${type})`,
    });

    bindRoute(scope, getPersonality, async ({ query }) => {
      const profile = profileForRoute(kernel.hermesHome, query.profile);
      if (!reads.tryTake(limiterKey(query.profile))) {
        throw new DetailError(429, 'Too many personality requests; try again shortly');
      }
      let soul: string;
      try {
        soul = await withDeadline(
          readSoul(profile.home),
          BOUNDS.readTimeoutMs,
          kernel.timers,
          () => new PersonalityTimedOut(),
        );
      } catch (error) {
        if (error instanceof PersonalityTimedOut) throw new DetailError(504, 'Personality timed out');
        throw error;
      }
      const text = soul ? clipBlock(scannedSoul(soul), BOUNDS.textMaxChars) : '';
      return {
        status: 200,
        body: { ok: true, available: text !== '', text },
        headers: { 'Cache-Control': 'no-store' },
      };
    });
  },
};
