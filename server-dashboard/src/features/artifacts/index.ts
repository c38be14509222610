import os from 'node:os';
import { getArtifacts } from '@conduit/contracts/dashboard/artifacts';
import { bindRoute } from '@conduit/contracts/server';
import { withDeadline } from '../../kernel/deadline.js';
import { answerWithDetail, DetailError } from '../../kernel/detail-errors.js';
import type { HostFeature } from '../../kernel/feature.js';
import { profileForRoute } from '../../kernel/profile-files.js';
import { limiterKey, perMinute } from '../../kernel/rate-window.js';
import { describeItems, readPage, type ArtifactItem } from './artifact-pages.js';
import { artifactQuery, type ArtifactQuery } from './artifact-query.js';
import { HermesStateDb, StateDbUnreadable } from './state-db.js';

/** The bounds of this feature (the seed, Artifacts; where it is silent, ours). */
const BOUNDS = {
  /**
   * Pages a minute per profile. Each reads up to 2,000 messages, so a client paging through a long
   * history in a tight loop is slowed before it holds the store's readers.
   */
  readsPerMinute: 120,
  /** Checking a page's files on disk; past this the disk (a network home) is not answering. */
  budgetMs: 10_000,
} as const;

const NO_STORE = { 'Cache-Control': 'no-store' };

class ArtifactsTimedOut extends Error {}

/**
 * One page of the profile's history, the store opened and closed around it (a reader held across the
 * file checks would keep Hermes' WAL from checkpointing for no reason). A profile without a state.db
 * has not chatted yet: its history is empty, not an error.
 */
function readHistory(home: string, query: ArtifactQuery): ReturnType<typeof readPage> {
  const db = HermesStateDb.open(home);
  if (!db) return { listed: [], nextBefore: null };
  try {
    const sessionIds = query.sessionIds ? db.lineage(query.sessionIds) : null;
    return readPage(db, { ...query, scope: { sessionIds } }, os.homedir());
  } finally {
    db.close();
  }
}

/**
 * Artifacts (`artifacts`): what a profile's chats produced — files a reply delivered (`MEDIA:`),
 * pages it previewed (`::preview`), documents and media its tools wrote, files the user attached
 * (`@file:`), and web links in replies — read from the profile's state.db, read only.
 */
export const artifactsFeature: HostFeature = {
  name: 'artifacts',
  capabilities: [{ name: 'artifacts', method: 'GET', path: getArtifacts.path }],
  register(scope, kernel) {
    const reads = perMinute(BOUNDS.readsPerMinute, kernel.clock);
    answerWithDetail(scope, {
      bodyLimitBytes: 1024,
      failure: (_request, type) => `Artifacts failed on the host (${type})`,
    });

    bindRoute(scope, getArtifacts, async ({ query }) => {
      const profile = profileForRoute(kernel.hermesHome, query.profile);
      const request = artifactQuery(query);
      if (!reads.tryTake(limiterKey(query.profile))) {
        throw new DetailError(429, 'Too many artifact requests; try again shortly');
      }
      let items: ArtifactItem[];
      let nextBefore: number | null;
      try {
        const page = readHistory(profile.home, request);
        nextBefore = page.nextBefore;
        items = await withDeadline(
          describeItems(page.listed),
          BOUNDS.budgetMs,
          kernel.timers,
          () => new ArtifactsTimedOut(),
        );
      } catch (error) {
        if (error instanceof ArtifactsTimedOut) throw new DetailError(504, 'Artifacts timed out');
        if (error instanceof StateDbUnreadable) {
          throw new DetailError(
            503,
            error.busy
              ? "Hermes' session store is busy; try again shortly"
              : "Hermes' session store (state.db) can't be read",
          );
        }
        throw error;
      }
      return { status: 200, body: { ok: true, items, next_before: nextBefore }, headers: NO_STORE };
    });
  },
};
