import { stat } from 'node:fs/promises';
import path from 'node:path';
import type { z } from 'zod';
import type { artifactItem } from '@conduit/contracts/dashboard/artifacts';
import type { ArtifactKind } from './artifact-kinds.js';
import { mentionKey, mentionsOf, type Mention, type StoredMessage } from './message-artifacts.js';
import type { HermesStateDb, MessageScope } from './state-db.js';

export type ArtifactItem = z.output<typeof artifactItem>;

/** A validated request for one page (artifact-query.ts). */
export interface PageRequest {
  scope: MessageScope;
  /** Kinds listed, or null for every kind. */
  kinds: readonly ArtifactKind[] | null;
  /** Lowercased words that must all appear in the name, title, path or URL. */
  words: readonly string[];
  limit: number;
  /** Only messages with a smaller id, or null for the newest. */
  before: number | null;
}

export const PAGE_BOUNDS = {
  /**
   * Messages one request reads at most. Most messages mention nothing, so a page of a sparse history
   * comes back short with a next_before rather than one request scanning the whole store.
   */
  windowRows: 2000,
  /**
   * Characters of message text one request reads at most, so a window of long replies does not hold
   * the event loop: the page then comes back short, like a window of messages that mention nothing.
   */
  windowChars: 16 * 1024 * 1024,
  /** Rows fetched per query within the window, so a full page stops reading early. */
  chunkRows: 100,
  /** Files checked at once for exists/size. */
  statConcurrency: 16,
} as const;

/** The next page's `before`: every id is at least 1, so this reads from the newest. */
const NEWEST = Number.MAX_SAFE_INTEGER;

interface Listed {
  mention: Mention;
  message: StoredMessage;
}

function matches(request: PageRequest, mention: Mention, message: StoredMessage): boolean {
  if (request.kinds && !request.kinds.includes(mention.kind)) return false;
  if (request.words.length === 0) return true;
  const haystack = [mention.name, message.sessionTitle ?? '', 'path' in mention ? mention.path : mention.url]
    .join('\n')
    .toLowerCase();
  return request.words.every((word) => haystack.includes(word));
}

/**
 * Reads one page: messages newest first from `before`, each message's mentions that pass the filters,
 * a path or URL listed once (at its newest mention). A message is taken whole or left for the next
 * page, so `next_before` never skips one; only a single message with more mentions than the page
 * holds is cut to fit (the rest of it is not listed).
 */
export function readPage(
  db: HermesStateDb,
  request: PageRequest,
  homeDir: string,
): { listed: Listed[]; nextBefore: number | null } {
  const listed: Listed[] = [];
  const seen = new Set<string>();
  let cursor = request.before ?? NEWEST;
  let rowsRead = 0;
  let charsRead = 0;
  let exhausted = false;
  let stopped = false;
  while (!stopped && rowsRead < PAGE_BOUNDS.windowRows && charsRead < PAGE_BOUNDS.windowChars) {
    const want = Math.min(PAGE_BOUNDS.chunkRows, PAGE_BOUNDS.windowRows - rowsRead);
    const rows = db.messagesBefore(request.scope, cursor, want);
    for (const message of rows) {
      const fresh: Listed[] = [];
      for (const mention of mentionsOf(message, homeDir)) {
        const key = mentionKey(mention);
        if (!seen.has(key) && matches(request, mention, message)) fresh.push({ mention, message });
      }
      const room = request.limit - listed.length;
      if (fresh.length > room) {
        if (listed.length > 0) {
          stopped = true;
          break;
        }
        fresh.length = room;
      }
      for (const item of fresh) {
        seen.add(mentionKey(item.mention));
        listed.push(item);
      }
      cursor = message.id;
      rowsRead += 1;
      charsRead += (message.content?.length ?? 0) + (message.toolCalls?.length ?? 0);
      if (listed.length >= request.limit || charsRead >= PAGE_BOUNDS.windowChars) {
        stopped = true;
        break;
      }
    }
    if (!stopped && rows.length < want) {
      exhausted = true;
      break;
    }
  }
  const nextBefore = exhausted || !db.hasOlder(request.scope, cursor) ? null : cursor;
  return { listed, nextBefore };
}

/** Runs `work` over `items` with at most `concurrency` at once, keeping their order. */
async function mapBounded<T, R>(items: readonly T[], concurrency: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      out[index] = await work(items[index] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  return out;
}

/** The page's items as the app reads them: files checked on disk now (exists, size). */
export async function describeItems(listed: readonly Listed[]): Promise<ArtifactItem[]> {
  return mapBounded(listed, PAGE_BOUNDS.statConcurrency, async ({ mention, message }) => {
    const common = {
      kind: mention.kind,
      source: mention.source,
      name: mention.name,
      session_id: message.sessionId,
      session_title: message.sessionTitle,
      message_id: message.id,
      timestamp: message.timestamp,
    };
    if (!('path' in mention)) return { ...common, url: mention.url, host: mention.host };
    // A relative path (no working folder known) is not looked up from this service's own folder.
    if (!path.isAbsolute(mention.path)) return { ...common, path: mention.path, exists: false, size: null };
    try {
      const found = await stat(mention.path);
      return { ...common, path: mention.path, exists: true, size: found.isFile() ? found.size : null };
    } catch {
      return { ...common, path: mention.path, exists: false, size: null };
    }
  });
}
