import type { Lookups } from '../../kernel/lookups/index.js';
import { WEB_SEARCH_BOUNDS } from '../../kernel/lookups/index.js';
import type { ProfileScope } from '../../notifier/notifier.js';
import { answerOfFailure, type WatchAnswer, type WatchArgs } from './watch-answer.js';

export const WATCH_LOOKUP_TOOLS = ['web_search', 'recall_memory'] as const;
export type WatchLookupTool = (typeof WATCH_LOOKUP_TOOLS)[number];

export function isLookupTool(tool: string): tool is WatchLookupTool {
  return (WATCH_LOOKUP_TOOLS as readonly string[]).includes(tool);
}

/**
 * The Watch's lookups, answered by the same code as the Live Voice routes (kernel/lookups): the same
 * backends, the same per-profile rate windows (a Watch search counts with the phone's), the same
 * answers — the route's body, or its status and message.
 */
export async function runLookupTool(
  lookups: Lookups,
  profile: ProfileScope,
  limiterKey: string,
  tool: WatchLookupTool,
  args: WatchArgs,
): Promise<WatchAnswer> {
  try {
    switch (tool) {
      case 'web_search': {
        const limit = typeof args.limit === 'number' ? args.limit : WEB_SEARCH_BOUNDS.defaultResults;
        return await lookups.webSearch.search(profile, limiterKey, args.query, limit);
      }
      case 'recall_memory':
        return await lookups.memory.recall(profile, limiterKey, args.query);
    }
  } catch (error) {
    return answerOfFailure(tool, error);
  }
}
