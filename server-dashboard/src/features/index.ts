import { MAPS_NAVIGATE_FEATURE, PRESENT_FEATURE } from '@conduit/contracts/dashboard/present';
import type { FeatureKernel, HostFeature } from '../kernel/feature.js';
import { artifactsFeature } from './artifacts/index.js';
import { callsFeature } from './calls/index.js';
import { geminiLiveFeature } from './gemini-live/index.js';
import { healthFeature } from './health/index.js';
import { locationFeature, locationMapsOrigin, locationMapsPhone, locationMapsReadLog } from './location/index.js';
import { mapsFeature, type MapsNavigator } from './maps/index.js';
import { phoneFeature } from './phone/index.js';
import { gptLiveFeature } from './gpt-live/index.js';
import { grokLiveFeature } from './grok-live/index.js';
import { memoryFeature } from './memory/index.js';
import { personalityFeature } from './personality/index.js';
import { roomFilesFeature, roomImagesFeature } from './rooms/index.js';
import { desktopViewsFeature, sessionTakeoverFeature } from './sessions/index.js';
import { speechServerFeature } from './speech-server/index.js';
import { voiceSessionsFeature } from './voice-sessions/index.js';
import { voiceToolsFeature } from './voice-tools/index.js';
import { createPrompt, lastExchangeAdvertises, presentFeature, relayPresentNudge } from './present/index.js';
import { conduitSettingsFeature } from './conduit-settings/index.js';
import { watchToolsFeature } from './watch/index.js';
import { watchAudioFeature } from './watch-audio/index.js';
import { webSearchFeature } from './web-search/index.js';

/**
 * Maps' navigate through present (features never import each other; this is where they meet): a
 * confirm prompt carrying `maps`, nudged like any prompt, offered while the profile's last exchange
 * advertised both present-v1 and maps-navigate.
 */
export function presentMapsNavigator(kernel: FeatureKernel): MapsNavigator {
  const nudge = relayPresentNudge({
    gateway: kernel.relayGateway,
    clock: kernel.clock,
    pluginVersion: kernel.loadedVersion,
  });
  return {
    async canNavigate(home) {
      const nowS = kernel.clock.now() / 1000;
      return (
        (await lastExchangeAdvertises(home, PRESENT_FEATURE, nowS)) &&
        (await lastExchangeAdvertises(home, MAPS_NAVIGATE_FEATURE, nowS))
      );
    },
    async ask(profile, prompt) {
      const created = await createPrompt(profile.home, prompt, kernel.clock.now() / 1000);
      if (!created.ok) return { ok: false, message: created.message };
      const nudged = await nudge.nudge(profile, created.prompt);
      return {
        ok: true,
        promptId: created.prompt.id,
        expiresAtS: created.prompt.expires_at,
        phoneNotified: nudged.kind === 'sent',
      };
    },
  };
}

/**
 * The features this service registers, in the order their capabilities are listed (the reference's
 * order). A new feature is a folder beside these and one line here.
 */
export const HOST_FEATURES: readonly HostFeature[] = [
  geminiLiveFeature,
  webSearchFeature,
  memoryFeature,
  personalityFeature,
  gptLiveFeature,
  grokLiveFeature,
  speechServerFeature,
  voiceSessionsFeature,
  sessionTakeoverFeature,
  desktopViewsFeature,
  callsFeature,
  roomFilesFeature,
  roomImagesFeature,
  artifactsFeature,
  healthFeature,
  locationFeature(),
  phoneFeature,
  mapsFeature({
    origin: (kernel) => locationMapsOrigin(kernel.clock),
    readLog: locationMapsReadLog(),
    phone: (kernel) => locationMapsPhone({ clock: kernel.clock }),
    navigator: presentMapsNavigator,
  }),
  voiceToolsFeature(),
  presentFeature(),
  conduitSettingsFeature(),
  watchToolsFeature,
  watchAudioFeature,
];
