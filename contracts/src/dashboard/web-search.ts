import { z } from 'zod';
import { defineRoute } from '../route.js';
import { detailAnswer, detailBodyRefusals, detailUnavailable, noStoreAnswer } from './detail-error.js';
import { unauthorized } from './notification-settings.js';
import { profileQuery } from './profile.js';

export const webSearchStatusResponse = z.object({
  ok: z.literal(true),
  available: z.boolean(),
  /**
   * `not_configured`: no web search backend has its settings; `unsupported`: the backend Hermes is
   * configured to use is one this host cannot run.
   */
  reason: z.enum(['not_configured', 'unsupported']).optional(),
  /** The backend searches go to (`searxng`, `tavily`, `firecrawl`), when available. */
  backend: z.string().nullable().optional(),
});

export const getWebSearchStatus = defineRoute({
  method: 'GET',
  path: '/api/plugins/conduit_push/web-search/status',
  operationId: 'getWebSearchStatus',
  summary: "Whether the profile's web search backend is usable",
  tags: ['live-voice'],
  auth: 'bearer',
  query: profileQuery,
  responses: {
    200: noStoreAnswer('Available, or why not.', webSearchStatusResponse),
    401: unauthorized,
    503: detailUnavailable('The profile cannot be resolved.'),
  },
});

export const webSearchRequest = z.object({
  /** At most 500 characters once whitespace is collapsed (2000 as sent). */
  query: z.string(),
  /** Results wanted, clamped to 1..5; anything but an integer is 3. */
  limit: z.number().int().optional(),
});

export const webSearchResult = z.object({
  /** At most 200 characters. */
  title: z.string(),
  /** An http(s) URL of at most 2000 characters. */
  url: z.string(),
  /** At most 500 characters. */
  snippet: z.string(),
});

export const webSearchResponse = z.object({
  ok: z.literal(true),
  query: z.string(),
  results: z.array(webSearchResult),
});

/** Runs one web search on the profile's Hermes web search backend: titles, URLs and snippets only. */
export const postWebSearch = defineRoute({
  method: 'POST',
  path: '/api/plugins/conduit_push/web-search',
  operationId: 'postWebSearch',
  summary: "Search the web with the profile's backend",
  tags: ['live-voice'],
  auth: 'bearer',
  query: profileQuery,
  body: webSearchRequest,
  bodyContentType: 'application/json',
  responses: {
    200: noStoreAnswer('The results (at most 5).', webSearchResponse),
    401: unauthorized,
    ...detailBodyRefusals,
    429: detailAnswer('More than 30 searches a minute for this profile.'),
    500: detailAnswer('An unexpected failure, named by its type only.'),
    502: detailAnswer("The backend failed (only Hermes' configuration messages pass through) or answered unreadably."),
    503: detailUnavailable('The profile cannot be resolved.'),
    504: detailAnswer('The search took more than 20 seconds.'),
  },
});
