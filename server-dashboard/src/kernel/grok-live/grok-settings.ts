import { GROK_LIVE_NAME_PATTERN } from '@conduit/contracts/dashboard/grok-live';
import { configSection, type ProfileFiles } from '../profile-files.js';

/**
 * Grok Live's upstream settings, shared by the features that open an xAI realtime call (grok-live for
 * the phone's socket, watch-audio for the Watch's audio line).
 */

/** xAI's realtime socket (the seed, Grok Live). */
export const XAI_REALTIME_ORIGIN = 'wss://api.x.ai';

const DEFAULT_MODEL = 'grok-voice-latest';
const DEFAULT_VOICE = 'eve';

/** `value` when it is a model or voice name of the allowed shape, else the default. */
function nameOr(value: unknown, fallback: string): string {
  return typeof value === 'string' && GROK_LIVE_NAME_PATTERN.test(value.trim()) ? value.trim() : fallback;
}

/** The profile's Grok Live model and voice (`voice.grok_live`, CONDUIT_GROK_LIVE_MODEL), else the defaults. */
export function grokSettings(files: ProfileFiles): { model: string; voice: string } {
  const grok = configSection(configSection(files.config, 'voice'), 'grok_live');
  return {
    model: nameOr(files.env('CONDUIT_GROK_LIVE_MODEL') ?? grok.model, DEFAULT_MODEL),
    voice: nameOr(grok.voice, DEFAULT_VOICE),
  };
}
