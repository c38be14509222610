import type { Logger } from '../../log.js';
import type { ProfileScope } from '../../notifier/notifier.js';
import { withDeadline } from '../deadline.js';
import { DetailError } from '../detail-errors.js';
import type { UpstreamOrigins } from '../feature.js';
import { readProfileFiles } from '../profile-files.js';
import { perMinute, type SlidingWindowLimit } from '../rate-window.js';
import type { Timers } from '../timers.js';
import { UpstreamTimeout, UpstreamTooLarge } from '../upstream-http.js';
import { clipLine, voiceQuery } from '../voice-text.js';
import { chooseSearchBackend, isRunnable, type WebSearchChoice } from './search-backend-selection.js';
import {
  BackendConfigurationError,
  BackendFailure,
  BackendUnreadable,
  SEARCH_BACKENDS,
  type RawSearchHit,
} from './search-backends.js';

/** The bounds of a web search, whoever asks (ROUTES.md, Web search). */
export const WEB_SEARCH_BOUNDS = {
  /** Per profile, counted together for the phone's route and the Watch's calls: one backend key pays for both. */
  searchesPerMinute: 30,
  /** A spoken answer cannot wait longer; past it the caller hears 504 and answers without the web. */
  searchTimeoutMs: 20_000,
  /** Searches running at once, host-wide (the reference's pool of 4 workers); more wait their turn. */
  concurrentSearches: 4,
  maxResults: 5,
  defaultResults: 3,
  urlMaxChars: 2000,
  titleMaxChars: 200,
  snippetMaxChars: 500,
} as const;

/** What a search answers: the route's 200 body, also sealed as a Watch call's answer. */
export type WebSearchAnswer = {
  ok: true;
  query: string;
  results: { title: string; url: string; snippet: string }[];
};

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
  if (url.length > WEB_SEARCH_BOUNDS.urlMaxChars) return false;
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'http:' || parsed.protocol === 'https:';
  } catch {
    return false;
  }
}

function presentable(hits: RawSearchHit[], limit: number): WebSearchAnswer['results'] {
  return hits
    .filter((hit) => isWebUrl(hit.url))
    .slice(0, limit)
    .map((hit) => ({
      title: clipLine(hit.title, WEB_SEARCH_BOUNDS.titleMaxChars),
      url: hit.url,
      snippet: clipLine(hit.description, WEB_SEARCH_BOUNDS.snippetMaxChars),
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

export interface WebSearchLookupOptions {
  clock: { now(): number };
  timers: Timers;
  log: Logger;
  serviceEnv: Readonly<Record<string, string | undefined>>;
  upstreams: UpstreamOrigins;
}

/**
 * The profile's web search through its Hermes backend — the one code path behind the Live Voice route
 * (`POST /web-search`) and the Watch's `web_search` tool, so both share the rate window, the pool of
 * four and the 20 s deadline. Failures are DetailErrors with the route's status and message.
 */
export class WebSearchLookup {
  private readonly searches: SlidingWindowLimit;
  private readonly pool = new SearchPool(WEB_SEARCH_BOUNDS.concurrentSearches);

  constructor(private readonly options: WebSearchLookupOptions) {
    this.searches = perMinute(WEB_SEARCH_BOUNDS.searchesPerMinute, options.clock);
  }

  /** Which backend the profile's searches go to, as Hermes picks it. */
  async backendOf(profile: ProfileScope): Promise<WebSearchChoice> {
    return chooseSearchBackend(await readProfileFiles(profile, this.options.serviceEnv));
  }

  /**
   * One search: the query checked and collapsed (400 when it is not one), the limit clamped to 1..5,
   * then the profile's rate window (`limiterKey`), then the backend.
   */
  async search(
    profile: ProfileScope,
    limiterKey: string,
    rawQuery: unknown,
    rawLimit: number,
  ): Promise<WebSearchAnswer> {
    const text = voiceQuery(rawQuery);
    const limit = Math.min(WEB_SEARCH_BOUNDS.maxResults, Math.max(1, rawLimit));
    if (!this.searches.tryTake(limiterKey)) throw new DetailError(429, 'Too many web searches; try again shortly');

    const { log, timers } = this.options;
    const files = await readProfileFiles(profile, this.options.serviceEnv);
    const choice = chooseSearchBackend(files);
    if (!choice.configured && !choice.named) throw new DetailError(502, 'No web search provider configured');
    if (!isRunnable(choice.backend)) {
      throw new DetailError(502, `No web search provider configured that this host can run (${choice.backend})`);
    }
    const search = SEARCH_BACKENDS[choice.backend];
    const context = {
      files,
      timers,
      timeoutMs: WEB_SEARCH_BOUNDS.searchTimeoutMs,
      origins: this.options.upstreams,
    };
    try {
      // The deadline covers the wait for a pool slot too: the caller waits 20 s at most, whatever the cause.
      const hits = await withDeadline(
        this.pool.run(() => search(text, limit, context)),
        WEB_SEARCH_BOUNDS.searchTimeoutMs,
        timers,
        () => new SearchTimedOut(),
      );
      const results = presentable(hits, limit);
      log.info('web search answered', { profile: profile.name, backend: choice.backend, results: results.length });
      return { ok: true, query: text, results };
    } catch (error) {
      const fields = { profile: profile.name, backend: choice.backend };
      if (error instanceof SearchTimedOut || error instanceof UpstreamTimeout) {
        log.warn('web search timed out', fields);
        throw new DetailError(504, 'Web search timed out');
      }
      if (error instanceof BackendConfigurationError) {
        log.warn('web search backend not configured', fields);
        throw new DetailError(502, passableMessage(error.message));
      }
      if (error instanceof BackendUnreadable || error instanceof UpstreamTooLarge) {
        log.warn('web search backend answered unreadably', fields);
        throw new DetailError(502, 'The web search backend returned an unreadable response');
      }
      const status = error instanceof BackendFailure ? error.status : null;
      log.warn('web search backend failed', {
        ...fields,
        status,
        error: error instanceof Error ? error.name : 'error',
      });
      throw new DetailError(502, GENERIC_FAILURE);
    }
  }
}
