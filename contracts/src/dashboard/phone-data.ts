import { z } from 'zod';
import { defineRoute } from '../route.js';
import { detailAnswer, detailBodyRefusals, detailUnavailable, noStoreAnswer } from './detail-error.js';
import { unauthorized } from './notification-settings.js';
import { profileQuery } from './profile.js';

/**
 * The sealed-ingest wire every phone-data feature shares (the seed: health, location, phone data). The
 * phone agrees a key with the profile per feature (`POST /<feature>/key`, X25519: only public keys
 * cross the wire), then posts batches sealed with ChaCha20-Poly1305 under an HKDF-SHA256 key from it
 * (`POST /<feature>/ingest`). Errors are `{"detail"}` answers, as on every other dashboard route.
 *
 * Key schedule (`<v>` is the feature's label, e.g. `conduit-health-v1`):
 * - shared = X25519(host secret, device public key); an all-zero result (a low-order key) is refused.
 * - key = HKDF-SHA256(shared, salt = device public key ‖ host public key (64 bytes),
 *   info = `<v> <direction>`), 32 bytes, one key per direction:
 *   `<v> ingest device-to-host` for batches, `<v> voice device-to-host` / `<v> voice host-to-device`
 *   for a voice mode's sealed reads.
 * - kid = the first 16 bytes, as lowercase hex, of SHA-256(`<v> kid` ‖ device public key ‖ host public key).
 * - ChaCha20-Poly1305 (IETF, 12-byte random nonce, 16-byte tag appended), associated data (UTF-8):
 *   batches `<v> ingest\n<device_id>\n<kid>\n<batch_id>`; voice reads
 *   `<v> voice\n<tool>\n<kid>\n<device_id>\n<call_id>` in both directions.
 * Binary values are unpadded base64url.
 */

/** A device id as the phone makes it (its identifierForVendor or a random id): 1–128 of `[A-Za-z0-9_.:-]`. */
export const PHONE_DEVICE_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;
/** A batch id: 1–128 of `[A-Za-z0-9_.:-]`, never reused by one device key (a repeat is a replay). */
export const PHONE_BATCH_ID_PATTERN = PHONE_DEVICE_ID_PATTERN;
/** A 32-byte X25519 public key as unpadded base64url (43 characters). */
export const X25519_KEY_PATTERN = /^[A-Za-z0-9_-]{43}$/;
/** 32 lowercase hex characters. */
export const PHONE_KID_PATTERN = /^[0-9a-f]{32}$/;

/** The bounds every phone-data feature shares unless its own table says otherwise (the seed's limits). */
export const PHONE_DATA_LIMITS = {
  devicesPerProfile: 4,
  /** The sealed body of one batch (`ct`, decoded); location's and phone data's bound. */
  sealedBatchMaxBytes: 256 * 1024,
} as const;

export const phoneKeyRequest = z.object({
  v: z.literal(1),
  device_id: z.string().regex(PHONE_DEVICE_ID_PATTERN),
  /** The device's X25519 public key. */
  device_key: z.string().regex(X25519_KEY_PATTERN),
});

export const phoneKeyResponse = z.object({
  ok: z.literal(true),
  v: z.literal(1),
  /** The profile's X25519 public key for this feature (the same for every device). */
  host_key: z.string().regex(X25519_KEY_PATTERN),
  /** Names this device key with this host key; every sealed body carries it. */
  kid: z.string().regex(PHONE_KID_PATTERN),
  /**
   * True when this device id had another key: what that key sent was dropped, so the phone sends it all
   * again. False for a new device and for the same key again (which keeps its data).
   */
  replaced: z.boolean(),
});

/** A sealed batch: the feature's items inside `ct`, bound to the feature, device, key and batch id. */
export const sealedBatch = z.object({
  v: z.literal(1),
  device_id: z.string().regex(PHONE_DEVICE_ID_PATTERN),
  kid: z.string().regex(PHONE_KID_PATTERN),
  batch_id: z.string().regex(PHONE_BATCH_ID_PATTERN),
  /** 12 random bytes, base64url (16 characters). */
  nonce: z.string().regex(/^[A-Za-z0-9_-]{16}$/),
  /** Ciphertext and tag, base64url. */
  ct: z.string().regex(/^[A-Za-z0-9_-]+$/),
});

/**
 * A voice mode's sealed read (the seed's voice reads): the phone seals `{call_id, tool, args, provider}`
 * with the `voice device-to-host` key, the host answers the same envelope sealed with the
 * `voice host-to-device` key around `{call_id, result}`. The tool is in the clear because the associated
 * data binds it; the one inside the seal must match.
 */
export const sealedVoiceCall = z.object({
  v: z.literal(1),
  device_id: z.string().regex(PHONE_DEVICE_ID_PATTERN),
  kid: z.string().regex(PHONE_KID_PATTERN),
  call_id: z.string().regex(PHONE_BATCH_ID_PATTERN),
  tool: z.string().regex(/^[a-z][a-z0-9_]{0,63}$/),
  nonce: z.string().regex(/^[A-Za-z0-9_-]{16}$/),
  ct: z.string().regex(/^[A-Za-z0-9_-]+$/),
});

/** What is inside a voice call's seal. */
export const voiceCallPlaintext = z.object({
  call_id: z.string(),
  tool: z.string(),
  args: z.record(z.string(), z.unknown()),
  /** The voice mode's provider (`gemini-live`, `grok-live`, `gpt-live`), named in the reads log. */
  provider: z.string().max(64),
});

export const sealedBatchResponse = z.object({
  ok: z.literal(true),
  batch_id: z.string(),
  /** Items stored or replacing an older computation. */
  stored: z.int(),
  /** Items left as they were: an older computation than the stored one, or a deleted item. */
  ignored: z.int(),
});

export const phoneDeviceStatus = z.object({
  device_id: z.string(),
  kid: z.string(),
  /** Unix seconds. */
  registered_at: z.number(),
  /** Unix seconds of the last accepted batch, or null. */
  last_batch_at: z.number().nullable(),
  batches: z.int(),
  /** Stored rows per kind of item (the feature names the kinds); never values. */
  counts: z.record(z.string(), z.int()),
  /** The earliest and latest day (`YYYY-MM-DD`, UTC) the stored items cover, or null when none. */
  first_day: z.string().nullable(),
  last_day: z.string().nullable(),
});

export const phoneStatusResponse = z.object({
  ok: z.literal(true),
  /** Whether any device has a key for this feature in the profile. */
  enabled: z.boolean(),
  devices: z.array(phoneDeviceStatus),
});

export const phoneWipeRequest = z.union([
  z.object({ device_id: z.string().regex(PHONE_DEVICE_ID_PATTERN) }).strict(),
  z.object({ all: z.literal(true) }).strict(),
]);

export const phoneWipeResponse = z.object({
  ok: z.literal(true),
  /** Devices whose data and key were deleted (0 when the device was unknown). */
  devices: z.int(),
});

export interface PhoneDataRouteNames {
  /** The path segment and label: `health` → `/api/plugins/conduit_push/health/key`. */
  feature: string;
  /** `Health`, for operation ids and texts. */
  title: string;
  /** The sealed batch's bound as the feature states it, for the 413 description. */
  batchLimitText: string;
  /** The upload limit text for the 429 description. */
  uploadLimitText: string;
}

const common = {
  401: unauthorized,
  500: detailAnswer('An unexpected failure, named by its type only.'),
  503: detailUnavailable('The profile cannot be resolved.'),
};

/** The four routes of one phone-data feature, declared the same way for each. */
export function phoneDataRoutes(names: PhoneDataRouteNames) {
  const base = `/api/plugins/conduit_push/${names.feature}`;
  const tags = [names.feature];
  return {
    key: defineRoute({
      method: 'POST',
      path: `${base}/key`,
      operationId: `post${names.title}Key`,
      summary: `Agree this device's ${names.feature} key with the profile (X25519)`,
      description:
        'The device sends its public key and id; the host answers the profile’s public key for this feature and the kid. ' +
        'A new key for a known device id drops what the earlier key sent; the same key again keeps it. The host keeps ' +
        'its secret key in the feature’s store (mode 0600).',
      tags,
      auth: 'bearer',
      query: profileQuery,
      body: phoneKeyRequest,
      bodyContentType: 'application/json',
      responses: {
        200: {
          description: 'The host key and kid.',
          schema: phoneKeyResponse,
          headers: { 'Cache-Control': 'no-store' },
        },
        ...detailBodyRefusals,
        400: detailAnswer('The body is not JSON, a field is refused, or the device key is a low-order point.'),
        409: detailAnswer('The profile already has 4 devices for this feature; wipe one first.'),
        429: detailAnswer('More than 20 key requests a minute for this profile and feature.'),
        ...common,
      },
    }),
    ingest: defineRoute({
      method: 'POST',
      path: `${base}/ingest`,
      operationId: `post${names.title}Ingest`,
      summary: `Store a sealed ${names.feature} batch`,
      description:
        'Opened with the device’s key; nothing is stored unless the whole batch opens and validates. A batch id the ' +
        'device key already sent is refused (409), so a replayed batch changes nothing.',
      tags,
      auth: 'bearer',
      query: profileQuery,
      body: sealedBatch,
      bodyContentType: 'application/json',
      responses: {
        200: noStoreAnswer('What the batch changed.', sealedBatchResponse),
        ...detailBodyRefusals,
        400: detailAnswer(
          'The body or the opened batch is refused (its message); or the seal does not open (tampered).',
        ),
        409: detailAnswer('This batch id was already received from this device key (a replay); nothing is stored.'),
        412: detailAnswer('The device id or kid has no key here (never agreed, wiped or replaced): agree a key again.'),
        413: detailAnswer(names.batchLimitText),
        429: detailAnswer(names.uploadLimitText),
        ...common,
      },
    }),
    status: defineRoute({
      method: 'GET',
      path: `${base}/status`,
      operationId: `get${names.title}Status`,
      summary: `What the profile holds for ${names.feature}: counts and dates, never values`,
      tags,
      auth: 'bearer',
      query: profileQuery,
      responses: {
        200: noStoreAnswer('Each device with its counts.', phoneStatusResponse),
        ...common,
      },
    }),
    wipe: defineRoute({
      method: 'POST',
      path: `${base}/wipe`,
      operationId: `post${names.title}Wipe`,
      summary: `Delete one device's ${names.feature} data and key, or everything with {"all": true}`,
      description:
        'The rows are really gone: one device is deleted and the file vacuumed; everything removes the file (a new ' +
        'host key is made on the next key agreement).',
      tags,
      auth: 'bearer',
      query: profileQuery,
      body: phoneWipeRequest,
      bodyContentType: 'application/json',
      responses: {
        200: noStoreAnswer('How many devices were deleted.', phoneWipeResponse),
        ...detailBodyRefusals,
        ...common,
      },
    }),
  };
}

export type PhoneDataRoutes = ReturnType<typeof phoneDataRoutes>;
