import { VOICE_LIMITS } from '@conduit/contracts/dashboard/voice-sessions';
import { voiceSummaryKey } from '../../kernel/hermes-chats.js';
import type { HermesStateDb } from './hermes-state-store.js';
import type { VoiceEngine } from './voice-requests.js';

/**
 * Conduit's records in Hermes' `state_meta` table (the agent never reads it), under the keys the
 * reference uses, so a store written by the Python plugin reads the same here and back:
 * - `conduit.voice.tags` = `{sid: {kind, engine?, parent_id?, parent_title?}}`, at most 2,000;
 * - `conduit.voice.calls:{sid}` = `{call_id: lastIndex}`, at most 500 per session;
 * - `conduit.voice.created` = `{call_id: sid}`, at most 500;
 * - `conduit.voice.summary:{sid}` = `{"text", "covers"}`;
 * - `conduit.voice.chat_calls:{chat_id}` = `{call_id: {engine, turns: [{role, text, at?}]}}` (turn i has
 *   index i), at most 50 calls of at most 2,000 turns.
 *
 * Each map is a JSON object whose key order is its age (oldest first), as Python's dicts keep it; the
 * caps drop from the front. (A JavaScript object lists integer-like keys first, so an all-digit id would
 * count as oldest; Hermes' and Conduit's ids are never all digits.)
 */

export const VOICE_META_KEYS = {
  tags: 'conduit.voice.tags',
  created: 'conduit.voice.created',
  calls: (sessionId: string) => `conduit.voice.calls:${sessionId}`,
  /** Also read by the Watch's read_chat (kernel/hermes-chats.ts owns the key). */
  summary: voiceSummaryKey,
  chatCalls: (chatId: string) => `conduit.voice.chat_calls:${chatId}`,
} as const;

export const META_BOUNDS = {
  /** Tags are Conduit's labels for the profile's voice chats; past this the oldest go. */
  tags: 2000,
  /**
   * Tags checked for a deleted session per write once over the cap: enough to keep up with deletes,
   * few enough that one request's work stays bounded (each is a row lookup).
   */
  tagPruneBatch: 50,
  /** A session's calls remembered for retries (and a profile's creates): a call that old is never retried. */
  calls: 500,
  chatCalls: VOICE_LIMITS.chatCallsPerChat,
  chatCallTurns: VOICE_LIMITS.chatCallMaxTurns,
  /**
   * Characters of the JSON kept with one chat: every save of a chat call rewrites it, so it must stay
   * small enough to read and write within a request. Past it the chat's oldest calls go first.
   */
  chatCallsMaxChars: 8 * 1024 * 1024,
} as const;

export interface VoiceTag {
  kind: 'call' | 'classic' | 'job';
  engine?: VoiceEngine;
  parent_id?: string;
  parent_title?: string;
}

export interface ChatCallTurn {
  role: 'user' | 'assistant';
  text: string;
  at?: number;
}

export interface ChatCall {
  engine: VoiceEngine;
  turns: ChatCallTurn[];
}

const ENGINES = new Set(['gemini-live', 'gpt-live', 'grok-live', 'classic']);

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A stored map, or empty when missing or unreadable (it starts over rather than failing every save). */
function readMap(db: HermesStateDb, key: string): Map<string, unknown> {
  const raw = db.getMeta(key);
  if (!raw) return new Map();
  try {
    const parsed: unknown = JSON.parse(raw);
    return isRecord(parsed) ? new Map(Object.entries(parsed)) : new Map();
  } catch {
    return new Map();
  }
}

function writeMap(db: HermesStateDb, key: string, map: ReadonlyMap<string, unknown>): void {
  db.setMeta(key, JSON.stringify(Object.fromEntries(map)));
}

/** Moves `key` to the newest end with `value`, then drops the oldest past `cap`. */
function putNewest<V>(map: Map<string, V>, key: string, value: V, cap: number): void {
  map.delete(key);
  map.set(key, value);
  for (const oldest of map.keys()) {
    if (map.size <= cap) break;
    map.delete(oldest);
  }
}

function cleanTag(value: unknown): VoiceTag | null {
  if (!isRecord(value)) return null;
  const { kind, engine, parent_id: parentId, parent_title: parentTitle } = value;
  if (kind !== 'call' && kind !== 'classic' && kind !== 'job') return null;
  return {
    kind,
    ...(typeof engine === 'string' && ENGINES.has(engine) ? { engine: engine as VoiceEngine } : {}),
    ...(typeof parentId === 'string' ? { parent_id: parentId } : {}),
    ...(typeof parentTitle === 'string' ? { parent_title: parentTitle } : {}),
  };
}

export function readTags(db: HermesStateDb): Map<string, VoiceTag> {
  const tags = new Map<string, VoiceTag>();
  for (const [sessionId, value] of readMap(db, VOICE_META_KEYS.tags)) {
    const tag = cleanTag(value);
    if (tag) tags.set(sessionId, tag);
  }
  return tags;
}

/**
 * Stores a tag as the newest. The session need not exist yet (Conduit may tag a chat before Hermes
 * has stored it), so dangling tags are only dropped at the cap: first the oldest few whose sessions
 * are gone (their meta with them), then the oldest. The tag being written always stays.
 */
export function setTag(db: HermesStateDb, sessionId: string, tag: VoiceTag): void {
  const tags = readTags(db);
  tags.delete(sessionId);
  tags.set(sessionId, tag);
  if (tags.size > META_BOUNDS.tags) {
    const oldest = [...tags.keys()].filter((id) => id !== sessionId).slice(0, META_BOUNDS.tagPruneBatch);
    for (const id of oldest) {
      if (db.getSession(id)) continue;
      tags.delete(id);
      dropVoiceMeta(db, id);
    }
    for (const id of tags.keys()) {
      if (tags.size <= META_BOUNDS.tags) break;
      if (id !== sessionId) tags.delete(id);
    }
  }
  writeMap(db, VOICE_META_KEYS.tags, tags);
}

/** The highest turn index written per call of a session. */
export function readCalls(db: HermesStateDb, sessionId: string): Map<string, number> {
  const calls = new Map<string, number>();
  for (const [callId, last] of readMap(db, VOICE_META_KEYS.calls(sessionId))) {
    if (typeof last === 'number' && Number.isInteger(last)) calls.set(callId, last);
  }
  return calls;
}

export function recordCall(db: HermesStateDb, sessionId: string, callId: string, last: number): void {
  const calls = readCalls(db, sessionId);
  putNewest(calls, callId, last, META_BOUNDS.calls);
  writeMap(db, VOICE_META_KEYS.calls(sessionId), calls);
}

/** Which session each recent call created, so a create whose answer was lost continues that row. */
export function readCreated(db: HermesStateDb): Map<string, string> {
  const created = new Map<string, string>();
  for (const [callId, sessionId] of readMap(db, VOICE_META_KEYS.created)) {
    if (typeof sessionId === 'string') created.set(callId, sessionId);
  }
  return created;
}

export function rememberCreated(db: HermesStateDb, callId: string, sessionId: string): void {
  const created = readCreated(db);
  putNewest(created, callId, sessionId, META_BOUNDS.calls);
  writeMap(db, VOICE_META_KEYS.created, created);
}

/** Clears a gone row's call record, summary and create record. */
export function dropVoiceMeta(db: HermesStateDb, sessionId: string): void {
  db.deleteMeta(VOICE_META_KEYS.calls(sessionId));
  db.deleteMeta(VOICE_META_KEYS.summary(sessionId));
  const created = readCreated(db);
  const kept = new Map([...created].filter(([, id]) => id !== sessionId));
  if (kept.size !== created.size) writeMap(db, VOICE_META_KEYS.created, kept);
}

export function readSummary(db: HermesStateDb, sessionId: string): { text: string; covers: number } {
  const raw = db.getMeta(VOICE_META_KEYS.summary(sessionId));
  let stored: unknown = null;
  try {
    stored = raw ? JSON.parse(raw) : null;
  } catch {
    stored = null;
  }
  if (!isRecord(stored)) return { text: '', covers: 0 };
  const text = typeof stored.text === 'string' ? stored.text : '';
  const covers = typeof stored.covers === 'number' && Number.isInteger(stored.covers) ? stored.covers : 0;
  return { text, covers };
}

export function writeSummary(db: HermesStateDb, sessionId: string, text: string, covers: number): void {
  db.setMeta(VOICE_META_KEYS.summary(sessionId), JSON.stringify({ text, covers }));
}

function cleanChatCall(value: unknown): ChatCall | null {
  if (!isRecord(value) || typeof value.engine !== 'string' || !ENGINES.has(value.engine)) return null;
  if (!Array.isArray(value.turns)) return null;
  const turns: ChatCallTurn[] = [];
  for (const turn of value.turns) {
    // Turn i is index i: one unreadable turn ends the readable run, so indices never shift.
    if (!isRecord(turn) || (turn.role !== 'user' && turn.role !== 'assistant') || typeof turn.text !== 'string') break;
    turns.push({ role: turn.role, text: turn.text, ...(typeof turn.at === 'number' ? { at: turn.at } : {}) });
  }
  return { engine: value.engine as VoiceEngine, turns };
}

export function readChatCalls(db: HermesStateDb, chatId: string): Map<string, ChatCall> {
  const calls = new Map<string, ChatCall>();
  for (const [callId, value] of readMap(db, VOICE_META_KEYS.chatCalls(chatId))) {
    const call = cleanChatCall(value);
    if (call) calls.set(callId, call);
  }
  return calls;
}

/**
 * Stores `call` as the chat's newest, then drops its oldest calls past 50, and while the record is
 * over META_BOUNDS.chatCallsMaxChars (never the call being written).
 */
export function writeChatCall(db: HermesStateDb, chatId: string, callId: string, call: ChatCall): void {
  const calls = readChatCalls(db, chatId);
  putNewest(calls, callId, call, META_BOUNDS.chatCalls);
  let json = JSON.stringify(Object.fromEntries(calls));
  for (const oldest of calls.keys()) {
    if (json.length <= META_BOUNDS.chatCallsMaxChars || oldest === callId) break;
    calls.delete(oldest);
    json = JSON.stringify(Object.fromEntries(calls));
  }
  db.setMeta(VOICE_META_KEYS.chatCalls(chatId), json);
}

export function dropChatCalls(db: HermesStateDb, chatId: string): void {
  db.deleteMeta(VOICE_META_KEYS.chatCalls(chatId));
}
