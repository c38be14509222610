import type { FastifyRequest } from 'fastify';
import type { z } from 'zod';
import {
  phoneKeyRequest,
  phoneWipeRequest,
  sealedBatch,
  type PhoneDataRoutes,
} from '@conduit/contracts/dashboard/phone-data';
import { bindRoute } from '@conduit/contracts/server';
import { decodeBase64Url, encodeBase64Url } from '../../crypto/base64url.js';
import { TAG_BYTES } from '../../crypto/symmetric.js';
import { answerWithDetail, DetailError, readJsonBody } from '../detail-errors.js';
import type { HostFeature } from '../feature.js';
import { profileForRoute } from '../profile-files.js';
import { perMinute } from '../rate-window.js';
import { batchAad, deviceKeys, openWith } from './sealing.js';
import { PhoneDataStore, removeStore, type StoreShape } from './store.js';

export { PhoneDataStore, removeStore, storeFile } from './store.js';

/** What a feature says about one device's stored data in its status: counts and dates, never values. */
export interface DeviceSummary {
  counts: Record<string, number>;
  /** `YYYY-MM-DD` (UTC), or null when nothing is stored. */
  firstDay: string | null;
  lastDay: string | null;
}

export interface BatchOutcome {
  stored: number;
  ignored: number;
}

export interface PhoneDataLimits {
  /** Devices with a key per profile; the seed's 4 for every phone-data feature. */
  devicesPerProfile: number;
  /** Decoded ciphertext of one batch, tag excluded; the route's body bound follows from it. */
  sealedBatchMaxBytes: number;
  /** Accepted and refused uploads together, per profile: a flood of bad seals costs as much as good ones. */
  uploadsPerMinute: number;
}

/** A phone-data feature as the core needs it: its names, store shape, and how it reads and keeps a batch. */
export interface SealedIngestSpec<Batch> {
  /** `health`: the route segment, the store's file name and the capability. */
  feature: string;
  /** `Health`, for error texts. */
  title: string;
  /** The HKDF and associated-data label, e.g. `conduit-health-v1`. */
  label: string;
  routes: PhoneDataRoutes;
  limits: PhoneDataLimits;
  store: Omit<StoreShape, 'feature'>;
  /** The opened batch as a clean value, or a DetailError (400, or 413 for too many items). */
  parseBatch(plain: unknown): Batch;
  /** Keeps a parsed batch; runs inside the batch's transaction. */
  storeBatch(store: PhoneDataStore, deviceId: string, batch: Batch, nowS: number): BatchOutcome;
  summarize(store: PhoneDataStore, deviceId: string): DeviceSummary;
  /**
   * Told after a batch is committed and the store closed, so what it wakes (a tool waiting for a fresh
   * fix, place-event listeners) reads the batch's rows. A throw is logged, never the phone's failure:
   * the batch is stored by then.
   */
  afterBatch?(landed: LandedBatch<Batch>): void;
}

/** A batch the core has committed: where it landed and what it changed. */
export interface LandedBatch<Batch> {
  /** The profile's home and name. */
  home: string;
  profile: string;
  deviceId: string;
  batch: Batch;
  outcome: BatchOutcome;
  /** Unix seconds when it was received. */
  nowS: number;
}

/**
 * Key agreements per profile and feature a minute. A phone agrees once and again only after a wipe or
 * a lost key; each new key rewrites the store (VACUUM), so a signed-in client looping on it must not be
 * able to keep the disk busy.
 */
const KEY_REQUESTS_PER_MINUTE = 20;

/** The request body as a clean value of `schema`, or 400 naming the first refused field. */
function validBody<S extends z.ZodType>(schema: S, raw: unknown): z.output<S> {
  const parsed = schema.safeParse(readJsonBody(raw));
  if (parsed.success) return parsed.data;
  const field = parsed.error.issues[0]?.path[0];
  throw new DetailError(400, typeof field === 'string' ? `${field} is missing or invalid` : 'Request body is invalid');
}

/** Which route a failure came from, for the 500 text. */
function whatOf(request: FastifyRequest): string {
  const url = request.routeOptions.url ?? '';
  return url.slice(url.lastIndexOf('/') + 1) || 'request';
}

/** Base64 grows 3 bytes to 4; the rest of the envelope is a few short ids. */
function bodyLimitFor(limits: PhoneDataLimits): number {
  return Math.ceil(((limits.sealedBatchMaxBytes + TAG_BYTES) * 4) / 3) + 4096;
}

/**
 * A phone-data feature (`health`, `location`, `phone`) built on the sealed-ingest core: `POST
 * /<feature>/key`, `POST /<feature>/ingest`, `GET /<feature>/status`, `POST /<feature>/wipe`.
 */
export function sealedIngest<Batch>(spec: SealedIngestSpec<Batch>): HostFeature {
  const shape: StoreShape = { feature: spec.feature, ...spec.store };
  const { routes, limits } = spec;
  return {
    name: spec.feature,
    // The status route: answering it proves the family is served, and it changes nothing.
    capabilities: [{ name: spec.feature, method: 'GET', path: routes.status.path }],
    register(scope, kernel) {
      const uploads = perMinute(limits.uploadsPerMinute, kernel.clock);
      const keyRequests = perMinute(KEY_REQUESTS_PER_MINUTE, kernel.clock);
      const nowS = () => kernel.clock.now() / 1000;
      answerWithDetail(scope, {
        bodyLimitBytes: bodyLimitFor(limits),
        failure: (request, type) => `${spec.title} ${whatOf(request)} failed on the host (${type})`,
      });

      /** Runs `work` on the profile's store, closing it whatever happens. */
      function withStore<T>(home: string, create: boolean, work: (store: PhoneDataStore | null) => T): T {
        const store = PhoneDataStore.open(home, shape, create);
        try {
          return work(store);
        } finally {
          store?.close();
        }
      }

      bindRoute(scope, routes.key, ({ query, body: raw }) => {
        const profile = profileForRoute(kernel.hermesHome, query.profile);
        if (!keyRequests.tryTake(profile.name)) {
          throw new DetailError(429, `Too many ${spec.feature} key requests; try again shortly`);
        }
        const request = validBody(phoneKeyRequest, raw);
        const deviceKey = decodeBase64Url(request.device_key);
        if (deviceKey?.length !== 32) throw new DetailError(400, 'device_key is missing or invalid');
        const answer = withStore(profile.home, true, (store) => {
          // open() with create never answers null; the check only narrows the type.
          if (store === null) throw new Error('store not created');
          const host = store.hostKey(nowS());
          const keys = deviceKeys(spec.label, host.secret, host.public, deviceKey);
          if (keys === null) throw new DetailError(400, 'device_key is not a usable X25519 key');
          const known = store.device(request.device_id);
          if (known === undefined && store.devices().length >= limits.devicesPerProfile) {
            throw new DetailError(
              409,
              `This profile already has ${limits.devicesPerProfile} ${spec.feature} devices; delete one first`,
            );
          }
          // The same key again keeps what it sent: only that phone holds its secret, so nothing is gained
          // by replaying its public key. A new key drops everything, so it cannot read the old data back.
          const same = known !== undefined && Buffer.from(deviceKey).equals(known.device_key);
          if (!same) store.putDevice(request.device_id, deviceKey, keys.kid, nowS());
          return { host_key: encodeBase64Url(host.public), kid: keys.kid, replaced: known !== undefined && !same };
        });
        return {
          status: 200,
          body: { ok: true as const, v: 1 as const, ...answer },
          headers: { 'Cache-Control': 'no-store' },
        };
      });

      bindRoute(scope, routes.ingest, ({ query, body: raw }) => {
        const profile = profileForRoute(kernel.hermesHome, query.profile);
        // Counted per resolved profile (made-up names are 503 before they can mint windows), and before
        // anything is opened, so refused batches spend the window too.
        if (!uploads.tryTake(profile.name)) {
          throw new DetailError(429, `Too many ${spec.feature} uploads; try again shortly`);
        }
        const envelope = validBody(sealedBatch, raw);
        const sealed = decodeBase64Url(envelope.ct);
        const nonce = decodeBase64Url(envelope.nonce);
        if (sealed === null || sealed.length < TAG_BYTES) throw new DetailError(400, 'ct is missing or invalid');
        if (nonce?.length !== 12) throw new DetailError(400, 'nonce is missing or invalid');
        if (sealed.length - TAG_BYTES > limits.sealedBatchMaxBytes) {
          throw new DetailError(413, 'The batch is too large');
        }
        let landed: Batch | undefined;
        const outcome = withStore(profile.home, false, (store) => {
          const device = store?.device(envelope.device_id);
          if (!store || !device || device.kid !== envelope.kid) {
            throw new DetailError(412, `This device has no ${spec.feature} key here; set up a new key`);
          }
          const host = store.hostKey(nowS());
          const keys = deviceKeys(spec.label, host.secret, host.public, new Uint8Array(device.device_key));
          const aad = batchAad(spec.label, envelope.device_id, envelope.kid, envelope.batch_id);
          const plain = keys && openWith(keys.keys['ingest device-to-host'], nonce, aad, sealed);
          if (!plain) throw new DetailError(400, 'The batch does not open with this device key');
          // Checked after the seal opens, so only the device itself learns which ids were seen.
          if (store.seenBatch(envelope.device_id, envelope.batch_id)) {
            throw new DetailError(409, 'This batch was already received');
          }
          let json: unknown;
          try {
            json = JSON.parse(Buffer.from(plain).toString('utf8'));
          } catch {
            throw new DetailError(400, 'The opened batch is not JSON');
          }
          const batch = spec.parseBatch(json);
          landed = batch;
          return store.acceptBatch(envelope.device_id, envelope.batch_id, nowS(), () =>
            spec.storeBatch(store, envelope.device_id, batch, nowS()),
          );
        });
        if (spec.afterBatch && landed !== undefined) {
          try {
            spec.afterBatch({
              home: profile.home,
              profile: profile.name,
              deviceId: envelope.device_id,
              batch: landed,
              outcome,
              nowS: nowS(),
            });
          } catch (error) {
            kernel.log.warn(`${spec.feature} afterBatch failed`, {
              error: error instanceof Error ? error.name : 'error',
            });
          }
        }
        return {
          status: 200,
          body: { ok: true as const, batch_id: envelope.batch_id, ...outcome },
          headers: { 'Cache-Control': 'no-store' },
        };
      });

      /** Each device with counts and days, never a value. */
      function devicesOf(store: PhoneDataStore) {
        return store.devices().map((device) => {
          const summary = spec.summarize(store, device.device_id);
          return {
            device_id: device.device_id,
            kid: device.kid,
            registered_at: device.registered_at,
            last_batch_at: device.last_batch_at,
            batches: store.batchCount(device.device_id),
            counts: summary.counts,
            first_day: summary.firstDay,
            last_day: summary.lastDay,
          };
        });
      }

      bindRoute(scope, routes.status, ({ query }) => {
        const profile = profileForRoute(kernel.hermesHome, query.profile);
        const devices = withStore(profile.home, false, (store) => (store ? devicesOf(store) : []));
        const enabled = devices.length > 0;
        return { status: 200, body: { ok: true as const, enabled, devices }, headers: { 'Cache-Control': 'no-store' } };
      });

      bindRoute(scope, routes.wipe, ({ query, body: raw }) => {
        const profile = profileForRoute(kernel.hermesHome, query.profile);
        const request = validBody(phoneWipeRequest, raw);
        let devices: number;
        if ('all' in request) {
          devices = withStore(profile.home, false, (store) => store?.devices().length ?? 0);
          removeStore(profile.home, spec.feature);
        } else {
          devices = withStore(profile.home, false, (store) => (store?.wipeDevice(request.device_id) ? 1 : 0));
        }
        kernel.log.info(`${spec.feature} data wiped`, { profile: profile.name, devices });
        return { status: 200, body: { ok: true as const, devices }, headers: { 'Cache-Control': 'no-store' } };
      });
    },
  };
}
