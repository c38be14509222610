import type { HostFeature } from '../kernel/feature.js';
import { artifactsFeature } from './artifacts/index.js';
import { callsFeature } from './calls/index.js';
import { geminiLiveFeature } from './gemini-live/index.js';
import { healthFeature } from './health/index.js';
import { locationFeature, locationMapsOrigin, locationMapsPhone, locationMapsReadLog } from './location/index.js';
import { mapsFeature } from './maps/index.js';
import { gptLiveFeature } from './gpt-live/index.js';
import { grokLiveFeature } from './grok-live/index.js';
import { memoryFeature } from './memory/index.js';
import { personalityFeature } from './personality/index.js';
import { roomFilesFeature, roomImagesFeature } from './rooms/index.js';
import { desktopViewsFeature, sessionTakeoverFeature } from './sessions/index.js';
import { speechServerFeature } from './speech-server/index.js';
import { voiceSessionsFeature } from './voice-sessions/index.js';
import { voiceToolsFeature } from './voice-tools/index.js';
import { presentFeature } from './present/index.js';
import { watchToolsFeature } from './watch/index.js';
import { webSearchFeature } from './web-search/index.js';

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
  mapsFeature({
    origin: (kernel) => locationMapsOrigin(kernel.clock),
    readLog: locationMapsReadLog(),
    phone: (kernel) => locationMapsPhone({ clock: kernel.clock }),
  }),
  voiceToolsFeature(),
  presentFeature(),
  watchToolsFeature,
];
