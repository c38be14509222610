import { z } from 'zod';
import { getWebSearchStatus, postWebSearch } from '@conduit/contracts/dashboard/web-search';
import { bindRoute } from '@conduit/contracts/server';
import { answerWithDetail, readJsonBody } from '../../kernel/detail-errors.js';
import type { HostFeature } from '../../kernel/feature.js';
import { lookupsFor } from '../../kernel/lookups/index.js';
import { isRunnable } from '../../kernel/lookups/search-backend-selection.js';
import { WEB_SEARCH_BOUNDS } from '../../kernel/lookups/web-search-lookup.js';
import { profileForRoute } from '../../kernel/profile-files.js';
import { limiterKey } from '../../kernel/rate-window.js';

/** The bounds of these routes (ROUTES.md, Web search); the search's own are in kernel/lookups. */
const BOUNDS = {
  bodyLimitBytes: 16 * 1024,
} as const;

const NO_STORE = { 'Cache-Control': 'no-store' };

/** The body as sent: anything but an object is an empty request; fields are checked by the reference's rules. */
const searchBody = z
  .object({ query: z.unknown(), limit: z.number().int().catch(WEB_SEARCH_BOUNDS.defaultResults) })
  .catch({ query: undefined, limit: WEB_SEARCH_BOUNDS.defaultResults });

/**
 * Web search (`web-search`): Gemini Live answers quick questions with this host's own web search
 * backend, the one Hermes is configured with, instead of Google Search. The search itself is the
 * kernel's (kernel/lookups), shared with the Watch's `web_search` tool.
 */
export const webSearchFeature: HostFeature = {
  name: 'web-search',
  capabilities: [{ name: 'web-search', method: 'GET', path: getWebSearchStatus.path }],
  register(scope, kernel) {
    const lookups = lookupsFor(kernel);
    scope.addHook('onClose', async () => lookups.close());
    answerWithDetail(scope, {
      bodyLimitBytes: BOUNDS.bodyLimitBytes,
      failure: (request, type) =>
        `Web search ${request.url.includes('/status') ? 'status' : 'request'} failed on the host (${type})`,
    });

    bindRoute(scope, getWebSearchStatus, async ({ query }) => {
      const profile = profileForRoute(kernel.hermesHome, query.profile);
      const choice = await lookups.webSearch.backendOf(profile);
      const body = !choice.configured
        ? { ok: true as const, available: false, reason: 'not_configured' as const }
        : isRunnable(choice.backend)
          ? { ok: true as const, available: true, backend: choice.backend }
          : { ok: true as const, available: false, reason: 'unsupported' as const, backend: choice.backend };
      return { status: 200, body, headers: NO_STORE };
    });

    bindRoute(scope, postWebSearch, async ({ query, body: raw }) => {
      const profile = profileForRoute(kernel.hermesHome, query.profile);
      const input = searchBody.parse(readJsonBody(raw));
      const body = await lookups.webSearch.search(profile, limiterKey(query.profile), input.query, input.limit);
      return { status: 200, body, headers: NO_STORE };
    });
  },
};
