/**
 * FULL sync (PROTOCOL.md §3): when Relay says our checkpoint is outside its retention, page through
 * every visible Chat and its Messages, validate the whole snapshot, store it in one transaction with
 * `full_sync_through`, and only then let the socket send `full_sync_complete`. History rebuilds the
 * chat index and never becomes turns.
 */
import { createHash } from 'node:crypto';
import { RelayFullSyncError } from './errors.js';
import type { Inbox } from './inbox.js';
import type { RelayApi } from './relay-api.js';

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** Compact JSON with keys sorted at every level; NaN/Infinity refused (as Python's allow_nan=False). */
export function canonicalJson(value: unknown): string {
  const walk = (v: unknown): Json => {
    if (v === null || typeof v === 'boolean' || typeof v === 'string') return v;
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) throw new RelayFullSyncError('snapshot contains a non-finite number');
      return v;
    }
    if (Array.isArray(v)) return v.map(walk);
    if (typeof v === 'object') {
      const out: { [k: string]: Json } = {};
      for (const k of Object.keys(v as object).sort()) {
        const x = (v as Record<string, unknown>)[k];
        if (x !== undefined) out[k] = walk(x);
      }
      return out;
    }
    throw new RelayFullSyncError('snapshot contains a non-JSON value');
  };
  return JSON.stringify(walk(value));
}

function record(v: unknown, what: string): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new RelayFullSyncError(`${what} is not an object`);
  return v as Record<string, unknown>;
}

async function pages(
  what: string,
  fetchPage: (cursor: string | null) => Promise<{ items: unknown; nextCursor: unknown }>,
): Promise<unknown[]> {
  const out: unknown[] = [];
  const seenCursors = new Set<string>();
  let cursor: string | null = null;
  for (;;) {
    const page = await fetchPage(cursor);
    if (!Array.isArray(page.items)) throw new RelayFullSyncError(`${what} page has no items array`);
    out.push(...(page.items as unknown[]));
    const next = page.nextCursor;
    if (next === null || next === undefined) return out;
    if (typeof next !== 'string' || next === '')
      throw new RelayFullSyncError(`${what} cursor is not a non-empty string`);
    // A cursor seen before would loop forever over the same pages.
    if (seenCursors.has(next)) throw new RelayFullSyncError(`${what} cursor repeated`);
    seenCursors.add(next);
    cursor = next;
  }
}

export interface Snapshot {
  chats: Record<string, unknown>[];
  messages: Record<string, unknown>[];
}

/** Fetches and validates the snapshot. Throws RelayFullSyncError on any inconsistency. */
export async function fetchSnapshot(api: RelayApi): Promise<Snapshot> {
  const chats = (await pages('chats', (c) => api.listChats(c))).map((c) => record(c, 'chat'));
  const chatIds = new Set<string>();
  for (const chat of chats) {
    const id = chat['id'];
    if (typeof id !== 'string' || !UUID.test(id)) throw new RelayFullSyncError('chat id is not a UUID');
    if (chatIds.has(id)) throw new RelayFullSyncError(`duplicate chat ${id}`);
    if (typeof chat['is_group'] !== 'boolean') throw new RelayFullSyncError(`chat ${id} has no boolean is_group`);
    chatIds.add(id);
  }
  const messages: Record<string, unknown>[] = [];
  const messageIds = new Set<string>();
  for (const chat of chats) {
    const chatId = chat['id'] as string;
    const items = (await pages('messages', (c) => api.listMessages(chatId, c))).map((m) => record(m, 'message'));
    for (const m of items) {
      const id = m['id'];
      if (typeof id !== 'string' || !UUID.test(id)) throw new RelayFullSyncError('message id is not a UUID');
      if (messageIds.has(id)) throw new RelayFullSyncError(`duplicate message ${id}`);
      if (m['chat_id'] !== chatId) throw new RelayFullSyncError(`message ${id} belongs to another chat`);
      if (typeof m['is_from_me'] !== 'boolean' || typeof m['is_system_message'] !== 'boolean') {
        throw new RelayFullSyncError(`message ${id} lacks boolean is_from_me/is_system_message`);
      }
      if (typeof m['created_at'] !== 'string') throw new RelayFullSyncError(`message ${id} has no created_at`);
      messageIds.add(id);
      messages.push(m);
    }
  }
  return { chats, messages };
}

export function snapshotSha256(snapshot: Snapshot): string {
  const byId = (a: Record<string, unknown>, b: Record<string, unknown>) =>
    String(a['id']) < String(b['id']) ? -1 : String(a['id']) > String(b['id']) ? 1 : 0;
  const canonical = canonicalJson({
    chats: [...snapshot.chats].sort(byId),
    messages: [...snapshot.messages].sort(byId),
  });
  return createHash('sha256').update(canonical, 'utf8').digest('hex');
}

/** Runs a FULL sync through `through` and commits it; the caller then sends full_sync_complete. */
export async function runFullSync(api: RelayApi, inbox: Inbox, through: bigint): Promise<Snapshot> {
  let snapshot: Snapshot;
  try {
    snapshot = await fetchSnapshot(api);
  } catch (err) {
    if (err instanceof RelayFullSyncError) throw err;
    throw new RelayFullSyncError(`FULL sync fetch failed: ${(err as Error).message}`);
  }
  inbox.replaceSnapshot(
    {
      throughSequence: through,
      snapshotSha256: snapshotSha256(snapshot),
      chatCount: snapshot.chats.length,
      messageCount: snapshot.messages.length,
    },
    snapshot.chats.map((c) => ({ id: c['id'] as string, json: canonicalJson(c) })),
    snapshot.messages.map((m) => ({ id: m['id'] as string, chatId: m['chat_id'] as string, json: canonicalJson(m) })),
  );
  return snapshot;
}
