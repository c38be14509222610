import { randomBytes } from 'node:crypto';
import {
  PHONE_LIMITS,
  phoneChange,
  type PhoneChange,
  type PhoneChangeAction,
  type PhoneChangeKind,
  type PhoneChangeOutcome,
  type phoneChangeResult,
} from '@conduit/contracts/dashboard/phone';
import type { z } from 'zod';
import type { PhoneDataStore } from '../../kernel/phone-data/store.js';

/**
 * The pending changes of a profile (the seed: "Writes are changes the phone applies"), rows of
 * `phone_changes` in its conduit-phone.sqlite3. Each is meant for one device; it waits (`pending`)
 * until that device reports an outcome through POST /phone/exchange or 7 days pass (`expired`), and
 * a finished change is kept 7 more days so Hermes can read how it went.
 */

export type PhoneChangeResult = z.output<typeof phoneChangeResult>;
export type ChangeState = 'pending' | PhoneChangeOutcome;

export interface StoredChange {
  id: string;
  deviceId: string;
  kind: PhoneChangeKind;
  ask: boolean;
  summary: string;
  change: PhoneChangeAction;
  createdAt: number;
  expiresAt: number;
  state: ChangeState;
  /** When the phone first received it in an exchange, or null. */
  deliveredAt: number | null;
  settledAt: number | null;
  itemId: string | null;
  note: string | null;
}

interface ChangeRow {
  id: string;
  device_id: string;
  kind: PhoneChangeKind;
  ask: number;
  summary: string;
  change: string;
  created_at: number;
  expires_at: number;
  state: ChangeState;
  delivered_at: number | null;
  settled_at: number | null;
  item_id: string | null;
  note: string | null;
}

const fromRow = (row: ChangeRow): StoredChange => ({
  id: row.id,
  deviceId: row.device_id,
  kind: row.kind,
  ask: row.ask === 1,
  summary: row.summary,
  change: JSON.parse(row.change) as PhoneChangeAction,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
  state: row.state,
  deliveredAt: row.delivered_at,
  settledAt: row.settled_at,
  itemId: row.item_id,
  note: row.note,
});

export function newChangeId(): string {
  return `chg_${randomBytes(8).toString('hex')}`;
}

/**
 * Marks pending changes past their 7 days `expired` and forgets finished ones settled more than 7 days
 * ago. Run before every read and write of the queue, so expiry needs no timer: a full pass, since a
 * clock step backwards can leave an expired change behind a newer one.
 */
export function expireChanges(store: PhoneDataStore, nowS: number): void {
  store.db
    .prepare(
      `UPDATE phone_changes SET state = 'expired', settled_at = expires_at WHERE state = 'pending' AND expires_at <= ?`,
    )
    .run(nowS);
  store.db
    .prepare(`DELETE FROM phone_changes WHERE state != 'pending' AND settled_at <= ?`)
    .run(nowS - PHONE_LIMITS.changeTtlS);
}

/** Changes waiting for any device of the profile. */
export function pendingCount(store: PhoneDataStore): number {
  return (store.db.prepare(`SELECT COUNT(*) AS n FROM phone_changes WHERE state = 'pending'`).get() as { n: number }).n;
}

/** Pending changes of `kinds` for one device (the alarm bound counts the alarms still being set). */
export function pendingOfKinds(store: PhoneDataStore, deviceId: string, kinds: readonly PhoneChangeKind[]): number {
  return (
    store.db
      .prepare(
        `SELECT COUNT(*) AS n FROM phone_changes WHERE device_id = ? AND state = 'pending'
           AND kind IN (SELECT value FROM json_each(?))`,
      )
      .get(deviceId, JSON.stringify(kinds)) as { n: number }
  ).n;
}

export interface NewChange {
  deviceId: string;
  ask: boolean;
  summary: string;
  change: PhoneChangeAction;
}

/** Keeps a change as pending for its device; the caller has checked the profile's bound. */
export function queueChange(store: PhoneDataStore, input: NewChange, nowS: number): StoredChange {
  const id = newChangeId();
  const createdAt = Math.floor(nowS);
  const expiresAt = createdAt + PHONE_LIMITS.changeTtlS;
  store.db
    .prepare(
      `INSERT INTO phone_changes (id, device_id, kind, ask, summary, change, created_at, expires_at, state)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending')`,
    )
    .run(
      id,
      input.deviceId,
      input.change.kind,
      input.ask ? 1 : 0,
      input.summary,
      JSON.stringify(input.change),
      createdAt,
      expiresAt,
    );
  return {
    id,
    deviceId: input.deviceId,
    kind: input.change.kind,
    ask: input.ask,
    summary: input.summary,
    change: input.change,
    createdAt,
    expiresAt,
    state: 'pending',
    deliveredAt: null,
    settledAt: null,
    itemId: null,
    note: null,
  };
}

/** The changes of the last 7 days, newest first, or the one named `id` (any device's). */
export function listChanges(store: PhoneDataStore, id?: string): StoredChange[] {
  const rows = (
    id === undefined
      ? store.db.prepare('SELECT * FROM phone_changes ORDER BY created_at DESC, rowid DESC').all()
      : store.db.prepare('SELECT * FROM phone_changes WHERE id = ?').all(id)
  ) as ChangeRow[];
  return rows.map(fromRow);
}

/**
 * Takes a device's outcomes: the first outcome of a pending change of that device wins; outcomes for
 * unknown, finished or another device's changes are ignored (a retried exchange repeats its results).
 */
export function settleChanges(
  store: PhoneDataStore,
  deviceId: string,
  results: readonly PhoneChangeResult[],
  nowS: number,
): number {
  const settle = store.db.prepare(
    `UPDATE phone_changes SET state = ?, settled_at = ?, item_id = ?, note = ?
     WHERE id = ? AND device_id = ? AND state = 'pending'`,
  );
  let settled = 0;
  for (const result of results) {
    settled += settle.run(
      result.outcome,
      nowS,
      result.item_id ?? null,
      result.note ?? null,
      result.id,
      deviceId,
    ).changes;
  }
  return settled;
}

/** A stored change as the phone receives it (and as the contract's schema holds it). */
export function changeForPhone(change: StoredChange): PhoneChange {
  return phoneChange.parse({
    id: change.id,
    ask: change.ask,
    summary: change.summary,
    created_at: change.createdAt,
    expires_at: change.expiresAt,
    change: change.change,
  });
}

/**
 * The device's pending changes, oldest first, as many as fit in `maxBytes` of JSON (the answer's
 * bound), marked delivered; `more` when some did not fit. One change always fits: a change is a few
 * KiB at most (2,000-character notes), far below the bound.
 */
export function changesForDevice(
  store: PhoneDataStore,
  deviceId: string,
  nowS: number,
  maxBytes: number,
): { changes: PhoneChange[]; more: boolean } {
  const rows = store.db
    .prepare(`SELECT * FROM phone_changes WHERE device_id = ? AND state = 'pending' ORDER BY created_at, rowid`)
    .all(deviceId) as ChangeRow[];
  const changes: PhoneChange[] = [];
  let bytes = 0;
  const delivered = store.db.prepare('UPDATE phone_changes SET delivered_at = ? WHERE id = ? AND delivered_at IS NULL');
  for (const row of rows) {
    const out = changeForPhone(fromRow(row));
    const size = Buffer.byteLength(JSON.stringify(out)) + 1;
    if (changes.length > 0 && bytes + size > maxBytes) return { changes, more: true };
    bytes += size;
    changes.push(out);
    delivered.run(nowS, row.id);
  }
  return { changes, more: false };
}
