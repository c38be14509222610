import { createHash } from 'node:crypto';
import { readdir, unlink } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { ROOM_IMAGES_MAX_ROOMS } from '@conduit/contracts/dashboard/rooms';
import { folderInsideHome } from './room-paths.js';
import { readPrivateFile, writePrivateFile } from './private-files.js';

/** Where pictures live under a Hermes home (the seed: `<hermes home>/conduit/room-images/`). */
export const ROOM_IMAGES_FOLDER = ['conduit', 'room-images'] as const;

/** The small record kept beside each picture, so listing revisions never reads picture bytes. */
const roomImageRecord = z.object({
  room_id: z.string(),
  rev: z.string(),
  mime: z.enum(['image/jpeg', 'image/png']),
  bytes: z.int(),
  /** When the picture was set, ms since the epoch: the oldest go first past 500 rooms. */
  updated_at: z.number(),
});
type RoomImageRecord = z.output<typeof roomImageRecord>;

/**
 * A room's files are named by a hash of its id, never the id itself: no id can spell a path, and ids
 * that differ only in case stay apart on case-insensitive disks (macOS).
 */
function fileKey(roomId: string): string {
  return createHash('sha256').update(roomId, 'utf8').digest('hex').slice(0, 32);
}

const RECORD_FILE = /^([0-9a-f]{32})\.json$/;

export interface RoomPicture {
  rev: string;
  mime: 'image/jpeg' | 'image/png';
  bytes: Buffer;
}

/**
 * One Hermes home's room pictures: `<key>.json` (the record) and `<key>.img` (the picture), both
 * 0600 and replaced atomically. The picture is written before its record and the record removed
 * before its picture, so a record never names a picture that is not there. Changes to one home are
 * serialized by the caller (RoomImagesStore).
 */
class RoomImagesFolder {
  constructor(
    private readonly home: string,
    private readonly maxRooms: number,
  ) {}

  private async folder(create: boolean): Promise<string | null> {
    return folderInsideHome(this.home, ROOM_IMAGES_FOLDER, create);
  }

  private async readRecord(folder: string, key: string): Promise<RoomImageRecord | null> {
    const bytes = await readPrivateFile(path.join(folder, `${key}.json`));
    if (!bytes) return null;
    try {
      const parsed = roomImageRecord.safeParse(JSON.parse(bytes.toString('utf8')));
      return parsed.success ? parsed.data : null;
    } catch {
      return null;
    }
  }

  private async records(folder: string): Promise<{ key: string; record: RoomImageRecord }[]> {
    const out: { key: string; record: RoomImageRecord }[] = [];
    for (const name of await readdir(folder)) {
      const key = RECORD_FILE.exec(name)?.[1];
      if (!key) continue;
      const record = await this.readRecord(folder, key);
      // A damaged record (or one a hash collision would give another room) lists nothing.
      if (record && fileKey(record.room_id) === key) out.push({ key, record });
    }
    return out;
  }

  async revisions(): Promise<Record<string, string>> {
    const folder = await this.folder(false);
    if (!folder) return {};
    const revisions: Record<string, string> = {};
    for (const { record } of await this.records(folder)) revisions[record.room_id] = record.rev;
    return revisions;
  }

  async get(roomId: string): Promise<RoomPicture | null> {
    const folder = await this.folder(false);
    if (!folder) return null;
    const key = fileKey(roomId);
    const record = await this.readRecord(folder, key);
    if (!record || record.room_id !== roomId) return null;
    const bytes = await readPrivateFile(path.join(folder, `${key}.img`));
    if (!bytes) return null;
    return { rev: record.rev, mime: record.mime, bytes };
  }

  async put(roomId: string, picture: Omit<RoomPicture, 'rev'>, nowMs: number): Promise<string> {
    const folder = await this.folder(true);
    if (!folder) throw new Error('room-images folder was not made');
    const key = fileKey(roomId);
    const rev = createHash('sha256').update(picture.bytes).digest('hex').slice(0, 16);
    await writePrivateFile(path.join(folder, `${key}.img`), picture.bytes);
    const record: RoomImageRecord = {
      room_id: roomId,
      rev,
      mime: picture.mime,
      bytes: picture.bytes.length,
      updated_at: nowMs,
    };
    await writePrivateFile(path.join(folder, `${key}.json`), Buffer.from(`${JSON.stringify(record)}\n`));
    await this.evict(folder, key);
    return rev;
  }

  /** Past the bound (500 rooms) the pictures set longest ago go; the one just set always stays. */
  private async evict(folder: string, kept: string): Promise<void> {
    const all = await this.records(folder);
    if (all.length <= this.maxRooms) return;
    const oldest = all
      .filter(({ key }) => key !== kept)
      .sort((a, b) => a.record.updated_at - b.record.updated_at)
      .slice(0, all.length - this.maxRooms);
    for (const { key } of oldest) await this.removeKey(folder, key);
  }

  private async removeKey(folder: string, key: string): Promise<boolean> {
    const removed = await unlink(path.join(folder, `${key}.json`)).then(
      () => true,
      (error: NodeJS.ErrnoException) => {
        if (error.code === 'ENOENT') return false;
        throw error;
      },
    );
    await unlink(path.join(folder, `${key}.img`)).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error;
    });
    return removed;
  }

  async remove(roomId: string): Promise<boolean> {
    const folder = await this.folder(false);
    if (!folder) return false;
    return this.removeKey(folder, fileKey(roomId));
  }
}

/** Room pictures of every Hermes home this service serves, with each home's changes in order. */
export class RoomImagesStore {
  private readonly chains = new Map<string, Promise<unknown>>();

  constructor(private readonly maxRooms: number = ROOM_IMAGES_MAX_ROOMS) {}

  private folder(home: string): RoomImagesFolder {
    return new RoomImagesFolder(home, this.maxRooms);
  }

  private serialized<T>(home: string, change: () => Promise<T>): Promise<T> {
    const previous = this.chains.get(home) ?? Promise.resolve();
    const next = previous.then(change, change);
    const settled = next.catch(() => undefined);
    this.chains.set(home, settled);
    void settled.then(() => {
      if (this.chains.get(home) === settled) this.chains.delete(home);
    });
    return next;
  }

  revisions(home: string): Promise<Record<string, string>> {
    return this.folder(home).revisions();
  }

  get(home: string, roomId: string): Promise<RoomPicture | null> {
    return this.folder(home).get(roomId);
  }

  put(home: string, roomId: string, picture: Omit<RoomPicture, 'rev'>, nowMs: number): Promise<string> {
    return this.serialized(home, () => this.folder(home).put(roomId, picture, nowMs));
  }

  remove(home: string, roomId: string): Promise<boolean> {
    return this.serialized(home, () => this.folder(home).remove(roomId));
  }
}
