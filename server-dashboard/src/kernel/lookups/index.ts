import type { FeatureKernel } from '../feature.js';
import { MemoryLookup } from './memory-lookup.js';
import { WebSearchLookup } from './web-search-lookup.js';

export { MEMORY_BOUNDS, MemoryLookup } from './memory-lookup.js';
export type { MemoryContextAnswer, MemoryRecallAnswer } from './memory-lookup.js';
export { WEB_SEARCH_BOUNDS, WebSearchLookup } from './web-search-lookup.js';
export type { WebSearchAnswer } from './web-search-lookup.js';

/**
 * The lookups a voice model asks this host for — web search and memory — shared by every feature that
 * answers them: the Live Voice routes (web-search, memory) and the Watch's sealed tool calls (watch).
 * One set per app (per kernel), so the phone's route and the Watch count against the same rate windows
 * and in-flight bounds and share one memory provider worker per profile; a process that builds several
 * apps (tests) keeps them apart.
 */
export interface Lookups {
  webSearch: WebSearchLookup;
  memory: MemoryLookup;
  /** Stops what the lookups run (the memory provider workers). Idempotent: each user's scope calls it on close. */
  close(): void;
}

const perKernel = new WeakMap<FeatureKernel, Lookups>();

export function lookupsFor(kernel: FeatureKernel): Lookups {
  let lookups = perKernel.get(kernel);
  if (!lookups) {
    const options = { clock: kernel.clock, timers: kernel.timers, log: kernel.log, serviceEnv: kernel.serviceEnv };
    const memory = new MemoryLookup(options);
    lookups = {
      webSearch: new WebSearchLookup({ ...options, upstreams: kernel.upstreams }),
      memory,
      close: () => memory.close(),
    };
    perKernel.set(kernel, lookups);
  }
  return lookups;
}
