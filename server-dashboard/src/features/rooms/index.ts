import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { isProfileName } from '@conduit/contracts/dashboard/profile';
import {
  ROOM_FILE_MAX_BYTES,
  ROOM_IMAGE_MAX_BYTES,
  base64BodyLimit,
  deleteRoomImage,
  getRoomImage,
  getRoomImages,
  postRoomFile,
  putRoomImage,
} from '@conduit/contracts/dashboard/rooms';
import { bindRoute } from '@conduit/contracts/server';
import { answerWithDetail, DetailError, readJsonBody } from '../../kernel/detail-errors.js';
import type { HostFeature } from '../../kernel/feature.js';
import { profileForRoute } from '../../kernel/profile-files.js';
import { limiterKey, perMinute } from '../../kernel/rate-window.js';
import { systemTimers, type Timers } from '../../kernel/timers.js';
import {
  ROOM_FILE_BOUNDS,
  fileReference,
  freeBytesAt,
  storeRoomFile,
  sweepRoomFiles,
  type RoomFileBounds,
} from './room-files.js';
import { RoomImagesStore } from './room-images.js';
import { roomFileName, roomId } from './room-paths.js';
import { checkClaimedImage, decodeBase64, pictureFormat } from './upload-bytes.js';

const NO_STORE = { 'Cache-Control': 'no-store' };

/** The bounds of these features (the seed, room files and images; where it is silent, ours). */
const BOUNDS = {
  /** Uploads a minute per profile: a composer sends a handful at once, never a stream. */
  uploadsPerMinute: 30,
  /** Picture reads a minute per profile: a room list fetches one per room it has not cached. */
  pictureReadsPerMinute: 600,
  /** Picture changes (set or clear) a minute per profile. */
  pictureChangesPerMinute: 60,
  /** How often old uploads are swept (the seed: hourly). */
  sweepEveryMs: 60 * 60 * 1000,
  /**
   * The first sweep, soon after start rather than an hour in: a service restarted more often than
   * hourly (updates, a laptop's sleep) would otherwise never sweep.
   */
  firstSweepMs: 60 * 1000,
} as const;

function objectBody(raw: unknown): Record<string, unknown> {
  const body = readJsonBody(raw);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new DetailError(400, 'Request body must be a JSON object');
  }
  return body as Record<string, unknown>;
}

/** The Hermes homes whose uploads a sweep visits: the root home and each named profile's. */
async function profileHomes(hermesHome: string): Promise<string[]> {
  const homes = [hermesHome];
  const profiles = path.join(hermesHome, 'profiles');
  const entries = await readdir(profiles, { withFileTypes: true }).catch(() => []);
  for (const entry of entries) {
    if (entry.isDirectory() && isProfileName(entry.name)) homes.push(path.join(profiles, entry.name));
  }
  return homes;
}

export interface RoomFilesOptions {
  /** The largest file, decoded (default 50 MB, the seed's). */
  maxFileBytes?: number;
  bounds?: Partial<RoomFileBounds>;
  /** Free bytes on the disk holding a folder (default: statfs); a test stands in for a full disk. */
  freeBytes?: (folder: string) => Promise<number>;
  /** Told after each scheduled sweep, with the number of uploads deleted (tests wait on it). */
  onSweep?: (removed: number) => void;
  /**
   * The timers of the hourly sweep (default: real ones). Not the kernel's: those are the request
   * deadlines' timers, which other features' tests fire by hand, and a sweep pending among them would
   * be fired in a deadline's place.
   */
  sweepTimers?: Timers;
}

/**
 * Room files (`room-files`): files picked in a group chat room's composer, stored on this host for the
 * room's members (who run here) to read through the `@file:` reference the app puts above the message.
 */
export function createRoomFilesFeature(options: RoomFilesOptions = {}): HostFeature {
  const maxFileBytes = options.maxFileBytes ?? ROOM_FILE_MAX_BYTES;
  const bounds: RoomFileBounds = { ...ROOM_FILE_BOUNDS, ...options.bounds };
  const freeBytes = options.freeBytes ?? freeBytesAt;
  return {
    name: 'room-files',
    capabilities: [{ name: 'room-files', method: 'POST', path: postRoomFile.path }],
    register(scope, kernel) {
      const uploads = perMinute(BOUNDS.uploadsPerMinute, kernel.clock);
      answerWithDetail(scope, {
        bodyLimitBytes: base64BodyLimit(maxFileBytes),
        failure: (_request, type) => `Room file upload failed on the host (${type})`,
      });

      bindRoute(scope, postRoomFile, async ({ query, body: raw }) => {
        const profile = profileForRoute(kernel.hermesHome, query.profile);
        if (!uploads.tryTake(limiterKey(query.profile))) {
          throw new DetailError(429, 'Too many room file uploads; try again shortly');
        }
        const body = objectBody(raw);
        const name = roomFileName(body.name);
        const bytes = decodeBase64(body.data_base64, maxFileBytes, 'file');
        checkClaimedImage(name, bytes);
        const file = await storeRoomFile(profile.home, name, bytes, bounds, freeBytes);
        return { status: 200, body: { ok: true, path: file, ref_text: fileReference(file) }, headers: NO_STORE };
      });

      // A minute after start, then hourly; the sweep of one home failing never stops the others or the next.
      const sweepTimers = options.sweepTimers ?? systemTimers;
      let closed = false;
      let cancel = () => {};
      const schedule = (delayMs: number) => {
        cancel = sweepTimers.after(delayMs, () => {
          void (async () => {
            let removed = 0;
            for (const home of await profileHomes(kernel.hermesHome)) {
              try {
                removed += await sweepRoomFiles(home, kernel.clock.now(), bounds);
              } catch (error) {
                kernel.log.warn('room files sweep failed', { error: error instanceof Error ? error.name : 'error' });
              }
            }
            if (removed > 0) kernel.log.info('room files swept', { removed });
            options.onSweep?.(removed);
          })().finally(() => {
            if (!closed) schedule(BOUNDS.sweepEveryMs);
          });
        });
      };
      schedule(BOUNDS.firstSweepMs);
      scope.addHook('onClose', async () => {
        closed = true;
        cancel();
      });
    },
  };
}

/**
 * Room images (`room-images`): each group chat room's custom picture (Hermes' gateway-hosted rooms
 * carry none), with revisions so the app fetches only pictures it has not cached.
 */
export function createRoomImagesFeature(options: { maxRooms?: number } = {}): HostFeature {
  return {
    name: 'room-images',
    capabilities: [{ name: 'room-images', method: 'GET', path: getRoomImages.path }],
    register(scope, kernel) {
      const reads = perMinute(BOUNDS.pictureReadsPerMinute, kernel.clock);
      const changes = perMinute(BOUNDS.pictureChangesPerMinute, kernel.clock);
      const store = new RoomImagesStore(options.maxRooms);
      answerWithDetail(scope, {
        bodyLimitBytes: base64BodyLimit(ROOM_IMAGE_MAX_BYTES),
        failure: (request, type) => `Room image ${request.method} failed on the host (${type})`,
      });
      const take = (limit: typeof reads, profile: string | undefined) => {
        if (!limit.tryTake(limiterKey(profile)))
          throw new DetailError(429, 'Too many room image requests; try again shortly');
      };

      bindRoute(scope, getRoomImages, async ({ query }) => {
        const profile = profileForRoute(kernel.hermesHome, query.profile);
        take(reads, query.profile);
        return { status: 200, body: { ok: true, revisions: await store.revisions(profile.home) }, headers: NO_STORE };
      });

      bindRoute(scope, getRoomImage, async ({ query, params }) => {
        const profile = profileForRoute(kernel.hermesHome, query.profile);
        const room = roomId(params.room_id);
        take(reads, query.profile);
        const picture = await store.get(profile.home, room);
        if (!picture) throw new DetailError(404, 'This room has no picture');
        return {
          status: 200,
          body: { ok: true, rev: picture.rev, mime: picture.mime, data_base64: picture.bytes.toString('base64') },
          headers: NO_STORE,
        };
      });

      bindRoute(scope, putRoomImage, async ({ query, params, body: raw }) => {
        const profile = profileForRoute(kernel.hermesHome, query.profile);
        const room = roomId(params.room_id);
        take(changes, query.profile);
        const bytes = decodeBase64(objectBody(raw).data_base64, ROOM_IMAGE_MAX_BYTES, 'picture');
        const { mime } = pictureFormat(bytes);
        const rev = await store.put(profile.home, room, { mime, bytes }, kernel.clock.now());
        return { status: 200, body: { ok: true, rev, mime }, headers: NO_STORE };
      });

      bindRoute(scope, deleteRoomImage, async ({ query, params }) => {
        const profile = profileForRoute(kernel.hermesHome, query.profile);
        const room = roomId(params.room_id);
        take(changes, query.profile);
        return { status: 200, body: { ok: true, removed: await store.remove(profile.home, room) }, headers: NO_STORE };
      });
    },
  };
}

export const roomFilesFeature: HostFeature = createRoomFilesFeature();
export const roomImagesFeature: HostFeature = createRoomImagesFeature();
