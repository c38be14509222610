import { LOCATION_LABEL } from '@conduit/contracts/dashboard/location';
import { LOCATION_SHAPE } from './location-store.js';
import { LOCATION_TOOL } from './location-tool.js';
import {
  LOCATION_VOICE_DESCRIPTION,
  locationVoiceAvailable,
  locationVoiceInput,
  locationVoiceRead,
} from './location-voice.js';
import { voiceParameters, type VoiceToolProvider } from '../../kernel/phone-data/voice-tool-provider.js';

/**
 * conduit_location as a voice read (the seed, Location's voice reads): now, places, history and
 * distance_to for the asking device only, never its coordinates, logged as the voice mode's call.
 */
export const locationVoiceTool: VoiceToolProvider = {
  name: LOCATION_TOOL,
  key: 'location',
  label: LOCATION_LABEL,
  shape: LOCATION_SHAPE,
  describe: () => ({ description: LOCATION_VOICE_DESCRIPTION, parameters: voiceParameters(locationVoiceInput) }),
  available: locationVoiceAvailable,
  read: (home, deviceId, args, context) =>
    locationVoiceRead(home, deviceId, args, { via: context.via, nowS: context.nowS }),
};
