import { randomBytes } from 'node:crypto';
import { LOCATION_LABEL, LOCATION_READ_ACTIONS, locationReadArgs } from '@conduit/contracts/dashboard/location';
import { z } from 'zod';
import { PhoneDataStore } from '../../kernel/phone-data/store.js';
import { openVoiceCall, sealVoiceAnswer, type SealedVoiceCall } from '../../kernel/phone-data/voice-reads.js';
import { readLocation, type LocationReadResult } from './location-reads.js';
import { LOCATION_SHAPE } from './location-store.js';
import { LOCATION_TOOL, locationToolInput } from './location-tool.js';

/**
 * A voice mode's location read (the seed's voice reads, plugin 0.28): Conduit offers the voice model
 * conduit_location with now, places, history and distance_to only, and the host answers for the
 * asking device alone (matched by id and its current location key), never with coordinates (area,
 * saved place and distances only). Each read is logged under the voice mode's name.
 *
 * Two ways in: `readLocationForVoice` answers a whole sealed call (open, read, seal); the voice-tools
 * route, which opens and seals itself, calls `locationVoiceRead` with the device the seal proved.
 */

/** The voice modes that may read location, as the read log names them. */
export const VOICE_READERS: Readonly<Record<string, string>> = {
  'gemini-live': 'Gemini Live call',
  'grok-live': 'Grok Live call',
  'gpt-live': 'GPT-Live call',
};

/**
 * What a voice model is offered: the tool's read parameters only, without `device` (the asking phone is
 * the device), `_conduit_context` (no hook signs a voice call), `locate` (a voice read only reads) and
 * the place rules' actions and fields (a voice read never changes Hermes' jobs).
 */
const { hours, limit, lat, lon } = locationToolInput;
export const locationVoiceInput = {
  action: z.enum(LOCATION_READ_ACTIONS).describe('now first; distance_to takes place (a saved place, by name or id).'),
  hours,
  limit,
  place: z.string().optional().describe('distance_to: a saved place, by name or id.'),
  lat,
  lon,
};

export const LOCATION_VOICE_DESCRIPTION =
  'Where the user is, as their iPhone shares it with their Hermes profile through Conduit, at the detail they chose: now (the ' +
  'saved place or area the phone is in, and distances to saved places), places (saved places), history (recent places and ' +
  'arrivals/departures) and distance_to (straight-line distance to a saved place). Answers "paused" or "off" when the user ' +
  'paused or turned off sharing. Every read is logged for the user.';

/** The arguments a voice read takes, strictly: a `device`, `locate` or anything else is refused, not ignored. */
const locationVoiceArgs = locationReadArgs.omit({ device: true }).strict();

/** Whether this device shares location (it has sent a batch under its current key). */
export function locationVoiceAvailable(home: string, deviceId: string): boolean {
  const store = PhoneDataStore.open(home, LOCATION_SHAPE, false);
  try {
    return store !== null && store.batchCount(deviceId) > 0;
  } finally {
    store?.close();
  }
}

/**
 * A voice read for `deviceId` only, whatever the arguments say: `{result}` to seal back, or `{refused}`
 * for arguments a voice read does not take. `via` names the voice mode in the read log.
 */
export function locationVoiceRead(
  home: string,
  deviceId: string,
  rawArgs: Record<string, unknown>,
  context: { via: string; nowS: number },
): { result: LocationReadResult } | { refused: string } {
  const parsed = locationVoiceArgs.safeParse(rawArgs);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    if (issue?.code === 'unrecognized_keys') {
      return { refused: `${String(issue.keys[0])} is not an argument of a ${LOCATION_TOOL} voice read` };
    }
    const field = issue?.path[0];
    return {
      refused:
        field === 'action'
          ? `A voice read offers ${LOCATION_READ_ACTIONS.join(', ')} only`
          : `${typeof field === 'string' ? field : 'arguments'} is missing or invalid`,
    };
  }
  return {
    result: readLocation(home, parsed.data, {
      nowS: context.nowS,
      via: context.via,
      chat: null,
      onlyDevice: deviceId,
      withoutCoordinates: true,
    }),
  };
}

export type LocationVoiceAnswer =
  /** The answer sealed for the asking device (`voice host-to-device`), `{call_id, result}` inside. */
  | { status: 200; body: SealedVoiceCall }
  /**
   * 400: not a voice call, not conduit_location, an unknown provider, a seal that does not open, or
   * arguments a voice read does not take; 412: the device has no location key here (never agreed,
   * wiped or replaced).
   */
  | { status: 400 | 412; detail: string };

/**
 * Answers a sealed voice call (the `{v, device_id, kid, call_id, tool, nonce, ct}` envelope): opens it
 * with the device's location key, reads for that device only and seals the result back. What a read
 * says about the data (sharing paused, no such place) travels sealed inside `result`.
 */
export function readLocationForVoice(
  home: string,
  call: unknown,
  options: { nowS: number; nonce?: Uint8Array },
): LocationVoiceAnswer {
  const store = PhoneDataStore.open(home, LOCATION_SHAPE, false);
  if (!store) return { status: 412, detail: 'This device has no location key here; set up a new key' };
  let opened;
  try {
    opened = openVoiceCall(store, LOCATION_LABEL, call, options.nowS);
  } finally {
    store.close();
  }
  if (opened === 'unknown_key')
    return { status: 412, detail: 'This device has no location key here; set up a new key' };
  if (opened === 'invalid') return { status: 400, detail: 'The voice call is invalid' };
  if (opened === 'does_not_open') return { status: 400, detail: 'The voice call does not open with this device key' };
  if (opened.tool !== LOCATION_TOOL) return { status: 400, detail: `Only ${LOCATION_TOOL} is read here` };
  const via = VOICE_READERS[opened.provider];
  if (via === undefined) return { status: 400, detail: 'The voice provider is not one that may read location' };
  const read = locationVoiceRead(home, opened.deviceId, opened.args, { via, nowS: options.nowS });
  if ('refused' in read) return { status: 400, detail: read.refused };
  return { status: 200, body: sealVoiceAnswer(LOCATION_LABEL, opened, read.result, options.nonce ?? randomBytes(12)) };
}
