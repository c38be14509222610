import { z } from 'zod';
import { getWebSearchStatus, postWebSearch } from '@conduit/contracts/dashboard/web-search';
import { bindRoute } from '@conduit/contracts/server';
import { withDeadline } from '../../kernel/deadline.js';
import { answerWithDetail, DetailError, readJsonBody } from '../../kernel/detail-errors.js';
import type { HostFeature } from '../../kernel/feature.js';
import { profileForRoute, readProfileFiles } from '../../kernel/profile-files.js';
import { limiterKey, perMinute } from '../../kernel/rate-window.js';
import { UpstreamTimeout, UpstreamTooLarge } from '../../kernel/upstream-http.js';
import { clipLine, voiceQuery } from '../../kernel/voice-text.js';
import { chooseSearchBackend, isRunnable } from './backend-selection.js';
import {
  BackendConfigurationError,
  BackendFailure,
  BackendUnreadable,
  SEARCH_BACKENDS,
  type RawSearchHit,
} from './search-backends.js';

/** The bounds of this feature (ROUTES.md, Web search). */
const BOUNDS = {
  searchesPerMinute: 30,
  /** A spoken answer cannot wait longer; past it the app hears 504 and answers without the web. */
  searchTimeoutMs: 20_000,
  /** Searches running at once, host-wide (the reference's pool of 4 workers); more wait their turn. */
  concurrentSearches: 4,
  bodyLimitBytes: 16 * 1024,
  maxResults: 5,
  defaultResults: 3,
  urlMaxChars: 2000,
  titleMaxChars: 200,
  snippetMaxChars: 500,
} as const;

const NO_STORE = { 'Cache-Control': 'no-store' };

/** The body as sent: anything but an object is an empty request; fields are checked by the reference's rules. */
const searchBody = z
  .object({ query: z.unknown(), limit: z.number().int().catch(BOUNDS.defaultResults) })
  .catch({ query: undefined, limit: BOUNDS.defaultResults });

/**
 * Hermes' own configuration messages pass through to the caller; any other backend text stays in the
 * log, since it can carry URLs, keys or the provider's internals.
 */
const PASSABLE = [/^No web (?:search )?provider configured\b/, /^[A-Z][A-Z0-9_]{2,63} is not set\b/];
const GENERIC_FAILURE = 'The web search backend failed; the Hermes log has the details';

function passableMessage(message: string): string {
  return PASSABLE.some((pattern) => pattern.test(message)) && !message.includes('://') ? message : GENERIC_FAILURE;
}

function isWebUrl(url: string): boolean {
  if (url.length > BOUNDS.urlMaxChars) return false;
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'http:' || parsed.protocol === 'https:';
  } catch {
    return false;
  }
}

function presentable(hits: RawSearchHit[], limit: number) {
  return hits
    .filter((hit) => isWebUrl(hit.url))
    .slice(0, limit)
    .map((hit) => ({
      title: clipLine(hit.title, BOUNDS.titleMaxChars),
      url: hit.url,
      snippet: clipLine(hit.description, BOUNDS.snippetMaxChars),
    }));
}

/** At most `size` tasks at once; the rest wait in order. */
class SearchPool {
  private running = 0;
  private readonly queue: (() => void)[] = [];
  constructor(private readonly size: number) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.running >= this.size) await new Promise<void>((resolve) => this.queue.push(resolve));
    this.running += 1;
    try {
      return await task();
    } finally {
      this.running -= 1;
      this.queue.shift()?.();
    }
  }
}

class SearchTimedOut extends Error {}

/**
 * Web search (`web-search`): Gemini Live answers quick questions with this host's own web search
 * backend, the one Hermes is configured with, instead of Google Search.
 */
export const webSearchFeature: HostFeature = {
  name: 'web-search',
  capabilities: [{ name: 'web-search', method: 'GET', path: getWebSearchStatus.path }],
  register(scope, kernel) {
    const searches = perMinute(BOUNDS.searchesPerMinute, kernel.clock);
    const pool = new SearchPool(BOUNDS.concurrentSearches);
    answerWithDetail(scope, {
      bodyLimitBytes: BOUNDS.bodyLimitBytes,
      failure: (request, type) =>
        `Web search ${request.url.includes('/status') ? 'status' : 'request'} failed on the host (${type})`,
    });

    bindRoute(scope, getWebSearchStatus, async ({ query }) => {
      const profile = profileForRoute(kernel.hermesHome, query.profile);
      const choice = chooseSearchBackend(await readProfileFiles(profile, kernel.serviceEnv));
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
      const text = voiceQuery(input.query);
      const limit = Math.min(BOUNDS.maxResults, Math.max(1, input.limit));
      if (!searches.tryTake(limiterKey(query.profile)))
        throw new DetailError(429, 'Too many web searches; try again shortly');

      const files = await readProfileFiles(profile, kernel.serviceEnv);
      const choice = chooseSearchBackend(files);
      if (!choice.configured && !choice.named) throw new DetailError(502, 'No web search provider configured');
      if (!isRunnable(choice.backend)) {
        throw new DetailError(502, `No web search provider configured that this host can run (${choice.backend})`);
      }
      const search = SEARCH_BACKENDS[choice.backend];
      const context = { files, timers: kernel.timers, timeoutMs: BOUNDS.searchTimeoutMs, origins: kernel.upstreams };
      try {
        // The deadline covers the wait for a pool slot too: the caller waits 20 s at most, whatever the cause.
        const hits = await withDeadline(
          pool.run(() => search(text, limit, context)),
          BOUNDS.searchTimeoutMs,
          kernel.timers,
          () => new SearchTimedOut(),
        );
        const results = presentable(hits, limit);
        kernel.log.info('web search answered', {
          profile: profile.name,
          backend: choice.backend,
          results: results.length,
        });
        return { status: 200, body: { ok: true, query: text, results }, headers: NO_STORE };
      } catch (error) {
        const fields = { profile: profile.name, backend: choice.backend };
        if (error instanceof SearchTimedOut || error instanceof UpstreamTimeout) {
          kernel.log.warn('web search timed out', fields);
          throw new DetailError(504, 'Web search timed out');
        }
        if (error instanceof BackendConfigurationError) {
          kernel.log.warn('web search backend not configured', fields);
          throw new DetailError(502, passableMessage(error.message));
        }
        if (error instanceof BackendUnreadable || error instanceof UpstreamTooLarge) {
          kernel.log.warn('web search backend answered unreadably', fields);
          throw new DetailError(502, 'The web search backend returned an unreadable response');
        }
        const status = error instanceof BackendFailure ? error.status : null;
        kernel.log.warn('web search backend failed', {
          ...fields,
          status,
          error: error instanceof Error ? error.name : 'error',
        });
        throw new DetailError(502, GENERIC_FAILURE);
      }
    });
  },
};
