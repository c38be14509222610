import type { FastifyInstance } from 'fastify';
import {
  getLocationMapsLookup,
  LOCATION_MAPS_LIMITS,
  MAPS_LOOKUP_ID_PATTERN,
  postLocationMapsAnswer,
  sealedMapsEnvelope,
} from '@conduit/contracts/dashboard/location';
import { PHONE_DEVICE_ID_PATTERN } from '@conduit/contracts/dashboard/phone-data';
import { bindRoute } from '@conduit/contracts/server';
import { decodeBase64Url } from '../../crypto/base64url.js';
import { TAG_BYTES } from '../../crypto/symmetric.js';
import { answerWithDetail, DetailError, readJsonBody } from '../../kernel/detail-errors.js';
import type { FeatureKernel } from '../../kernel/feature.js';
import { profileForRoute } from '../../kernel/profile-files.js';
import { perMinute } from '../../kernel/rate-window.js';
import { MAPS_LIMITS } from './maps-limits.js';
import { answerFor, type PhonePathDeps } from './phone-path.js';

/**
 * The phone's side of a maps lookup (contracts/dashboard/location.ts): `GET /location/maps/{id}` hands
 * the woken phone the lookup sealed for it, `POST /location/maps/{id}` takes its sealed answer. Served
 * by maps (it owns the lookups) under location's paths, where the phone's Location Push extension
 * already talks to this host. Every refusal stores nothing: the lookup stays open for the real answer.
 */

const NO_STORE = { 'Cache-Control': 'no-store' };

/** Base64 grows 3 bytes to 4; the rest of the envelope is a few short ids. */
const BODY_LIMIT_BYTES = Math.ceil(((LOCATION_MAPS_LIMITS.sealedAnswerMaxBytes + TAG_BYTES) * 4) / 3) + 4096;

function validEnvelope(raw: unknown) {
  const parsed = sealedMapsEnvelope.safeParse(readJsonBody(raw));
  if (parsed.success) return parsed.data;
  const field = parsed.error.issues[0]?.path[0];
  throw new DetailError(400, typeof field === 'string' ? `${field} is missing or invalid` : 'Request body is invalid');
}

export function registerMapsPhoneRoutes(scope: FastifyInstance, kernel: FeatureKernel, deps: PhonePathDeps): void {
  const answers = perMinute(MAPS_LIMITS.phoneAnswersPerMinute, kernel.clock);
  answerWithDetail(scope, {
    bodyLimitBytes: BODY_LIMIT_BYTES,
    failure: (_request, type) => `Maps lookup failed on the host (${type})`,
  });
  const unknown = () => new DetailError(404, 'No such maps lookup: it was never made, is answered or has expired');
  const otherDevice = () =>
    new DetailError(412, 'This maps lookup is not sealed for this device key; agree a location key again');

  bindRoute(scope, getLocationMapsLookup, ({ params, query }) => {
    const profile = profileForRoute(kernel.hermesHome, query.profile);
    if (!PHONE_DEVICE_ID_PATTERN.test(query.device_id)) throw new DetailError(400, 'device_id is missing or invalid');
    const lookup = MAPS_LOOKUP_ID_PATTERN.test(params.id) ? deps.lookups.find(profile.home, params.id) : null;
    if (!lookup || lookup.answer !== null) throw unknown();
    // Another device, or this device after a new key: the lookup would not open for it.
    if (lookup.deviceId !== query.device_id || deps.phone.kidOf(profile.home, query.device_id) !== lookup.kid) {
      throw otherDevice();
    }
    return { status: 200, body: { ok: true as const, lookup: lookup.envelope }, headers: NO_STORE };
  });

  bindRoute(scope, postLocationMapsAnswer, ({ params, query, body: raw }) => {
    const profile = profileForRoute(kernel.hermesHome, query.profile);
    // Counted before anything is opened, so refused answers spend the window too.
    if (!answers.tryTake(profile.name)) throw new DetailError(429, 'Too many maps answers; try again shortly');
    const envelope = validEnvelope(raw);
    if (envelope.lookup_id !== params.id) throw new DetailError(400, 'lookup_id does not match the path');
    const nonce = decodeBase64Url(envelope.nonce);
    const ct = decodeBase64Url(envelope.ct);
    if (nonce?.length !== 12) throw new DetailError(400, 'nonce is missing or invalid');
    if (ct === null || ct.length < TAG_BYTES) throw new DetailError(400, 'ct is missing or invalid');
    if (ct.length - TAG_BYTES > LOCATION_MAPS_LIMITS.sealedAnswerMaxBytes) {
      throw new DetailError(413, 'The sealed answer is too large');
    }
    const lookup = deps.lookups.find(profile.home, params.id);
    if (!lookup) throw unknown();
    if (lookup.deviceId !== envelope.device_id || lookup.kid !== envelope.kid) throw otherDevice();
    const plain = deps.phone.open(profile.home, {
      deviceId: envelope.device_id,
      kid: envelope.kid,
      lookupId: envelope.lookup_id,
      nonce,
      ct,
    });
    if (plain === 'unknown_key') throw otherDevice();
    if (plain === 'does_not_open') throw new DetailError(400, 'The answer does not open with this device key');
    // Checked after the seal opens, so only the phone itself learns the lookup was answered.
    if (lookup.answer !== null) throw new DetailError(409, 'This maps lookup was already answered');
    let json: unknown;
    try {
      json = JSON.parse(Buffer.from(plain).toString('utf8'));
    } catch {
      throw new DetailError(400, 'The opened answer is not JSON');
    }
    const answer = answerFor(deps, lookup, json);
    if (!answer) throw new DetailError(400, 'The opened answer is invalid');
    deps.lookups.settle(lookup, answer);
    return { status: 200, body: { ok: true as const, lookup_id: lookup.id }, headers: NO_STORE };
  });
}
