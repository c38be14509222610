import type { Logger } from '../../log.js';
import type { ProfileScope } from '../../notifier/notifier.js';
import { withDeadline } from '../deadline.js';
import { DetailError } from '../detail-errors.js';
import { hermesPython } from '../hermes-python.js';
import { readProfileFiles } from '../profile-files.js';
import { perMinute, type SlidingWindowLimit } from '../rate-window.js';
import type { Timers } from '../timers.js';
import { clipBlock, voiceQuery } from '../voice-text.js';
import { builtinMemorySnapshot, memorySettings } from './builtin-memory.js';
import { ProviderBusy, ProviderFailed, ProviderWorkers } from './memory-provider-worker.js';

/** The bounds of memory reads, whoever asks (ROUTES.md, Memory). */
export const MEMORY_BOUNDS = {
  /** Per profile, the phone's route and the Watch's calls counted together. */
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
} as const;

export type MemoryContextAnswer =
  | { ok: true; available: true; provider: string | null; recall: boolean; context: string }
  | { ok: true; available: false; reason: 'disabled'; provider: string | null; recall: boolean; context: '' };

export type MemoryRecallAnswer =
  { ok: true; available: true; results: string } | { ok: true; available: false; results: '' };

class MemoryTimedOut extends Error {}

export interface MemoryLookupOptions {
  clock: { now(): number };
  timers: Timers;
  log: Logger;
  serviceEnv: Readonly<Record<string, string | undefined>>;
}

/**
 * What a profile's Hermes remembers, for a voice model — the one code path behind the Live Voice routes
 * (`GET /memory/context`, `POST /memory/recall`) and the Watch's `recall_memory` tool, so both share the
 * rate windows, the in-flight bound and the provider's worker. Read only: nothing here writes a memory
 * file or calls a provider's write path. Failures are DetailErrors with the route's status and message.
 */
export class MemoryLookup {
  private readonly contextReads: SlidingWindowLimit;
  private readonly recalls: SlidingWindowLimit;
  private readonly inFlight = new Map<string, number>();
  private readonly workers: ProviderWorkers;

  constructor(private readonly options: MemoryLookupOptions) {
    this.contextReads = perMinute(MEMORY_BOUNDS.contextReadsPerMinute, options.clock);
    this.recalls = perMinute(MEMORY_BOUNDS.recallsPerMinute, options.clock);
    this.workers = new ProviderWorkers({
      python: hermesPython(options.serviceEnv),
      now: () => options.clock.now(),
      log: options.log,
    });
  }

  /** The built-in MEMORY.md / USER.md snapshot, and whether the external provider answers recall. */
  async context(profile: ProfileScope, limiterKey: string): Promise<MemoryContextAnswer> {
    if (!this.contextReads.tryTake(limiterKey)) {
      throw new DetailError(429, 'Too many memory requests; try again shortly');
    }
    return this.bounded(profile.name, 'context', async () => {
      const files = await readProfileFiles(profile, this.options.serviceEnv);
      const settings = memorySettings(files.config);
      const builtinOn = settings.memoryEnabled || settings.userProfileEnabled;
      const context = clipBlock(await builtinMemorySnapshot(profile.home, settings), MEMORY_BOUNDS.contextMaxChars);
      const provider = settings.externalProvider ?? (builtinOn ? 'builtin' : null);
      // recall is true only once the external provider has started (starting it now if it has not).
      const recall =
        settings.externalProvider !== null &&
        (await this.workers.started(profile.home, profile.name, settings.externalProvider));
      return context || recall
        ? { ok: true as const, available: true as const, provider, recall, context }
        : {
            ok: true as const,
            available: false as const,
            reason: 'disabled' as const,
            provider,
            recall,
            context: '' as const,
          };
    });
  }

  /** The external provider's recall for the query (checked and collapsed first: 400 when it is not one). */
  async recall(profile: ProfileScope, limiterKey: string, rawQuery: unknown): Promise<MemoryRecallAnswer> {
    const text = voiceQuery(rawQuery);
    if (!this.recalls.tryTake(limiterKey)) throw new DetailError(429, 'Too many memory lookups; try again shortly');
    return this.bounded(profile.name, 'recall', async () => {
      const files = await readProfileFiles(profile, this.options.serviceEnv);
      const provider = memorySettings(files.config).externalProvider;
      let results: string | null = null;
      try {
        results = provider && (await this.workers.recall(profile.home, profile.name, provider, text));
      } catch (error) {
        if (error instanceof ProviderBusy) {
          throw new DetailError(503, 'The memory provider is not responding; try again shortly');
        }
        if (error instanceof ProviderFailed) {
          this.options.log.warn('memory provider recall failed', { profile: profile.name });
          throw new DetailError(502, 'The memory provider failed; the Hermes log has the details');
        }
        throw error;
      }
      // No provider (or none that starts): not an error, the caller answers from context alone.
      return results === null
        ? { ok: true as const, available: false as const, results: '' as const }
        : { ok: true as const, available: true as const, results: clipBlock(results, MEMORY_BOUNDS.recallMaxChars) };
    });
  }

  /** Stops the provider workers (the service is closing). */
  close(): void {
    this.workers.close();
  }

  /** Runs one memory call of a profile within the budget and the in-flight bound. */
  private async bounded<T>(profile: string, kind: 'context' | 'recall', work: () => Promise<T>): Promise<T> {
    const running = this.inFlight.get(profile) ?? 0;
    if (running >= MEMORY_BOUNDS.inFlightPerProfile) {
      throw new DetailError(503, 'The memory provider is not responding; try again shortly');
    }
    this.inFlight.set(profile, running + 1);
    const task = work();
    // The slot is held until the work itself ends, not the deadline: a hung read keeps refusing.
    void task
      .catch(() => undefined)
      .finally(() => {
        const left = (this.inFlight.get(profile) ?? 1) - 1;
        if (left > 0) this.inFlight.set(profile, left);
        else this.inFlight.delete(profile);
      });
    try {
      return await withDeadline(task, MEMORY_BOUNDS.budgetMs, this.options.timers, () => new MemoryTimedOut());
    } catch (error) {
      if (error instanceof MemoryTimedOut) {
        this.options.log.warn('memory read timed out', { profile, kind });
        throw new DetailError(504, `Memory ${kind} timed out`);
      }
      throw error;
    }
  }
}
