/**
 * The Voice Jobs port a Watch job is filed through (kernel/voice-tags.ts), against real Hermes
 * `state.db` stores (test/fixtures/hermes-state-db.ts): the `job` label lands in `conduit.voice.tags`
 * beside the labels the voice transcripts routes wrote, a saved call's label never changes, a profile
 * without a store (or with one too old) is told apart, another writer's lock is waited out on the
 * host's timers within the 20 s budget, and past the 2,000-label cap gone sessions' labels and records go.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualTimers } from '../../src/kernel/timers.js';
import { StateDbVoiceJobs, VOICE_TAG_BOUNDS } from '../../src/kernel/voice-tags.js';
import { createHermesStateDb, seedHermesSessions } from '../fixtures/hermes-state-db.js';

let home: string;
let timers: ManualTimers;
/** Jitter pinned to the top of Hermes' 20–150 ms range, so a retry's pause is known. */
const PAUSE_MS = 150;

const dbFile = () => path.join(home, 'state.db');

function meta(key: string): unknown {
  const db = new Database(dbFile(), { fileMustExist: true, readonly: true });
  try {
    const row = db.prepare('SELECT value FROM state_meta WHERE key = ?').get(key) as { value: string } | undefined;
    return row ? (JSON.parse(row.value) as unknown) : undefined;
  } finally {
    db.close();
  }
}

function setMeta(key: string, value: unknown): void {
  const db = new Database(dbFile(), { fileMustExist: true });
  try {
    db.prepare('INSERT OR REPLACE INTO state_meta (key, value) VALUES (?, ?)').run(key, JSON.stringify(value));
  } finally {
    db.close();
  }
}

beforeEach(() => {
  home = mkdtempSync(path.join(os.tmpdir(), 'conduit-voice-jobs-'));
  timers = new ManualTimers();
});

afterEach(() => {
  rmSync(home, { recursive: true, force: true });
});

describe('filing a Watch job under Voice Jobs', () => {
  it('adds the job label as the newest, keeping the labels already there', async () => {
    createHermesStateDb(dbFile());
    setMeta('conduit.voice.tags', {
      '20260101_080000_aaaaaaaaaaaa': { kind: 'call', engine: 'gemini-live' },
      chat_typed: { kind: 'classic' },
    });
    const filing = new StateDbVoiceJobs(timers, () => 1);
    expect(await filing.fileJob(home, '20260102_090000_bbbbbbbbbbbb')).toBe('filed');
    expect(Object.entries(meta('conduit.voice.tags') as object)).toEqual([
      ['20260101_080000_aaaaaaaaaaaa', { kind: 'call', engine: 'gemini-live' }],
      ['chat_typed', { kind: 'classic' }],
      ['20260102_090000_bbbbbbbbbbbb', { kind: 'job' }],
    ]);
    // Filing again (a retried start) keeps one label.
    expect(await filing.fileJob(home, '20260102_090000_bbbbbbbbbbbb')).toBe('filed');
    expect(Object.keys(meta('conduit.voice.tags') as object)).toHaveLength(3);
  });

  it('never changes a saved voice call’s label', async () => {
    createHermesStateDb(dbFile());
    setMeta('conduit.voice.tags', { saved: { kind: 'call', engine: 'grok-live' } });
    expect(await new StateDbVoiceJobs(timers).fileJob(home, 'saved')).toBe('saved_call');
    expect(meta('conduit.voice.tags')).toEqual({ saved: { kind: 'call', engine: 'grok-live' } });
  });

  it('tells a profile without a store (never made here) from a store too old for labels', async () => {
    const filing = new StateDbVoiceJobs(timers);
    expect(await filing.fileJob(home, 'job_1')).toBe('no_store');
    expect(existsSync(dbFile())).toBe(false);
    createHermesStateDb(dbFile(), { without: ['state_meta'] });
    expect(await filing.fileJob(home, 'job_1')).toBe('unsupported');
  });

  it('waits out another writer’s lock on the host’s timers, and gives up at the 20 s budget writing nothing', async () => {
    createHermesStateDb(dbFile());
    const filing = new StateDbVoiceJobs(timers, () => 1);
    // Hermes' gateway, say, mid-write.
    const writer = new Database(dbFile());
    try {
      writer.exec('BEGIN IMMEDIATE');
      const waiting = filing.fileJob(home, 'job_late');
      // The budget's deadline and the first retry's pause.
      await timers.untilWaiting(2);
      writer.exec('COMMIT');
      timers.advance(PAUSE_MS);
      expect(await waiting).toBe('filed');
      expect(meta('conduit.voice.tags')).toEqual({ job_late: { kind: 'job' } });

      writer.exec('BEGIN IMMEDIATE');
      const abandoned = filing.fileJob(home, 'job_never');
      await timers.untilWaiting(2);
      timers.advance(20_000);
      expect(await abandoned).toBe('timed_out');
      writer.exec('COMMIT');
      // No attempt starts once the budget ran out.
      timers.advance(PAUSE_MS);
      await Promise.resolve();
      expect(meta('conduit.voice.tags')).toEqual({ job_late: { kind: 'job' } });
    } finally {
      if (writer.inTransaction) writer.exec('ROLLBACK');
      writer.close();
    }
  });

  it('past 2,000 labels drops the oldest whose sessions are gone, with their records', async () => {
    createHermesStateDb(dbFile());
    const tags: Record<string, unknown> = {};
    for (let i = 0; i < VOICE_TAG_BOUNDS.tags; i += 1) tags[`s_${i}`] = { kind: 'job' };
    setMeta('conduit.voice.tags', tags);
    // s_0 is a chat Hermes still has; s_1 is gone, with a saved call's records left behind.
    seedHermesSessions(dbFile(), [{ id: 's_0' }]);
    setMeta('conduit.voice.calls:s_1', { call_a: 3 });
    setMeta('conduit.voice.summary:s_1', { text: 'old', covers: 2 });
    setMeta('conduit.voice.created', { call_a: 's_1', call_b: 's_0' });

    expect(await new StateDbVoiceJobs(timers).fileJob(home, 'job_new')).toBe('filed');
    const kept = Object.keys(meta('conduit.voice.tags') as object);
    // The 49 gone among the 50 oldest checked are dropped (enough to get under the cap); the chat
    // Hermes still has stays.
    expect(kept).toHaveLength(VOICE_TAG_BOUNDS.tags + 1 - 49);
    expect(kept[0]).toBe('s_0');
    expect(kept).not.toContain('s_1');
    expect(kept).not.toContain('s_49');
    expect(kept).toContain('s_50');
    expect(kept.at(-1)).toBe('job_new');
    expect(meta('conduit.voice.calls:s_1')).toBeUndefined();
    expect(meta('conduit.voice.summary:s_1')).toBeUndefined();
    expect(meta('conduit.voice.created')).toEqual({ call_b: 's_0' });
  });

  it('past 2,000 labels with every checked session still in Hermes, drops the oldest label only', async () => {
    createHermesStateDb(dbFile());
    const tags: Record<string, unknown> = {};
    for (let i = 0; i < VOICE_TAG_BOUNDS.tags; i += 1) tags[`s_${i}`] = { kind: 'job' };
    setMeta('conduit.voice.tags', tags);
    seedHermesSessions(
      dbFile(),
      Array.from({ length: VOICE_TAG_BOUNDS.tagPruneBatch }, (_, i) => ({ id: `s_${i}` })),
    );
    expect(await new StateDbVoiceJobs(timers).fileJob(home, 'job_new')).toBe('filed');
    const kept = Object.keys(meta('conduit.voice.tags') as object);
    expect(kept).toHaveLength(VOICE_TAG_BOUNDS.tags);
    expect(kept[0]).toBe('s_1');
    expect(kept.at(-1)).toBe('job_new');
  });
});
