import { VOICE_LIMITS } from '@conduit/contracts/dashboard/voice-sessions';
import type { HermesStateDb } from '../../kernel/hermes-state-writer.js';
import {
  VOICE_TAG_KEYS,
  isRecord,
  isVoiceEngine,
  readCreated,
  readMetaMap as readMap,
  writeMetaMap as writeMap,
} from '../../kernel/voice-tags.js';
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
 *
 * The labels (`conduit.voice.tags`) and the clearing of a gone row's records live in the kernel
 * (kernel/voice-tags.ts), since the Watch's jobs file themselves under Voice Jobs too.
 */

export const VOICE_META_KEYS = {
  tags: VOICE_TAG_KEYS.tags,
  created: VOICE_TAG_KEYS.created,
  calls: VOICE_TAG_KEYS.calls,
  /** Also read by the Watch's read_chat (kernel/hermes-chats.ts owns the key). */
  summary: VOICE_TAG_KEYS.summary,
  chatCalls: (chatId: string) => `conduit.voice.chat_calls:${chatId}`,
} as const;

export const META_BOUNDS = {
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

export interface ChatCallTurn {
  role: 'user' | 'assistant';
  text: string;
  at?: number;
}

export interface ChatCall {
  engine: VoiceEngine;
  turns: ChatCallTurn[];
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

export function rememberCreated(db: HermesStateDb, callId: string, sessionId: string): void {
  const created = readCreated(db);
  putNewest(created, callId, sessionId, META_BOUNDS.calls);
  writeMap(db, VOICE_META_KEYS.created, created);
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
  if (!isRecord(value) || !isVoiceEngine(value.engine)) return null;
  if (!Array.isArray(value.turns)) return null;
  const turns: ChatCallTurn[] = [];
  for (const turn of value.turns) {
    // Turn i is index i: one unreadable turn ends the readable run, so indices never shift.
    if (!isRecord(turn) || (turn.role !== 'user' && turn.role !== 'assistant') || typeof turn.text !== 'string') break;
    turns.push({ role: turn.role, text: turn.text, ...(typeof turn.at === 'number' ? { at: turn.at } : {}) });
  }
  return { engine: value.engine, turns };
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
