import { z } from 'zod';
import { defineRoute } from '../route.js';
import { detailAnswer, detailBodyRefusals, detailUnavailable, noStoreAnswer } from './detail-error.js';
import { unauthorized } from './notification-settings.js';
import { profileQuery } from './profile.js';

/**
 * Chat takeover and Desktop views (ROUTES.md "Chat takeover" and "Desktop views", the seed's takeover
 * and Desktop views): dropping another Hermes app's claim on a chat so Conduit can send to it, and the
 * chats Hermes Desktop (or the web dashboard) has had open on this host, for Conduit's Unread filter.
 * Errors are `{"detail"}` answers with the reference's texts.
 */

/** The bounds of the takeover request, as the reference enforces them. */
export const TAKEOVER_LIMITS = {
  bodyMaxBytes: 4096,
  sessionIdsMin: 1,
  sessionIdsMax: 4,
  sessionIdMaxChars: 200,
} as const;

export const takeoverRequest = z.object({
  /** 1 to 4 ids of ONE chat (its stored id and its live id), never ids of different chats; each ≤200 characters. */
  session_ids: z.array(z.string()),
});

/**
 * - `taken_over`: another app's claim was dropped; send again.
 * - `free`: nobody else holds the chat.
 * - `busy`: the other app is running a turn on it (or it is a live worker or gateway, whose turns can't
 *   be seen); nothing was changed, ask again shortly.
 * - `same_host`: the Hermes dashboard this host serves still holds it (Conduit on another device);
 *   that claim is left alone.
 */
export const takeoverStatus = z.enum(['free', 'taken_over', 'busy', 'same_host']);

export const takeoverResponse = z.object({
  ok: z.literal(true),
  status: takeoverStatus,
  /** The holder's surface as Hermes records it (`desktop`, `tui`, `cli`, `gateway:telegram`, …), when known. */
  surface: z.string().optional(),
});

export const postSessionTakeover = defineRoute({
  method: 'POST',
  path: '/api/plugins/conduit_push/sessions/takeover',
  operationId: 'postSessionTakeover',
  summary: "Drop another Hermes app's claim on a chat so Conduit can send to it",
  tags: ['sessions'],
  auth: 'bearer',
  query: profileQuery,
  body: takeoverRequest,
  bodyContentType: 'application/json',
  responses: {
    200: noStoreAnswer('What the chat was: taken over, free, busy or held by this host.', takeoverResponse),
    401: unauthorized,
    ...detailBodyRefusals,
    429: detailAnswer('More than 60 takeover requests a minute on this host.'),
    500: detailAnswer('An unexpected failure, named by its type only.'),
    501: detailAnswer(
      "`This Hermes version can't hand a chat over`: no ownership registry or turn markers in the form this host reads, or no way to take Hermes' registry lock here.",
    ),
    503: detailUnavailable(
      "The profile cannot be resolved, or `Hermes can't read who owns this chat right now` (ownership is never guessed; nothing was written).",
    ),
    504: detailAnswer(
      '`Chat takeover timed out` after 20 seconds; nothing is written after that, short of a write already under way.',
    ),
  },
});

/** At most this many chats are kept in `conduit-desktop-views.json`, the newest seen first. */
export const DESKTOP_VIEWS_MAX = 2000;

export const desktopViewsQuery = profileQuery.extend({
  /** Only chats seen after this time (seconds since the epoch); a value that isn't a finite number returns every chat. */
  since: z.string().optional(),
});

export const desktopView = z.object({
  /** The newest open of the chat (seconds since the epoch). */
  opened_at: z.number(),
  /** Until when the chat then stayed selected (seconds since the epoch); the moment of the read while `open`. */
  seen_through: z.number(),
  /** `desktop`: Hermes Desktop; `browser`: the web dashboard. */
  client: z.enum(['desktop', 'browser']),
  /** The chat is selected right now. */
  open: z.literal(true).optional(),
});

export const desktopViewsReason = z.enum(['waiting', 'gateway-not-in-process', 'gateway-unsupported']);

export const desktopViewsResponse = z.object({
  ok: z.literal(true),
  /** Whether this host is observing Desktop's selections now; false with a reason when not. */
  observing: z.boolean(),
  reason: desktopViewsReason.nullable(),
  /** Keyed by stored session id. */
  views: z.record(z.string(), desktopView),
});

export const getDesktopViews = defineRoute({
  method: 'GET',
  path: '/api/plugins/conduit_push/sessions/desktop-views',
  operationId: 'getDesktopViews',
  summary: 'The chats Hermes Desktop or the web dashboard has had open on this host',
  tags: ['sessions'],
  auth: 'bearer',
  query: desktopViewsQuery,
  responses: {
    200: noStoreAnswer('The chats seen, and whether they are being observed now.', desktopViewsResponse),
    401: unauthorized,
    429: detailAnswer('More than 60 Desktop view reads a minute for this profile.'),
    500: detailAnswer('An unexpected failure, named by its type only.'),
    503: detailUnavailable('The profile cannot be resolved.'),
  },
});
