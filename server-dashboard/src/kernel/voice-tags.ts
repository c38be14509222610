import type { z } from 'zod';
import type { voiceEngine } from '@conduit/contracts/dashboard/voice-sessions';
import { voiceSummaryKey } from './hermes-chats.js';
import { MissingStoreError, STORE_CALL_BOUNDS, StoreCalls, VoiceTimedOut } from './hermes-state-calls.js';
import { UnsupportedStoreError } from './hermes-state-writer.js';
import type { Timers } from './timers.js';

/**
 * Conduit's labels for a profile's voice chats (`conduit.voice.tags` in Hermes' `state_meta`, which the
 * agent never reads): a saved voice call, a classic voice chat, or a voice job. Conduit lists a
 * profile's Voice Jobs from the `job` labels (`GET /voice/tags`). Two features write them, so the labels
 * live here: the voice transcripts routes (features/voice-sessions: `POST /voice/tags`, a save's
 * `call` label) and the Watch's jobs, each filed under the Voice Jobs of the profile it runs on, as a
 * job started from the phone is (the seed, Apple Watch calls: Jobs).
 *
 * The map is `{sid: {kind, engine?, parent_id?, parent_title?}}`, oldest first as Python's dicts keep
 * it, at most 2,000 labels; the reference's keys, so a store the Python plugin wrote reads the same here.
 */

/** The voice modes a saved call names. */
export type VoiceEngine = z.output<typeof voiceEngine>;

export interface VoiceTag {
  kind: 'call' | 'classic' | 'job';
  engine?: VoiceEngine;
  parent_id?: string;
  parent_title?: string;
}

/** The `state_meta` keys a label and a dropped session's voice records live under. */
export const VOICE_TAG_KEYS = {
  tags: 'conduit.voice.tags',
  /** `{call_id: sid}`: which session each recent call created (features/voice-sessions writes it). */
  created: 'conduit.voice.created',
  /** `{call_id: lastIndex}` per saved session (features/voice-sessions writes it). */
  calls: (sessionId: string) => `conduit.voice.calls:${sessionId}`,
  summary: voiceSummaryKey,
} as const;

export const VOICE_TAG_BOUNDS = {
  /** Tags are Conduit's labels for the profile's voice chats; past this the oldest go. */
  tags: 2000,
  /**
   * Tags checked for a deleted session per write once over the cap: enough to keep up with deletes,
   * few enough that one request's work stays bounded (each is a row lookup).
   */
  tagPruneBatch: 50,
} as const;

/** The store methods the labels use (kernel/hermes-state-writer.ts `HermesStateDb`). */
export interface VoiceMetaStore {
  getMeta(key: string): string | null;
  setMeta(key: string, value: string): void;
  deleteMeta(key: string): void;
  getSession(id: string): unknown;
}

const ENGINES = new Set(['gemini-live', 'gpt-live', 'grok-live', 'classic']);

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A stored map, or empty when missing or unreadable (it starts over rather than failing every save). */
export function readMetaMap(db: VoiceMetaStore, key: string): Map<string, unknown> {
  const raw = db.getMeta(key);
  if (!raw) return new Map();
  try {
    const parsed: unknown = JSON.parse(raw);
    return isRecord(parsed) ? new Map(Object.entries(parsed)) : new Map();
  } catch {
    return new Map();
  }
}

export function writeMetaMap(db: VoiceMetaStore, key: string, map: ReadonlyMap<string, unknown>): void {
  db.setMeta(key, JSON.stringify(Object.fromEntries(map)));
}

export function isVoiceEngine(value: unknown): value is VoiceEngine {
  return typeof value === 'string' && ENGINES.has(value);
}

function cleanTag(value: unknown): VoiceTag | null {
  if (!isRecord(value)) return null;
  const { kind, engine, parent_id: parentId, parent_title: parentTitle } = value;
  if (kind !== 'call' && kind !== 'classic' && kind !== 'job') return null;
  return {
    kind,
    ...(isVoiceEngine(engine) ? { engine } : {}),
    ...(typeof parentId === 'string' ? { parent_id: parentId } : {}),
    ...(typeof parentTitle === 'string' ? { parent_title: parentTitle } : {}),
  };
}

export function readTags(db: VoiceMetaStore): Map<string, VoiceTag> {
  const tags = new Map<string, VoiceTag>();
  for (const [sessionId, value] of readMetaMap(db, VOICE_TAG_KEYS.tags)) {
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
export function setTag(db: VoiceMetaStore, sessionId: string, tag: VoiceTag): void {
  const tags = readTags(db);
  tags.delete(sessionId);
  tags.set(sessionId, tag);
  if (tags.size > VOICE_TAG_BOUNDS.tags) {
    const oldest = [...tags.keys()].filter((id) => id !== sessionId).slice(0, VOICE_TAG_BOUNDS.tagPruneBatch);
    for (const id of oldest) {
      if (db.getSession(id)) continue;
      tags.delete(id);
      dropVoiceMeta(db, id);
    }
    for (const id of tags.keys()) {
      if (tags.size <= VOICE_TAG_BOUNDS.tags) break;
      if (id !== sessionId) tags.delete(id);
    }
  }
  writeMetaMap(db, VOICE_TAG_KEYS.tags, tags);
}

/** Which session each recent call created, so a create whose answer was lost continues that row. */
export function readCreated(db: VoiceMetaStore): Map<string, string> {
  const created = new Map<string, string>();
  for (const [callId, sessionId] of readMetaMap(db, VOICE_TAG_KEYS.created)) {
    if (typeof sessionId === 'string') created.set(callId, sessionId);
  }
  return created;
}

/** Clears a gone row's call record, summary and create record. */
export function dropVoiceMeta(db: VoiceMetaStore, sessionId: string): void {
  db.deleteMeta(VOICE_TAG_KEYS.calls(sessionId));
  db.deleteMeta(VOICE_TAG_KEYS.summary(sessionId));
  const created = readCreated(db);
  const kept = new Map([...created].filter(([, id]) => id !== sessionId));
  if (kept.size !== created.size) writeMetaMap(db, VOICE_TAG_KEYS.created, kept);
}

// -----------------------------------------------------------------------------------------------------
// The port a feature files its jobs through

/**
 * How filing a job went: `filed`, or why not. `saved_call`: the id is a saved voice call, whose label
 * never changes; `no_store`: Hermes has not made the profile's state.db yet (this service never
 * creates it); `unsupported`: a store without the tables a label needs; `timed_out`: other writers held
 * it past the budget (the write may still land).
 */
export type VoiceJobFiled = 'filed' | 'saved_call' | 'no_store' | 'unsupported' | 'timed_out';

/** Files a chat under a profile's Voice Jobs in Conduit. */
export interface VoiceJobFiling {
  /** Labels `sessionId` a voice job in the store of the profile at `home`; never throws for the store's state. */
  fileJob(home: string, sessionId: string): Promise<VoiceJobFiled>;
}

/** The label a job gets: Conduit's `POST /voice/tags {kind: "job"}`, with no parent (no saved call started it). */
export const VOICE_JOB_TAG: VoiceTag = { kind: 'job' };

/**
 * Voice Jobs written straight into the profile's state.db, in one `BEGIN IMMEDIATE` transaction with
 * Hermes' own lock retry and the voice routes' 20 s budget (kernel/hermes-state-calls.ts). Labels are
 * read and rewritten inside the transaction, so a voice route writing the same map meanwhile (its own
 * writer, another connection) is serialized by SQLite, never lost.
 */
export class StateDbVoiceJobs implements VoiceJobFiling {
  private readonly store: StoreCalls;

  constructor(timers: Timers, random?: () => number) {
    this.store = new StoreCalls(timers, STORE_CALL_BOUNDS, random);
  }

  async fileJob(home: string, sessionId: string): Promise<VoiceJobFiled> {
    try {
      return await this.store.write(home, ['meta', 'sessions'], (db) => {
        // As `POST /voice/tags`: a saved call's own label never changes.
        if (readTags(db).get(sessionId)?.kind === 'call') return 'saved_call';
        setTag(db, sessionId, VOICE_JOB_TAG);
        return 'filed';
      });
    } catch (error) {
      if (error instanceof MissingStoreError) return 'no_store';
      if (error instanceof UnsupportedStoreError) return 'unsupported';
      if (error instanceof VoiceTimedOut) return 'timed_out';
      throw error;
    }
  }
}
