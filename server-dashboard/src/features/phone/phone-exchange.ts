import { randomBytes } from 'node:crypto';
import {
  PHONE_LABEL,
  PHONE_LIMITS,
  phoneChangesRequest,
  phoneVoiceRequest,
  postPhoneExchange,
  sealedPhoneExchange,
  type SealedPhoneExchange,
} from '@conduit/contracts/dashboard/phone';
import { bindRoute } from '@conduit/contracts/server';
import { concatBytes } from '@noble/hashes/utils.js';
import type { FastifyInstance } from 'fastify';
import type { z } from 'zod';
import { decodeBase64Url, encodeBase64Url } from '../../crypto/base64url.js';
import { hkdfSha256, TAG_BYTES } from '../../crypto/symmetric.js';
import { answerWithDetail, DetailError, readJsonBody } from '../../kernel/detail-errors.js';
import type { FeatureKernel } from '../../kernel/feature.js';
import { profileForRoute } from '../../kernel/profile-files.js';
import { perMinute } from '../../kernel/rate-window.js';
import { openWith, sealWith, sharedSecret } from '../../kernel/phone-data/sealing.js';
import { PhoneDataStore } from '../../kernel/phone-data/store.js';
import type { VoiceToolProvider } from '../../kernel/phone-data/voice-tool-provider.js';
import { voiceModeName } from '../../kernel/phone-data/voice-tool-provider.js';
import { changesForDevice, expireChanges, settleChanges } from './phone-changes.js';
import { PHONE_SHAPE } from './phone-store.js';

/**
 * POST /phone/exchange (contracts/dashboard/phone.ts describes the wire): one sealed round trip in
 * which the phone reports the outcomes of pending changes and takes the ones still waiting (`op:
 * "changes"`), or runs a voice mode's read of the phone's tools (`op: "voice"`). Both are sealed with
 * the device's phone key under the exchange directions, so dashboard access alone reads nothing.
 */

type ExchangeDirection = 'exchange device-to-host' | 'exchange host-to-device';

/**
 * The exchange's keys, derived as every phone-data direction is (HKDF-SHA256 over the X25519 secret,
 * both public keys as salt, `<label> <direction>` as info), with directions of their own so neither a
 * batch nor a /voice-tools call ever opens here, nor an answer as a request.
 */
function exchangeKeys(
  hostSecret: Uint8Array,
  hostPublic: Uint8Array,
  devicePublic: Uint8Array,
): Record<ExchangeDirection, Uint8Array> | null {
  const shared = sharedSecret(hostSecret, devicePublic);
  if (shared === null) return null;
  const salt = concatBytes(devicePublic, hostPublic);
  return {
    'exchange device-to-host': hkdfSha256(shared, salt, `${PHONE_LABEL} exchange device-to-host`),
    'exchange host-to-device': hkdfSha256(shared, salt, `${PHONE_LABEL} exchange host-to-device`),
  };
}

/** The associated data of an exchange, the same both ways: op, key, device and the exchange's own id. */
export function exchangeAad(op: SealedPhoneExchange['op'], kid: string, deviceId: string, id: string): string {
  return `${PHONE_LABEL} exchange ${op}\n${kid}\n${deviceId}\n${id}`;
}

const idOf = (envelope: SealedPhoneExchange) => (envelope.op === 'changes' ? envelope.exchange_id : envelope.call_id);

/** The envelope as a clean value, or 400 naming its first refused field. */
function validEnvelope(raw: unknown): SealedPhoneExchange {
  const parsed = sealedPhoneExchange.safeParse(readJsonBody(raw));
  if (parsed.success) return parsed.data;
  const field = parsed.error.issues[0]?.path[0];
  throw new DetailError(400, typeof field === 'string' ? `${field} is missing or invalid` : 'Request body is invalid');
}

/** The opened plaintext of `schema`, or 400 naming the refused field. */
function validInner<S extends z.ZodType>(schema: S, plain: Uint8Array): z.output<S> {
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(plain).toString('utf8'));
  } catch {
    throw new DetailError(400, 'The opened exchange is not JSON');
  }
  const parsed = schema.safeParse(json);
  if (parsed.success) return parsed.data;
  const where = parsed.error.issues[0]?.path.join('.') ?? '';
  throw new DetailError(400, where ? `Exchange field ${where} is invalid` : 'The opened exchange is invalid');
}

const NO_KEY = 'This device has no phone key here; set up a new key';

/**
 * Runs `work` on the profile's phone store, closing it whatever happens; a profile without one has no
 * device key (412). Opened per step, so nothing holds the database while a voice read runs.
 */
function withDeviceStore<T>(home: string, work: (store: PhoneDataStore) => T): T {
  const store = PhoneDataStore.open(home, PHONE_SHAPE, false);
  if (store === null) throw new DetailError(412, NO_KEY);
  try {
    return work(store);
  } finally {
    store.close();
  }
}

/** The sealed bytes of the largest accepted exchange, in base64, with room for the envelope's ids. */
export const EXCHANGE_BODY_LIMIT_BYTES = Math.ceil(((PHONE_LIMITS.exchangeMaxBytes + TAG_BYTES) * 4) / 3) + 4096;

/**
 * Registers the exchange in a scope of its own (its body bound is 64 KiB, not a batch's 4 MiB).
 * `voiceTools` are the phone's voice reads (the same providers as POST /voice-tools/call answers).
 */
export function registerPhoneExchange(
  parent: FastifyInstance,
  kernel: FeatureKernel,
  voiceTools: readonly VoiceToolProvider[],
): PromiseLike<unknown> {
  const byName = new Map(voiceTools.map((tool) => [tool.name, tool]));
  const exchanges = perMinute(PHONE_LIMITS.exchangesPerMinute, kernel.clock);
  const nowS = () => Math.floor(kernel.clock.now() / 1000);

  return parent.register(async (scope) => {
    answerWithDetail(scope, {
      bodyLimitBytes: EXCHANGE_BODY_LIMIT_BYTES,
      failure: (_request, type) => `Phone exchange failed on the host (${type})`,
    });

    bindRoute(scope, postPhoneExchange, async ({ query, body: raw }) => {
      const profile = profileForRoute(kernel.hermesHome, query.profile);
      // Counted before anything is opened, refused exchanges included: bad seals cost as much as good ones.
      if (!exchanges.tryTake(profile.name)) {
        throw new DetailError(
          429,
          `Too many phone exchanges for this profile (at most ${PHONE_LIMITS.exchangesPerMinute} a minute); try again shortly`,
        );
      }
      const envelope = validEnvelope(raw);
      const sealed = decodeBase64Url(envelope.ct);
      const nonce = decodeBase64Url(envelope.nonce);
      if (sealed === null || sealed.length < TAG_BYTES) throw new DetailError(400, 'ct is missing or invalid');
      if (nonce?.length !== 12) throw new DetailError(400, 'nonce is missing or invalid');
      if (sealed.length - TAG_BYTES > PHONE_LIMITS.exchangeMaxBytes) {
        throw new DetailError(413, 'The exchange is over 64 KiB');
      }
      const id = idOf(envelope);
      const aad = exchangeAad(envelope.op, envelope.kid, envelope.device_id, id);
      const { keys, plain } = withDeviceStore(profile.home, (store) => {
        const device = store.device(envelope.device_id);
        if (!device || device.kid !== envelope.kid) throw new DetailError(412, NO_KEY);
        const host = store.hostKey(nowS());
        const derived = exchangeKeys(host.secret, host.public, new Uint8Array(device.device_key));
        const opened = derived && openWith(derived['exchange device-to-host'], nonce, aad, sealed);
        if (!derived || !opened) throw new DetailError(400, 'The exchange does not open with this device key');
        return { keys: derived, plain: opened };
      });

      if (envelope.op === 'changes') {
        const request = validInner(phoneChangesRequest, plain);
        if (request.exchange_id !== id) throw new DetailError(400, 'Exchange field exchange_id is invalid');
        const answer = withDeviceStore(profile.home, (store) =>
          store.db.transaction(() => {
            expireChanges(store, nowS());
            const settled = settleChanges(store, envelope.device_id, request.results, nowS());
            // What is handed over is bound by the same 64 KiB as a request, less room for the seal's JSON.
            const queue = changesForDevice(store, envelope.device_id, nowS(), PHONE_LIMITS.exchangeMaxBytes - 1024);
            return { exchange_id: id, changes: queue.changes, more: queue.more, settled };
          })(),
        );
        kernel.log.info('phone exchange', {
          profile: profile.name,
          settled: answer.settled,
          handed: answer.changes.length,
        });
        return sealedAnswer(envelope, keys, aad, answer);
      }

      // op "voice": the provider reads its own store for this device only, as on /voice-tools/call.
      const call = validInner(phoneVoiceRequest, plain);
      if (call.call_id !== id) throw new DetailError(400, 'Exchange field call_id is invalid');
      const provider = byName.get(call.tool);
      if (!provider) throw new DetailError(404, `${call.tool} is not a voice tool of the phone`);
      const via = voiceModeName(call.provider);
      const outcome = await provider.read(profile.home, envelope.device_id, call.args, {
        provider: call.provider,
        via,
        callId: id,
        nowS: nowS(),
      });
      if ('refused' in outcome) throw new DetailError(400, outcome.refused);
      // Which tool and mode read, never what: the result is the user's data.
      kernel.log.info('phone voice read', { profile: profile.name, tool: provider.name, via });
      return sealedAnswer(envelope, keys, aad, { call_id: id, result: outcome.result });
    });
  });
}

/** `answer` sealed for the device that asked, in the envelope it asked with. */
function sealedAnswer(
  envelope: SealedPhoneExchange,
  keys: Record<ExchangeDirection, Uint8Array>,
  aad: string,
  answer: unknown,
) {
  const nonce = randomBytes(12);
  const ct = sealWith(keys['exchange host-to-device'], nonce, aad, new TextEncoder().encode(JSON.stringify(answer)));
  return {
    status: 200 as const,
    body: { ...envelope, nonce: encodeBase64Url(nonce), ct: encodeBase64Url(ct) },
    headers: { 'Cache-Control': 'no-store' },
  };
}
