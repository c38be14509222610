import { chmodSync, closeSync, existsSync, openSync, rmSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { newHostKeyPair, type HostKeyPair } from './sealing.js';

/**
 * A phone-data feature's per-profile store: `<profile home>/conduit-<feature>.sqlite3`, mode 0600, WAL.
 * The core's tables (the host key pair, devices, seen batch ids, the reads log) sit beside the
 * feature's own, whose rows all carry `device_id` so a device's data can be dropped as one.
 *
 * A store is opened per request and closed after: better-sqlite3 is synchronous, so a request's work
 * never interleaves with another's, and a wipe of everything can delete the file without a handle
 * left open on it.
 */

const CORE_SCHEMA = `
CREATE TABLE IF NOT EXISTS host_key (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  secret BLOB NOT NULL,
  public BLOB NOT NULL,
  created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS devices (
  device_id TEXT PRIMARY KEY,
  device_key BLOB NOT NULL,
  kid TEXT NOT NULL,
  registered_at REAL NOT NULL,
  last_batch_at REAL
);
CREATE TABLE IF NOT EXISTS batches (
  device_id TEXT NOT NULL,
  batch_id TEXT NOT NULL,
  received_at REAL NOT NULL,
  PRIMARY KEY (device_id, batch_id)
);
CREATE INDEX IF NOT EXISTS batches_by_arrival ON batches (device_id, received_at);
CREATE TABLE IF NOT EXISTS reads (
  id INTEGER PRIMARY KEY,
  at REAL NOT NULL,
  device_id TEXT,
  action TEXT NOT NULL,
  via TEXT NOT NULL
);
`;

export interface StoreShape {
  /** `health` → `conduit-health.sqlite3`. */
  feature: string;
  /** CREATE TABLE IF NOT EXISTS statements of the feature's own tables. */
  schema: string;
  /** The feature's tables, each with a `device_id` column: what a re-key or a wipe drops. */
  deviceTables: readonly string[];
  /** Batch ids remembered per device against replays (default SEEN_BATCHES_KEPT). */
  seenBatchesKept?: number;
}

/**
 * Batch ids remembered per device, newest first: a phone sends a batch every few minutes at most, so
 * this spans months. An older id is forgotten, so the store does not grow without bound; a replay of a
 * batch that old (its sealed bytes captured on the way) can only bring back what that phone once sent.
 */
export const SEEN_BATCHES_KEPT = 20_000;

export interface DeviceRow {
  device_id: string;
  device_key: Buffer;
  kid: string;
  registered_at: number;
  last_batch_at: number | null;
}

export interface ReadEntry {
  at: number;
  deviceId: string | null;
  action: string;
  /** Who read: `tool`, or a voice mode (`Gemini Live call`). */
  via: string;
}

export function storeFile(home: string, feature: string): string {
  return path.join(home, `conduit-${feature}.sqlite3`);
}

export class PhoneDataStore {
  private constructor(
    readonly db: Database.Database,
    private readonly shape: StoreShape,
  ) {}

  /** Opens (creating it 0600 when asked) the profile's store; null when it does not exist and create is false. */
  static open(home: string, shape: StoreShape, create: boolean): PhoneDataStore | null {
    const file = storeFile(home, shape.feature);
    if (!existsSync(file)) {
      if (!create) return null;
      // Made 0600 before SQLite opens it; SQLite gives the -wal and -shm files the same mode.
      closeSync(openSync(file, 'a', 0o600));
    }
    chmodSync(file, 0o600);
    const db = new Database(file);
    try {
      db.pragma('journal_mode = WAL');
      db.pragma('busy_timeout = 5000');
      // Deleted rows are overwritten with zeros, not just unlinked from the b-tree.
      db.pragma('secure_delete = ON');
      db.exec(CORE_SCHEMA + shape.schema);
    } catch (error) {
      db.close();
      throw error;
    }
    return new PhoneDataStore(db, shape);
  }

  close(): void {
    this.db.close();
  }

  /** The profile's key pair for this feature, made on first use. */
  hostKey(nowS: number): HostKeyPair {
    const row = this.db.prepare('SELECT secret, public FROM host_key WHERE id = 1').get() as
      { secret: Buffer; public: Buffer } | undefined;
    if (row) return { secret: new Uint8Array(row.secret), public: new Uint8Array(row.public) };
    const pair = newHostKeyPair();
    this.db
      .prepare('INSERT INTO host_key (id, secret, public, created_at) VALUES (1, ?, ?, ?)')
      .run(Buffer.from(pair.secret), Buffer.from(pair.public), nowS);
    return pair;
  }

  device(deviceId: string): DeviceRow | undefined {
    return this.db.prepare('SELECT * FROM devices WHERE device_id = ?').get(deviceId) as DeviceRow | undefined;
  }

  devices(): DeviceRow[] {
    return this.db.prepare('SELECT * FROM devices ORDER BY registered_at, device_id').all() as DeviceRow[];
  }

  /** Registers a new device, or a new key for a known one (which drops all it sent before). */
  putDevice(deviceId: string, deviceKey: Uint8Array, kid: string, nowS: number): void {
    this.db.transaction(() => {
      this.dropDeviceData(deviceId);
      this.db
        .prepare(
          `INSERT INTO devices (device_id, device_key, kid, registered_at, last_batch_at) VALUES (?, ?, ?, ?, NULL)
           ON CONFLICT (device_id) DO UPDATE SET device_key = excluded.device_key, kid = excluded.kid,
             registered_at = excluded.registered_at, last_batch_at = NULL`,
        )
        .run(deviceId, Buffer.from(deviceKey), kid, nowS);
    })();
    this.compact();
  }

  /** Whether the device key already sent this batch id (a replay). */
  seenBatch(deviceId: string, batchId: string): boolean {
    return (
      this.db.prepare('SELECT 1 FROM batches WHERE device_id = ? AND batch_id = ?').get(deviceId, batchId) !== undefined
    );
  }

  /**
   * Stores a batch with `write` in one transaction with its id, so a batch either lands whole and is
   * remembered, or leaves nothing (not even its id, so the phone can send it again).
   */
  acceptBatch<T>(deviceId: string, batchId: string, nowS: number, write: () => T): T {
    return this.db.transaction(() => {
      this.db
        .prepare('INSERT INTO batches (device_id, batch_id, received_at) VALUES (?, ?, ?)')
        .run(deviceId, batchId, nowS);
      // Only the newest ids are kept: the oldest beyond the bound are forgotten with this batch.
      this.db
        .prepare(
          `DELETE FROM batches WHERE device_id = ? AND rowid IN (
             SELECT rowid FROM batches WHERE device_id = ? ORDER BY received_at DESC, rowid DESC LIMIT -1 OFFSET ?)`,
        )
        .run(deviceId, deviceId, this.shape.seenBatchesKept ?? SEEN_BATCHES_KEPT);
      this.db.prepare('UPDATE devices SET last_batch_at = ? WHERE device_id = ?').run(nowS, deviceId);
      return write();
    })();
  }

  batchCount(deviceId: string): number {
    return (this.db.prepare('SELECT COUNT(*) AS n FROM batches WHERE device_id = ?').get(deviceId) as { n: number }).n;
  }

  /** Deletes a device's data, seen batch ids, reads and key, then vacuums so its pages are gone. */
  wipeDevice(deviceId: string): boolean {
    const known = this.db.transaction(() => {
      this.dropDeviceData(deviceId);
      this.db.prepare('DELETE FROM reads WHERE device_id = ?').run(deviceId);
      return this.db.prepare('DELETE FROM devices WHERE device_id = ?').run(deviceId).changes > 0;
    })();
    this.compact();
    return known;
  }

  logRead(entry: ReadEntry): void {
    this.db
      .prepare('INSERT INTO reads (at, device_id, action, via) VALUES (?, ?, ?, ?)')
      .run(entry.at, entry.deviceId, entry.action, entry.via);
  }

  /** The reads since `sinceS`, oldest first; older entries are deleted (the log's retention). */
  readsSince(sinceS: number): ReadEntry[] {
    this.db.prepare('DELETE FROM reads WHERE at < ?').run(sinceS);
    const rows = this.db.prepare('SELECT at, device_id, action, via FROM reads ORDER BY at, id').all() as {
      at: number;
      device_id: string | null;
      action: string;
      via: string;
    }[];
    return rows.map((row) => ({ at: row.at, deviceId: row.device_id, action: row.action, via: row.via }));
  }

  private dropDeviceData(deviceId: string): void {
    for (const table of this.shape.deviceTables) {
      this.db.prepare(`DELETE FROM ${table} WHERE device_id = ?`).run(deviceId);
    }
    this.db.prepare('DELETE FROM batches WHERE device_id = ?').run(deviceId);
  }

  /**
   * VACUUM rewrites the file without the freed pages, and the checkpoint empties the WAL, which would
   * otherwise still hold the deleted rows' old pages.
   */
  private compact(): void {
    this.db.exec('VACUUM');
    this.db.pragma('wal_checkpoint(TRUNCATE)');
  }
}

/** Deletes the whole store (the file and its WAL): nothing of it is left to recover. */
export function removeStore(home: string, feature: string): boolean {
  const file = storeFile(home, feature);
  const existed = existsSync(file);
  for (const suffix of ['', '-wal', '-shm', '-journal']) rmSync(file + suffix, { force: true });
  return existed;
}
