import { z } from 'zod';
import { getMemoryContext, postMemoryRecall } from '@conduit/contracts/dashboard/memory';
import { bindRoute } from '@conduit/contracts/server';
import { answerWithDetail, readJsonBody } from '../../kernel/detail-errors.js';
import type { HostFeature } from '../../kernel/feature.js';
import { lookupsFor } from '../../kernel/lookups/index.js';
import { profileForRoute } from '../../kernel/profile-files.js';
import { limiterKey } from '../../kernel/rate-window.js';

/** The bounds of these routes (ROUTES.md, Memory); the reads' own are in kernel/lookups. */
const BOUNDS = {
  bodyLimitBytes: 16 * 1024,
} as const;

const NO_STORE = { 'Cache-Control': 'no-store' };
const recallBody = z.object({ query: z.unknown() }).catch({ query: undefined });

/**
 * Memory (`memory`): what this profile's Hermes remembers, for a voice model. Read only: nothing here
 * writes a memory file or calls a provider's write path. The built-in MEMORY.md / USER.md snapshot is
 * read here; an external provider (`memory.provider`) is reached through recall, run on Hermes' own
 * Python (kernel/lookups/memory-provider-worker.ts). The reads are the kernel's (kernel/lookups), shared
 * with the Watch's `recall_memory` tool.
 */
export const memoryFeature: HostFeature = {
  name: 'memory',
  capabilities: [{ name: 'memory', method: 'GET', path: getMemoryContext.path }],
  register(scope, kernel) {
    const lookups = lookupsFor(kernel);
    scope.addHook('onClose', async () => lookups.close());
    answerWithDetail(scope, {
      bodyLimitBytes: BOUNDS.bodyLimitBytes,
      failure: (request, type) =>
        `Memory ${request.url.includes('/recall') ? 'recall' : 'context'} failed on the host (${type})`,
    });

    bindRoute(scope, getMemoryContext, async ({ query }) => {
      const profile = profileForRoute(kernel.hermesHome, query.profile);
      const body = await lookups.memory.context(profile, limiterKey(query.profile));
      return { status: 200 as const, body, headers: NO_STORE };
    });

    bindRoute(scope, postMemoryRecall, async ({ query, body: raw }) => {
      // Resolved all the same: an unknown profile is 503 here too, never the default profile's answer.
      const profile = profileForRoute(kernel.hermesHome, query.profile);
      const asked = recallBody.parse(readJsonBody(raw)).query;
      const body = await lookups.memory.recall(profile, limiterKey(query.profile), asked);
      return { status: 200 as const, body, headers: NO_STORE };
    });
  },
};
