import { randomBytes } from 'node:crypto';
import { E2E_NONCE_BYTES, E2E_VERSION, type E2eEnvelope } from '@conduit/contracts/crypto/e2e';
import type { LocationRequestInner } from '@conduit/contracts/dashboard/location';
import type { SealedEvent } from '@conduit/contracts/relay/events';
import type { Clock } from '../../clock.js';
import { e2eState, isPaired, relayUrlOf } from '../../credentials/credential-file.js';
import { readCredentials } from '../../credentials/credential-store.js';
import { encodeBase64Url } from '../../crypto/base64url.js';
import { keyedEventId, keysFromRecord, threadToken, type E2eKeys } from '../../crypto/e2e-keys.js';
import { compressIfSmaller, pushAad } from '../../crypto/e2e-seal.js';
import { sealChaCha20Poly1305 } from '../../crypto/symmetric.js';
import type { RelayGateway } from '../../delivery/relay-gateway.js';
import type { ProfileScope } from '../../notifier/notifier.js';

/**
 * The relay's location push, behind a port: locate (and maps lookups next) wake the phone's Location
 * Push Service Extension with a `location.request` event. The relay takes that type sealed only, and
 * the request id lives only inside the seal, so a pairing without end-to-end encryption cannot wake
 * the phone this way (the request is never sent in the clear).
 */

export interface LocationPushRequest {
  kind: 'locate' | 'maps';
  /** `^[A-Za-z0-9_-]{8,64}$`: what the phone's answer is matched by. */
  requestId: string;
}

export type LocationPushOutcome =
  /** The relay took the push (or had it already). */
  | { kind: 'sent'; delivered: boolean }
  /** This profile is not paired with a phone for pushes. */
  | { kind: 'unpaired' }
  /** The pairing has no usable end-to-end key, and the relay takes location requests sealed only. */
  | { kind: 'not_sealed' }
  /** The phone registered no location push token with the relay (409 location_push_unavailable). */
  | { kind: 'no_location_push' }
  /** The relay does not know location.request (one without `location-push-v1`). */
  | { kind: 'unsupported' }
  /** Anything else: unreachable relay, refused credential, APNs refusal. */
  | { kind: 'failed'; reason: string };

/** How the location feature reaches the phone through the relay. */
export interface LocationRelay {
  requestLocation(profile: ProfileScope, request: LocationPushRequest): Promise<LocationPushOutcome>;
}

export interface LocationSealContext {
  keys: E2eKeys;
  installationId: string;
  gatewayId: string;
  /** Unix seconds, stamped as `iat`. */
  nowS: number;
  nonce: Uint8Array;
  pluginVersion?: string;
}

const utf8 = new TextEncoder();

/**
 * A `location.request` event sealed for the phone: CRYPTO.md §1's envelope and associated data (type
 * `location.request`, `req` empty so no request id is in the clear), around locationRequestInner. The
 * event id the relay sees is keyed, as for every sealed event.
 */
export function sealLocationRequest(
  profile: string,
  request: LocationPushRequest,
  context: LocationSealContext,
): SealedEvent {
  const { keys } = context;
  if (context.nonce.length !== E2E_NONCE_BYTES) throw new RangeError('the E2E nonce must be 12 bytes');
  const type = 'location.request';
  const msg = keyedEventId(keys.meta, `location:${request.requestId}`);
  const tok = threadToken(keys.meta, msg);
  const iat = Math.floor(context.nowS);
  const inner: LocationRequestInner = {
    profile,
    location: { v: 1, kind: request.kind, request_id: request.requestId },
  };
  const { data, z } = compressIfSmaller(utf8.encode(JSON.stringify(inner)));
  const aad = pushAad({
    kid: keys.kid,
    installationId: context.installationId,
    gatewayId: context.gatewayId,
    msg,
    type,
    iat,
    tok,
    z,
    req: '',
  });
  const envelope: E2eEnvelope = {
    v: E2E_VERSION,
    kid: keys.kid,
    msg,
    iat,
    tok,
    z,
    req: '',
    n: encodeBase64Url(context.nonce),
    ct: encodeBase64Url(sealChaCha20Poly1305(keys.push, context.nonce, aad, data)),
  };
  return {
    event_id: msg,
    type,
    ...(context.pluginVersion ? { plugin_version: context.pluginVersion } : {}),
    e2e: envelope,
  };
}

/**
 * The real port: reads the profile's pairing at send time (as the notifier does), seals the request
 * and posts it with the host's relay gateway. Sent once, not queued: a locate waits on its answer, so
 * a push that cannot go now is reported to the tool, which answers with the latest fix instead.
 */
export function relayLocationPush(options: {
  gateway: RelayGateway;
  clock: Clock;
  pluginVersion?: string;
  randomBytes?: (length: number) => Uint8Array;
}): LocationRelay {
  const random = options.randomBytes ?? ((length: number) => new Uint8Array(randomBytes(length)));
  return {
    async requestLocation(profile, request) {
      let credentials;
      try {
        credentials = await readCredentials(profile.home);
      } catch {
        return { kind: 'failed', reason: 'credentials_unreadable' };
      }
      if (!isPaired(credentials)) return { kind: 'unpaired' };
      const e2e = e2eState(credentials);
      const keys = e2e.state === 'on' ? keysFromRecord(e2e.record) : null;
      const { installation_id: installationId, gateway_id: gatewayId } = credentials;
      if (!keys || !installationId || !gatewayId) return { kind: 'not_sealed' };
      const body = sealLocationRequest(profile.name, request, {
        keys,
        installationId,
        gatewayId,
        nowS: options.clock.now() / 1000,
        nonce: random(E2E_NONCE_BYTES),
        ...(options.pluginVersion ? { pluginVersion: options.pluginVersion } : {}),
      });
      const sent = await options.gateway.postEvent(
        { relayUrl: relayUrlOf(credentials), credential: credentials.credential },
        body,
      );
      switch (sent.kind) {
        case 'accepted':
          return { kind: 'sent', delivered: sent.delivered };
        case 'unpaired':
          return { kind: 'unpaired' };
        case 'retry':
          return { kind: 'failed', reason: sent.reason };
        case 'failed':
          if (sent.status === 409 && sent.error === 'location_push_unavailable') return { kind: 'no_location_push' };
          if (sent.status === 400 && sent.error === 'invalid_event_type') return { kind: 'unsupported' };
          return { kind: 'failed', reason: sent.error };
      }
    },
  };
}
