import { randomBytes } from 'node:crypto';
import { lstat, mkdir, readdir, rm, statfs } from 'node:fs/promises';
import path from 'node:path';
import { DetailError } from '../../kernel/detail-errors.js';
import { folderInsideHome } from './room-paths.js';
import { writePrivateFile } from './private-files.js';

/** Where uploads live under a Hermes home (the seed: `<hermes home>/conduit/room-files/<id>/`). */
export const ROOM_FILES_FOLDER = ['conduit', 'room-files'] as const;

/** An upload's folder name: ours alone, so the sweep never deletes what it did not make. */
const UPLOAD_ID = /^[0-9a-f]{32}$/;

export interface RoomFileBounds {
  /** Uploads older than this are deleted (the seed: a month). */
  maxAgeMs: number;
  /** Past this many bytes together, the oldest uploads go first (the seed: 2 GB). */
  maxTotalBytes: number;
  /** Free space an upload must leave on the host's disk (the seed: 1 GB). */
  minFreeBytes: number;
}

export const ROOM_FILE_BOUNDS: RoomFileBounds = {
  maxAgeMs: 30 * 24 * 60 * 60 * 1000,
  maxTotalBytes: 2 * 1024 ** 3,
  minFreeBytes: 1024 ** 3,
};

/** Bytes free for this user on the file system holding `folder`. */
export async function freeBytesAt(folder: string): Promise<number> {
  const info = await statfs(folder);
  return info.bavail * info.bsize;
}

/**
 * Hermes' `format_reference_value`: a path with whitespace, brackets or quotes is quoted so its
 * `@file:` parser reads it back whole. Stored names never hold a backtick, so that quote always fits.
 */
export function fileReference(filePath: string): string {
  if (!/[\s()[\]{}<>"'`]/.test(filePath)) return `@file:${filePath}`;
  for (const quote of ['`', '"', "'"]) if (!filePath.includes(quote)) return `@file:${quote}${filePath}${quote}`;
  return `@file:${filePath}`;
}

/**
 * Stores one upload in a new folder of its own (0700), the file 0600 through a temporary file and a
 * rename; returns its path. Nothing is written when the room-files folder leads outside the home.
 */
export async function storeRoomFile(
  home: string,
  name: string,
  bytes: Buffer,
  bounds: RoomFileBounds,
  freeBytes: (folder: string) => Promise<number>,
): Promise<string> {
  if ((await freeBytes(home)) - bytes.length < bounds.minFreeBytes) {
    throw new DetailError(507, 'This host does not have enough free space for the file');
  }
  const root = await folderInsideHome(home, ROOM_FILES_FOLDER, true);
  if (root === null) throw new Error('room-files folder was not made');
  let folder = '';
  for (let attempt = 0; ; attempt += 1) {
    folder = path.join(root, randomBytes(16).toString('hex'));
    try {
      await mkdir(folder, { mode: 0o700 });
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || attempt >= 3) throw error;
    }
  }
  const file = path.join(folder, name);
  try {
    await writePrivateFile(file, bytes);
  } catch (error) {
    await rm(folder, { recursive: true, force: true });
    throw error;
  }
  return file;
}

interface Upload {
  folder: string;
  at: number;
  bytes: number;
}

async function uploadsIn(root: string): Promise<Upload[]> {
  const uploads: Upload[] = [];
  for (const entry of await readdir(root, { withFileTypes: true })) {
    // A symlink or a folder this service did not name is never swept.
    if (!entry.isDirectory() || !UPLOAD_ID.test(entry.name)) continue;
    const folder = path.join(root, entry.name);
    try {
      const info = await lstat(folder);
      let bytes = 0;
      for (const file of await readdir(folder, { withFileTypes: true })) {
        if (file.isFile()) bytes += (await lstat(path.join(folder, file.name))).size;
      }
      uploads.push({ folder, at: info.mtimeMs, bytes });
    } catch {
      // Removed meanwhile (another sweep, the user): nothing to count.
    }
  }
  return uploads;
}

/**
 * One sweep of a home's uploads: those older than a month go, then the oldest until the rest fit in
 * 2 GB together. Returns how many were deleted.
 */
export async function sweepRoomFiles(home: string, nowMs: number, bounds: RoomFileBounds): Promise<number> {
  // Read only: a home without uploads (or whose folder leads elsewhere) has nothing to sweep.
  const root = await folderInsideHome(home, ROOM_FILES_FOLDER, false).catch(() => null);
  if (root === null) return 0;
  const uploads = (await uploadsIn(root)).sort((a, b) => a.at - b.at);
  let total = uploads.reduce((sum, upload) => sum + upload.bytes, 0);
  let removed = 0;
  for (const upload of uploads) {
    if (nowMs - upload.at <= bounds.maxAgeMs && total <= bounds.maxTotalBytes) continue;
    await rm(upload.folder, { recursive: true, force: true });
    total -= upload.bytes;
    removed += 1;
  }
  return removed;
}
