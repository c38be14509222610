import { getDesktopViews, postSessionTakeover, TAKEOVER_LIMITS } from '@conduit/contracts/dashboard/sessions';
import { bindRoute } from '@conduit/contracts/server';
import { withDeadline } from '../../kernel/deadline.js';
import { answerWithDetail, DetailError, readJsonBody } from '../../kernel/detail-errors.js';
import type { HostFeature } from '../../kernel/feature.js';
import { profileForRoute } from '../../kernel/profile-files.js';
import { limiterKey, perMinute } from '../../kernel/rate-window.js';
import { OwnershipUnreadable, takeOverChat, TakeoverUnsupported } from './chat-takeover.js';
import { DesktopViewsObserver, type StoredView } from './desktop-views.js';
import { processListensOn } from './process-liveness.js';

/** The bounds of these features (ROUTES.md, Chat takeover and Desktop views). */
const BOUNDS = {
  /** Host-wide: every profile's takeovers contend for the same Hermes processes. */
  takeoversPerMinute: 60,
  /**
   * The whole takeover, waiting for Hermes' registry lock included. Hermes holds that lock only for a
   * read and a rewrite of a small file, so a wait this long means a holder is stuck.
   */
  takeoverBudgetMs: 20_000,
  viewReadsPerMinute: 60,
} as const;

const NO_STORE = { 'Cache-Control': 'no-store' };

class TakeoverTimedOut extends Error {}

/** The body's chat ids, or 400: 1 to 4 non-blank ids of at most 200 characters. */
function validTakeover(body: unknown): string[] {
  const ids = typeof body === 'object' && body !== null ? (body as { session_ids?: unknown }).session_ids : undefined;
  const valid =
    Array.isArray(ids) &&
    ids.length >= TAKEOVER_LIMITS.sessionIdsMin &&
    ids.length <= TAKEOVER_LIMITS.sessionIdsMax &&
    ids.every((id) => typeof id === 'string' && id.trim() !== '' && id.length <= TAKEOVER_LIMITS.sessionIdMaxChars);
  if (!valid) throw new DetailError(400, 'session_ids must be 1 to 4 ids of one chat, each up to 200 characters');
  return ids as string[];
}

/**
 * The port of the Hermes dashboard this host fronts (`HERMES_DASHBOARD_URL`), or null. Its process holds
 * the claims of Conduit's own sends (they go through its gateway socket), so they are this host's.
 */
function frontedDashboardPort(env: Readonly<Record<string, string | undefined>>): number | null {
  const raw = env.HERMES_DASHBOARD_URL?.trim();
  if (!raw) return null;
  try {
    const url = new URL(raw);
    return url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
  } catch {
    return null;
  }
}

export interface SessionTakeoverOptions {
  /** The whole takeover's budget (default 20 s). */
  budgetMs?: number;
}

/**
 * Chat takeover (`session-takeover`): drops another Hermes app's claim on a chat from the profile's
 * ownership registry, under Hermes' own lock, so Conduit's next send can claim it (chat-takeover.ts).
 */
export function createSessionTakeoverFeature(options: SessionTakeoverOptions = {}): HostFeature {
  const budgetMs = options.budgetMs ?? BOUNDS.takeoverBudgetMs;
  return {
    name: 'session-takeover',
    capabilities: [{ name: 'session-takeover', method: 'POST', path: postSessionTakeover.path }],
    register(scope, kernel) {
      const takeovers = perMinute(BOUNDS.takeoversPerMinute, kernel.clock);
      const dashboardPort = frontedDashboardPort(kernel.serviceEnv);
      const isHostProcess = async (pid: number): Promise<boolean> =>
        dashboardPort !== null && processListensOn(pid, dashboardPort);
      answerWithDetail(scope, {
        bodyLimitBytes: TAKEOVER_LIMITS.bodyMaxBytes,
        failure: (_request, type) => `Chat takeover failed on the host (${type})`,
      });

      bindRoute(scope, postSessionTakeover, async ({ query, body: raw }) => {
        const profile = profileForRoute(kernel.hermesHome, query.profile);
        const ids = validTakeover(readJsonBody(raw));
        if (!takeovers.tryTake('')) throw new DetailError(429, 'Too many takeover requests; try again shortly');
        const deadline = new AbortController();
        try {
          const result = await withDeadline(
            takeOverChat(profile.home, ids, { isHostProcess, signal: deadline.signal }),
            budgetMs,
            kernel.timers,
            () => {
              deadline.abort();
              return new TakeoverTimedOut();
            },
          );
          return { status: 200, body: { ok: true, ...result }, headers: NO_STORE };
        } catch (error) {
          if (error instanceof TakeoverTimedOut) {
            kernel.log.warn('chat takeover timed out', { profile: profile.name });
            throw new DetailError(504, 'Chat takeover timed out');
          }
          if (error instanceof TakeoverUnsupported) {
            kernel.log.info('chat takeover unsupported', { profile: profile.name, why: error.why });
            throw new DetailError(501, "This Hermes version can't hand a chat over");
          }
          if (error instanceof OwnershipUnreadable) {
            kernel.log.warn('chat ownership unreadable', { profile: profile.name, why: error.why });
            throw new DetailError(503, "Hermes can't read who owns this chat right now");
          }
          throw error;
        }
      });
    },
  };
}

export const sessionTakeoverFeature = createSessionTakeoverFeature();

export interface DesktopViewsOptions {
  /** How often the selection is observed (default 5 s). */
  passMs?: number;
  /** How long after a change the views file is written (default 2 s). */
  writeDelayMs?: number;
  /** Reports each completed pass over every home (tests wait on it). */
  onPass?: () => void;
  /** Reports each views file written. */
  onWrite?: (home: string) => void;
}

/**
 * Desktop views (`desktop-views`): which chats Hermes Desktop or the web dashboard has had open on this
 * host, for Conduit's Unread filter, observed by DesktopViewsObserver and read from
 * `<profile home>/conduit-desktop-views.json`. Hermes' own read flags are never touched.
 */
export function createDesktopViewsFeature(options: DesktopViewsOptions = {}): HostFeature {
  return {
    name: 'desktop-views',
    capabilities: [{ name: 'desktop-views', method: 'GET', path: getDesktopViews.path }],
    register(scope, kernel) {
      const reads = perMinute(BOUNDS.viewReadsPerMinute, kernel.clock);
      const observer = new DesktopViewsObserver({
        hermesHome: kernel.hermesHome,
        clock: kernel.clock,
        log: kernel.log,
        ...options,
      });
      observer.start();
      scope.addHook('onClose', async () => observer.stop());
      answerWithDetail(scope, {
        bodyLimitBytes: 1024,
        failure: (_request, type) => `Desktop views read failed on the host (${type})`,
      });

      bindRoute(scope, getDesktopViews, async ({ query }) => {
        const profile = profileForRoute(kernel.hermesHome, query.profile);
        if (!reads.tryTake(limiterKey(query.profile))) {
          throw new DetailError(429, 'Too many Desktop view reads; try again shortly');
        }
        const nowS = kernel.clock.now() / 1000;
        const sinceText = query.since?.trim() ?? '';
        // A value that isn't a finite number returns every chat (an empty one too, not "since 0").
        const since = sinceText === '' ? NaN : Number(sinceText);
        const all = await observer.viewsAt(profile.home, nowS);
        const views: Record<string, StoredView> = {};
        for (const [id, view] of Object.entries(all)) {
          if (!Number.isFinite(since) || Math.max(view.opened_at, view.seen_through) > since) views[id] = view;
        }
        const { observing, reason } = observer.status(profile.home);
        return { status: 200, body: { ok: true, observing, reason, views }, headers: NO_STORE };
      });
    },
  };
}

export const desktopViewsFeature = createDesktopViewsFeature();
