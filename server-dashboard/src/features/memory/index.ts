import { z } from 'zod';
import { getMemoryContext, postMemoryRecall } from '@conduit/contracts/dashboard/memory';
import { bindRoute } from '@conduit/contracts/server';
import { withDeadline } from '../../kernel/deadline.js';
import { answerWithDetail, DetailError, readJsonBody } from '../../kernel/detail-errors.js';
import type { HostFeature } from '../../kernel/feature.js';
import { profileForRoute, readProfileFiles } from '../../kernel/profile-files.js';
import { limiterKey, perMinute } from '../../kernel/rate-window.js';
import { clipBlock, voiceQuery } from '../../kernel/voice-text.js';
import { builtinMemorySnapshot, memorySettings } from './builtin-memory.js';
import { hermesPython } from '../../kernel/hermes-python.js';
import { ProviderBusy, ProviderFailed, ProviderWorkers } from './provider-worker.js';

/** The bounds of this feature (ROUTES.md, Memory). */
const BOUNDS = {
  contextReadsPerMinute: 30,
  recallsPerMinute: 30,
  /** A voice turn cannot wait longer for what Hermes remembers. */
  budgetMs: 10_000,
  /**
   * Memory calls of one profile in flight at once. A stuck read then refuses that profile's next calls
   * at once (503) instead of piling them up, and other profiles are unaffected.
   */
  inFlightPerProfile: 2,
  contextMaxChars: 8000,
  recallMaxChars: 4000,
  bodyLimitBytes: 16 * 1024,
} as const;

const NO_STORE = { 'Cache-Control': 'no-store' };
const recallBody = z.object({ query: z.unknown() }).catch({ query: undefined });

class MemoryTimedOut extends Error {}

/**
 * Memory (`memory`): what this profile's Hermes remembers, for a voice model. Read only: nothing here
 * writes a memory file or calls a provider's write path. The built-in MEMORY.md / USER.md snapshot is
 * read here; an external provider (`memory.provider`) is reached through recall, run on Hermes' own
 * Python (provider-worker.ts).
 */
export const memoryFeature: HostFeature = {
  name: 'memory',
  capabilities: [{ name: 'memory', method: 'GET', path: getMemoryContext.path }],
  register(scope, kernel) {
    const contextReads = perMinute(BOUNDS.contextReadsPerMinute, kernel.clock);
    const recalls = perMinute(BOUNDS.recallsPerMinute, kernel.clock);
    const inFlight = new Map<string, number>();
    const workers = new ProviderWorkers({
      python: hermesPython(kernel.serviceEnv),
      now: () => kernel.clock.now(),
      log: kernel.log,
    });
    scope.addHook('onClose', async () => workers.close());
    answerWithDetail(scope, {
      bodyLimitBytes: BOUNDS.bodyLimitBytes,
      failure: (request, type) =>
        `Memory ${request.url.includes('/recall') ? 'recall' : 'context'} failed on the host (${type})`,
    });

    /** Runs one memory call of a profile within the budget and the in-flight bound. */
    async function bounded<T>(profile: string, kind: 'context' | 'recall', work: () => Promise<T>): Promise<T> {
      const running = inFlight.get(profile) ?? 0;
      if (running >= BOUNDS.inFlightPerProfile) {
        throw new DetailError(503, 'The memory provider is not responding; try again shortly');
      }
      inFlight.set(profile, running + 1);
      const task = work();
      // The slot is held until the work itself ends, not the deadline: a hung read keeps refusing.
      void task
        .catch(() => undefined)
        .finally(() => {
          const left = (inFlight.get(profile) ?? 1) - 1;
          if (left > 0) inFlight.set(profile, left);
          else inFlight.delete(profile);
        });
      try {
        return await withDeadline(task, BOUNDS.budgetMs, kernel.timers, () => new MemoryTimedOut());
      } catch (error) {
        if (error instanceof MemoryTimedOut) {
          kernel.log.warn('memory read timed out', { profile, kind });
          throw new DetailError(504, `Memory ${kind} timed out`);
        }
        throw error;
      }
    }

    bindRoute(scope, getMemoryContext, async ({ query }) => {
      const profile = profileForRoute(kernel.hermesHome, query.profile);
      if (!contextReads.tryTake(limiterKey(query.profile))) {
        throw new DetailError(429, 'Too many memory requests; try again shortly');
      }
      return bounded(profile.name, 'context', async () => {
        const files = await readProfileFiles(profile, kernel.serviceEnv);
        const settings = memorySettings(files.config);
        const builtinOn = settings.memoryEnabled || settings.userProfileEnabled;
        const context = clipBlock(await builtinMemorySnapshot(profile.home, settings), BOUNDS.contextMaxChars);
        const provider = settings.externalProvider ?? (builtinOn ? 'builtin' : null);
        // recall is true only once the external provider has started (starting it now if it has not).
        const recall =
          settings.externalProvider !== null &&
          (await workers.started(profile.home, profile.name, settings.externalProvider));
        const body =
          context || recall
            ? { ok: true as const, available: true, provider, recall, context }
            : { ok: true as const, available: false, reason: 'disabled' as const, provider, recall, context: '' };
        return { status: 200 as const, body, headers: NO_STORE };
      });
    });

    bindRoute(scope, postMemoryRecall, async ({ query, body: raw }) => {
      // Resolved all the same: an unknown profile is 503 here too, never the default profile's answer.
      const profile = profileForRoute(kernel.hermesHome, query.profile);
      const text = voiceQuery(recallBody.parse(readJsonBody(raw)).query);
      if (!recalls.tryTake(limiterKey(query.profile))) {
        throw new DetailError(429, 'Too many memory lookups; try again shortly');
      }
      return bounded(profile.name, 'recall', async () => {
        const files = await readProfileFiles(profile, kernel.serviceEnv);
        const provider = memorySettings(files.config).externalProvider;
        let results: string | null = null;
        try {
          results = provider && (await workers.recall(profile.home, profile.name, provider, text));
        } catch (error) {
          if (error instanceof ProviderBusy) {
            throw new DetailError(503, 'The memory provider is not responding; try again shortly');
          }
          if (error instanceof ProviderFailed) {
            kernel.log.warn('memory provider recall failed', { profile: profile.name });
            throw new DetailError(502, 'The memory provider failed; the Hermes log has the details');
          }
          throw error;
        }
        // No provider (or none that starts): not an error, the caller answers from context alone.
        const body =
          results === null
            ? { ok: true as const, available: false, results: '' }
            : { ok: true as const, available: true, results: clipBlock(results, BOUNDS.recallMaxChars) };
        return { status: 200 as const, body, headers: NO_STORE };
      });
    });
  },
};
