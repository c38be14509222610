import { z } from 'zod';
import type { ProfileFiles } from '../profile-files.js';
import type { Timers } from '../timers.js';
import { parseJsonText, upstreamExchange, type UpstreamAnswer } from '../upstream-http.js';
import type { RunnableBackend } from './search-backend-selection.js';

/** One result as Hermes' `web_search_tool` returns it (`data.web[]`), before the route filters it. */
export interface RawSearchHit {
  url: string;
  title: string;
  description: string;
}

/**
 * A failure the route may tell the caller about verbatim: Hermes' configuration messages ("TAVILY_API_KEY
 * is not set"), which name a setting and never a URL or a provider's own text.
 */
export class BackendConfigurationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BackendConfigurationError';
  }
}

/** The backend refused or failed; `status` (when it answered) is logged, its text never reaches the caller. */
export class BackendFailure extends Error {
  constructor(readonly status: number | null) {
    super('web search backend failed');
    this.name = 'BackendFailure';
  }
}

/** The backend answered 2xx with something that is not its documented result shape. */
export class BackendUnreadable extends Error {
  constructor() {
    super('web search backend answered unreadably');
    this.name = 'BackendUnreadable';
  }
}

export interface SearchContext {
  files: ProfileFiles;
  timers: Timers;
  timeoutMs: number;
  /** Test origins for the hosted APIs (kernel UpstreamOrigins); production leaves them unset. */
  origins: { tavily?: string; firecrawl?: string };
}

const text = z.string().catch('');
const searxngAnswer = z.object({
  results: z.array(z.object({ url: text, title: text, content: text }).loose()),
});
const tavilyAnswer = z.object({
  results: z.array(z.object({ url: text, title: text, content: text }).loose()),
});
const firecrawlHit = z.object({ url: text, title: text, description: text }).loose();
const firecrawlAnswer = z.object({
  success: z.boolean().optional(),
  // v2 answers `{data: {web: [...]}}`; a self-hosted v1 answers `{data: [...]}`.
  data: z.union([z.object({ web: z.array(firecrawlHit).optional() }).loose(), z.array(firecrawlHit)]),
});

function answerOf<T>(answer: UpstreamAnswer, schema: z.ZodType<T>): T {
  if (answer.status < 200 || answer.status >= 300) throw new BackendFailure(answer.status);
  const parsed = schema.safeParse(parseJsonText(answer.text));
  if (!parsed.success) throw new BackendUnreadable();
  return parsed.data;
}

/**
 * SearXNG's JSON API: `GET <SEARXNG_URL>/search?q=…&format=json` (the instance must allow the json
 * format). Credentials in the URL (`https://user:pass@host`) are sent as Basic auth, since fetch
 * refuses a URL that carries them.
 */
async function searchSearxng(query: string, limit: number, context: SearchContext): Promise<RawSearchHit[]> {
  const base = context.files.env('SEARXNG_URL');
  if (!base) throw new BackendConfigurationError('SEARXNG_URL is not set');
  let url: URL | null = null;
  try {
    url = new URL(base.replace(/\/+$/, '') + '/search');
  } catch {
    url = null;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw new BackendConfigurationError('SEARXNG_URL is not set to an http(s) URL');
  }
  const headers: Record<string, string> = {};
  if (url.username || url.password) {
    const pair = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
    headers.authorization = `Basic ${Buffer.from(pair).toString('base64')}`;
    url.username = '';
    url.password = '';
  }
  url.searchParams.set('q', query);
  url.searchParams.set('format', 'json');
  const answer = await upstreamExchange(
    url.href,
    { method: 'GET', headers, timeoutMs: context.timeoutMs },
    context.timers,
  );
  return answerOf(answer, searxngAnswer)
    .results.slice(0, limit)
    .map((hit) => ({ url: hit.url, title: hit.title, description: hit.content }));
}

/** Tavily's search API: `POST https://api.tavily.com/search` with a bearer key, `results[].content` as snippets. */
async function searchTavily(query: string, limit: number, context: SearchContext): Promise<RawSearchHit[]> {
  const key = context.files.env('TAVILY_API_KEY');
  if (!key) throw new BackendConfigurationError('TAVILY_API_KEY is not set');
  const origin = context.origins.tavily ?? 'https://api.tavily.com';
  const answer = await upstreamExchange(
    `${origin}/search`,
    {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      json: { query, max_results: limit, search_depth: 'basic', include_answer: false },
      timeoutMs: context.timeoutMs,
    },
    context.timers,
  );
  return answerOf(answer, tavilyAnswer).results.map((hit) => ({
    url: hit.url,
    title: hit.title,
    description: hit.content,
  }));
}

/**
 * Firecrawl's search API: `POST <FIRECRAWL_API_URL or https://api.firecrawl.dev>/v2/search` with a bearer
 * key (a self-hosted instance may need none).
 */
async function searchFirecrawl(query: string, limit: number, context: SearchContext): Promise<RawSearchHit[]> {
  const key = context.files.env('FIRECRAWL_API_KEY');
  const selfHosted = context.files.env('FIRECRAWL_API_URL');
  if (!key && !selfHosted) throw new BackendConfigurationError('FIRECRAWL_API_KEY is not set');
  const origin = (selfHosted ?? context.origins.firecrawl ?? 'https://api.firecrawl.dev').replace(/\/+$/, '');
  const answer = await upstreamExchange(
    `${origin}/v2/search`,
    {
      method: 'POST',
      headers: key ? { authorization: `Bearer ${key}` } : {},
      json: { query, limit },
      timeoutMs: context.timeoutMs,
    },
    context.timers,
  );
  const parsed = answerOf(answer, firecrawlAnswer);
  if (parsed.success === false) throw new BackendFailure(answer.status);
  const hits = Array.isArray(parsed.data) ? parsed.data : (parsed.data.web ?? []);
  return hits.map((hit) => ({ url: hit.url, title: hit.title, description: hit.description }));
}

export const SEARCH_BACKENDS: Record<
  RunnableBackend,
  (query: string, limit: number, context: SearchContext) => Promise<RawSearchHit[]>
> = {
  searxng: searchSearxng,
  tavily: searchTavily,
  firecrawl: searchFirecrawl,
};
