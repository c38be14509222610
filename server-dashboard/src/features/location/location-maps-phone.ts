import { randomBytes } from 'node:crypto';
import { LOCATION_LABEL, LOCATION_MAPS_FEATURE } from '@conduit/contracts/dashboard/location';
import type { Clock } from '../../clock.js';
import { httpRelayGateway } from '../../delivery/relay-gateway.js';
import type { ProfileScope } from '../../notifier/notifier.js';
import { deviceKeys, mapsAad, openWith, sealWith } from '../../kernel/phone-data/sealing.js';
import { PhoneDataStore } from '../../kernel/phone-data/store.js';
import { LOCATION_HOST_LIMITS } from './location-limits.js';
import { latestFix } from './location-reads.js';
import { relayLocationPush, type LocationPushOutcome, type LocationRelay } from './location-relay.js';
import { LOCATION_SHAPE, stateOf, storedSharing } from './location-store.js';

/**
 * The user's iPhone as maps' phone path needs it, in the shape of maps' port (features/maps/maps-ports.ts:
 * MapsPhone), written structurally so neither feature imports the other; features/index.ts hands it to
 * mapsFeature. The location key stays here: maps gets sealed bytes and opened plaintext, never a key.
 */

export interface MapsPhoneSealedParts {
  deviceId: string;
  kid: string;
  lookupId: string;
  nonce: Uint8Array;
  ct: Uint8Array;
}

const WAKE_REFUSALS: Record<Exclude<LocationPushOutcome['kind'], 'sent'>, string> = {
  unpaired: 'This profile is not paired with Conduit for pushes, so the iPhone cannot be asked.',
  not_sealed:
    'The pairing has no end-to-end encryption, and the iPhone is only ever asked sealed; pair Conduit again to turn it on.',
  no_location_push: 'The iPhone has not registered for location requests with the relay (update or reopen Conduit).',
  unsupported: "The pairing's relay does not support location requests.",
  failed: 'The relay could not take the request for the iPhone now.',
};

function withStore<T>(home: string, work: (store: PhoneDataStore) => T): T | null {
  const store = PhoneDataStore.open(home, LOCATION_SHAPE, false);
  if (!store) return null;
  try {
    return work(store);
  } finally {
    store.close();
  }
}

export function locationMapsPhone(options: { clock: Clock; relay?: LocationRelay }) {
  const relay =
    options.relay ??
    relayLocationPush({
      gateway: httpRelayGateway({ userAgent: 'Conduit-Host', timeoutMs: LOCATION_HOST_LIMITS.relayTimeoutMs }),
      clock: options.clock,
    });

  /** The device's location keys, or null when it has none here (or the kid is not its current one). */
  function keysOf(store: PhoneDataStore, deviceId: string, kid: string) {
    const device = store.device(deviceId);
    if (!device || device.kid !== kid) return null;
    const host = store.hostKey(options.clock.now() / 1000);
    return deviceKeys(LOCATION_LABEL, host.secret, host.public, new Uint8Array(device.device_key));
  }

  return {
    answering(home: string): { deviceId: string; kid: string; detail: 'precise' | 'area' | 'places' } | null {
      return withStore(home, (store) => {
        // The phone that sent the latest batch among those that can answer: the one the user carries now.
        const candidates = storedSharing(store)
          .filter(
            (sharing) =>
              stateOf(sharing) === 'on' && sharing.background && sharing.features.includes(LOCATION_MAPS_FEATURE),
          )
          .flatMap((sharing) => {
            const device = store.device(sharing.deviceId);
            return device ? [{ sharing, device }] : [];
          })
          .sort((a, b) => (b.device.last_batch_at ?? 0) - (a.device.last_batch_at ?? 0));
        const chosen = candidates[0];
        if (!chosen) return null;
        return {
          deviceId: chosen.device.device_id,
          kid: chosen.device.kid,
          detail: chosen.sharing.precision.background,
        };
      });
    },
    kidOf(home: string, deviceId: string): string | null {
      return withStore(home, (store) => store.device(deviceId)?.kid ?? null);
    },
    seal(
      home: string,
      target: { deviceId: string; kid: string; lookupId: string },
      plaintext: Uint8Array,
    ): MapsPhoneSealedParts | null {
      return withStore(home, (store) => {
        const keys = keysOf(store, target.deviceId, target.kid);
        if (!keys) return null;
        const nonce = new Uint8Array(randomBytes(12));
        const aad = mapsAad(LOCATION_LABEL, target.kid, target.deviceId, target.lookupId);
        return { ...target, nonce, ct: sealWith(keys.keys['maps host-to-device'], nonce, aad, plaintext) };
      });
    },
    open(home: string, sealed: MapsPhoneSealedParts): Uint8Array | 'unknown_key' | 'does_not_open' {
      const opened = withStore(home, (store): Uint8Array | 'unknown_key' | 'does_not_open' => {
        const keys = keysOf(store, sealed.deviceId, sealed.kid);
        if (!keys) return 'unknown_key';
        const aad = mapsAad(LOCATION_LABEL, sealed.kid, sealed.deviceId, sealed.lookupId);
        return openWith(keys.keys['maps device-to-host'], sealed.nonce, aad, sealed.ct) ?? 'does_not_open';
      });
      return opened ?? 'unknown_key';
    },
    async wake(
      profile: ProfileScope,
      lookupId: string,
    ): Promise<{ kind: 'sent' } | { kind: 'refused'; reason: string }> {
      const outcome = await relay.requestLocation(profile, { kind: 'maps', requestId: lookupId });
      return outcome.kind === 'sent' ? { kind: 'sent' } : { kind: 'refused', reason: WAKE_REFUSALS[outcome.kind] };
    },
    straightLine(home: string, placeName: string): { place: string; m: number; ageS: number } | null {
      const fix = latestFix(home, { maxAgeS: LOCATION_HOST_LIMITS.mapsMeMaxAgeS, nowS: options.clock.now() / 1000 });
      if (!fix) return null;
      const wanted = placeName.trim().toLowerCase();
      if (fix.place && fix.place.name.toLowerCase() === wanted) return { place: fix.place.name, m: 0, ageS: fix.age_s };
      const distance = fix.distances.find((entry) => entry.place.toLowerCase() === wanted);
      return distance ? { place: distance.place, m: distance.m, ageS: fix.age_s } : null;
    },
  };
}
