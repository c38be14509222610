import { z } from 'zod';
import { defineRoute } from '../route.js';
import { firstQueryValue } from '../relay/shared.js';
import { detailAnswer, detailUnavailable, noStoreAnswer } from './detail-error.js';
import { unauthorized } from './notification-settings.js';
import { profileQuery } from './profile.js';

/**
 * Artifacts (the seed, "Conduit's Artifacts screens"): what a profile's chats produced, read from
 * Hermes' state.db (read only), newest message first, paged by message id.
 */

/** What an item is. */
export const ARTIFACT_KINDS = ['image', 'video', 'audio', 'page', 'document', 'file', 'link'] as const;

/**
 * Where it came from: `delivered` a `MEDIA:` file in a reply, `preview` a `::preview{file=…}` page,
 * `written` a document or media file a tool wrote, `attached` a file the user sent with `@file:`,
 * `link` a web link in a reply.
 */
export const ARTIFACT_SOURCES = ['delivered', 'preview', 'written', 'attached', 'link'] as const;

/**
 * The Artifacts screens' tabs (`?kind=`) and the kinds each lists: every kind is on exactly one tab.
 * Videos sit with images (a media grid, as messaging apps show them), audio with files.
 */
export const ARTIFACT_FILTERS = {
  images: ['image', 'video'],
  pages: ['page'],
  files: ['document', 'file', 'audio'],
  links: ['link'],
} as const satisfies Record<string, readonly (typeof ARTIFACT_KINDS)[number][]>;

export type ArtifactFilter = keyof typeof ARTIFACT_FILTERS;

/** The largest `limit`. */
export const ARTIFACTS_LIMIT_MAX = 200;
/** The page size without `limit`. */
export const ARTIFACTS_LIMIT_DEFAULT = 50;
/** Most `session_id` values one request may name (the ids one chat is known by). */
export const ARTIFACTS_SESSION_IDS_MAX = 8;
/** The longest `q`. */
export const ARTIFACTS_QUERY_MAX = 200;

const artifactCommon = {
  kind: z.enum(ARTIFACT_KINDS),
  source: z.enum(ARTIFACT_SOURCES),
  /** A file's name, a page's title or file name, a link's text (or its host and path). */
  name: z.string(),
  /** The chat (stored session id) the message belongs to. */
  session_id: z.string(),
  /** That session's title, or null when it has none. */
  session_title: z.string().nullable(),
  /** The message (state.db `messages.id`) the item was read from. */
  message_id: z.int(),
  /** The message's time, seconds since the epoch (null when Hermes stored none). */
  timestamp: z.number().nullable(),
};

/** A file on this host: delivered, written, attached, or a page previewed from a file. */
export const fileArtifact = z.object({
  ...artifactCommon,
  /** The absolute path (a relative one only when the chat's working folder is unknown). */
  path: z.string(),
  /** Whether the path exists now. */
  exists: z.boolean(),
  /** Its size in bytes, or null when it is missing or not a regular file. */
  size: z.int().nullable(),
});

/** A web address: a link in a reply, or a page previewed from a URL. */
export const linkArtifact = z.object({
  ...artifactCommon,
  url: z.string(),
  host: z.string(),
});

export const artifactItem = z.union([fileArtifact, linkArtifact]);

export const artifactsResponse = z.object({
  ok: z.literal(true),
  items: z.array(artifactItem),
  /**
   * The message id to pass as `before` for the next (older) page; null once the history is read to
   * its start. A page can be short (even empty) with a next_before: each request reads a bounded
   * window of messages.
   */
  next_before: z.int().nullable(),
});

export const artifactsQuery = profileQuery.extend({
  session_id: z
    .union([z.string(), z.array(z.string())])
    .optional()
    .describe(
      `One chat: repeat it for each id the chat is known by (at most ${ARTIFACTS_SESSION_IDS_MAX}); the sessions it continues from or spawned (parent_session_id chains) are read too.`,
    ),
  kind: firstQueryValue(z.string().optional()).describe('`images`, `pages`, `files` or `links`.'),
  q: firstQueryValue(z.string().optional()).describe(
    `Words (all of them, any case) in the name, chat title, path or URL; at most ${ARTIFACTS_QUERY_MAX} characters.`,
  ),
  limit: firstQueryValue(z.string().optional()).describe(
    `Items per page, 1 to ${ARTIFACTS_LIMIT_MAX} (default ${ARTIFACTS_LIMIT_DEFAULT}).`,
  ),
  before: firstQueryValue(z.string().optional()).describe("The previous page's next_before: only older messages."),
});

export const getArtifacts = defineRoute({
  method: 'GET',
  path: '/api/plugins/conduit_push/artifacts',
  operationId: 'getArtifacts',
  summary: "What the profile's chats produced: files, pages and links, newest first",
  description:
    "Reads the profile's state.db read only. Within a page one path or URL is listed once, at its newest mention (a later page can list it again at an older one). A profile with no state.db (no chat yet) has an empty history.",
  tags: ['artifacts'],
  auth: 'bearer',
  query: artifactsQuery,
  responses: {
    200: noStoreAnswer('A page of items and where the next one starts.', artifactsResponse),
    400: detailAnswer('A query value is refused (its message).'),
    401: unauthorized,
    429: detailAnswer('More than 120 artifact requests a minute for this profile.'),
    500: detailAnswer('An unexpected failure, named by its type only.'),
    503: detailUnavailable("The profile cannot be resolved, or its state.db is busy or can't be read."),
    504: detailAnswer('Reading the page took more than 10 seconds.'),
  },
});
