import { z } from 'zod';
import { defineRoute } from '../route.js';
import { detailAnswer, detailBodyRefusals, detailUnavailable, noStoreAnswer } from './detail-error.js';
import { unauthorized } from './notification-settings.js';
import { profileQuery } from './profile.js';

/**
 * Group chat rooms (the seed, "room files and images"): a room is not a Hermes session, so the files
 * picked in its composer and its custom picture are kept here, under `<hermes home>/conduit/`.
 */

/** The largest room file, decoded (the seed: up to 50 MB). */
export const ROOM_FILE_MAX_BYTES = 50 * 1024 * 1024;
/** The largest room picture, decoded (the seed: up to 512 KB). */
export const ROOM_IMAGE_MAX_BYTES = 512 * 1024;
/** Rooms with a picture on one Hermes home; past it the oldest picture goes (the seed). */
export const ROOM_IMAGES_MAX_ROOMS = 500;

/** The base64 of `bytes` bytes plus room for the rest of a JSON body: the body bound of an upload route. */
export function base64BodyLimit(bytes: number): number {
  return Math.ceil(bytes / 3) * 4 + 64 * 1024;
}

export const postRoomFileRequest = z.object({
  /**
   * The file's name (`photo.jpg`): a plain name, never a path. `../`, `/`, `\`, NUL and their
   * percent-encodings are refused; other characters a file system or Hermes' `@file:` parser would
   * trip on are replaced with `_`.
   */
  name: z.string(),
  /** The file's bytes, base64 (standard or URL-safe alphabet), at most 50 MB decoded. */
  data_base64: z.string(),
});

export const postRoomFileResponse = z.object({
  ok: z.literal(true),
  /** Where the file now is on this host, for the room's members to read. */
  path: z.string(),
  /** `@file:<path>` (quoted when the path needs it), for its own line above the message. */
  ref_text: z.string(),
});

/** Stores a file picked in a room's composer; it is deleted a month later, or sooner past 2 GB of them. */
export const postRoomFile = defineRoute({
  method: 'POST',
  path: '/api/plugins/conduit_push/room-files',
  operationId: 'postRoomFile',
  summary: "Upload a file for a group chat room's members",
  description:
    'Stored in `<hermes home>/conduit/room-files/<id>/<name>` (a new folder per upload, 0700; the file 0600, written to a temporary file and renamed). Uploads are deleted 30 days later, or sooner, oldest first, once they pass 2 GB together (checked hourly).',
  tags: ['rooms'],
  auth: 'bearer',
  query: profileQuery,
  body: postRoomFileRequest,
  bodyContentType: 'application/json',
  responses: {
    200: noStoreAnswer('Stored: its path and the `@file:` reference.', postRoomFileResponse),
    401: unauthorized,
    ...detailBodyRefusals,
    400: detailAnswer(
      'The body is not JSON, the name is not a plain file name (`../`, absolute, NUL, encoded separators), the data is not base64, or the room-files folder leads outside the Hermes home (a symlink); nothing is written.',
    ),
    413: detailAnswer('The body is too large, or the file is over 50 MB.'),
    415: detailAnswer(
      'The name says an image type (JPEG, PNG, GIF, WebP, HEIC) its bytes are not; or the body is sent as text or a form (`unsupported_media_type`, with `error` too).',
    ),
    429: detailAnswer('More than 30 uploads a minute for this profile.'),
    500: detailAnswer('An unexpected failure, named by its type only.'),
    503: detailUnavailable('The profile cannot be resolved.'),
    507: detailAnswer('The upload would leave under 1 GB free on this host.'),
  },
});

/** A room id as the URL names it: 1–100 characters (the router's bound on a path parameter), never a path. */
export const roomParams = z.object({ room_id: z.string() });

const roomErrors = {
  400: detailAnswer(
    'The room id is not one (empty, a path, NUL or control characters, encoded separators), or the room-images folder leads outside the Hermes home (a symlink); nothing is written.',
  ),
  401: unauthorized,
  429: detailAnswer('More than 600 room picture reads, or 60 changes, a minute for this profile.'),
  500: detailAnswer('An unexpected failure, named by its type only.'),
  503: detailUnavailable('The profile cannot be resolved.'),
};

export const roomImagesResponse = z.object({
  ok: z.literal(true),
  /** Each room with a picture and its revision; a changed revision means a changed picture. */
  revisions: z.record(z.string(), z.string()),
});

export const getRoomImages = defineRoute({
  method: 'GET',
  path: '/api/plugins/conduit_push/room-images',
  operationId: 'getRoomImages',
  summary: "Every room picture's revision (no picture bytes)",
  tags: ['rooms'],
  auth: 'bearer',
  query: profileQuery,
  responses: {
    200: noStoreAnswer('The revisions.', roomImagesResponse),
    ...roomErrors,
  },
});

export const roomImageResponse = z.object({
  ok: z.literal(true),
  rev: z.string(),
  mime: z.enum(['image/jpeg', 'image/png']),
  data_base64: z.string(),
});

export const getRoomImage = defineRoute({
  method: 'GET',
  path: '/api/plugins/conduit_push/room-images/{room_id}',
  operationId: 'getRoomImage',
  summary: "A room's picture",
  tags: ['rooms'],
  auth: 'bearer',
  query: profileQuery,
  params: roomParams,
  responses: {
    200: noStoreAnswer('The picture and its revision.', roomImageResponse),
    404: detailAnswer('The room has no picture (`This room has no picture`).'),
    ...roomErrors,
  },
});

export const putRoomImageRequest = z.object({
  /** A JPEG or PNG (told by its bytes), at most 512 KB decoded. */
  data_base64: z.string(),
});

export const putRoomImage = defineRoute({
  method: 'PUT',
  path: '/api/plugins/conduit_push/room-images/{room_id}',
  operationId: 'putRoomImage',
  summary: "Set a room's picture",
  description: `At most ${ROOM_IMAGES_MAX_ROOMS} rooms keep a picture; setting one more drops the picture set longest ago.`,
  tags: ['rooms'],
  auth: 'bearer',
  query: profileQuery,
  params: roomParams,
  body: putRoomImageRequest,
  bodyContentType: 'application/json',
  responses: {
    200: noStoreAnswer(
      'Stored; its revision.',
      z.object({ ok: z.literal(true), rev: z.string(), mime: z.enum(['image/jpeg', 'image/png']) }),
    ),
    ...detailBodyRefusals,
    ...roomErrors,
    400: detailAnswer(
      'The body is not JSON, data_base64 is missing or not base64, the room id is not one, or the room-images folder leads outside the Hermes home; nothing is written.',
    ),
    413: detailAnswer('The body is too large, or the picture is over 512 KB.'),
    415: detailAnswer('The picture is not a JPEG or PNG (told by its bytes), or the body is sent as text or a form.'),
  },
});

export const deleteRoomImage = defineRoute({
  method: 'DELETE',
  path: '/api/plugins/conduit_push/room-images/{room_id}',
  operationId: 'deleteRoomImage',
  summary: "Clear a room's picture",
  tags: ['rooms'],
  auth: 'bearer',
  query: profileQuery,
  params: roomParams,
  responses: {
    200: noStoreAnswer('Whether a picture was removed.', z.object({ ok: z.literal(true), removed: z.boolean() })),
    ...roomErrors,
  },
});
