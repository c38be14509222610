import type { Surface } from '../route.js';
import { getCapabilities, capabilitiesResponse, postPluginUpdate, postSelfRestart } from './capabilities.js';

import {
  getCronNotifications,
  putCronNotifications,
  getReplySources,
  putReplySources,
} from './notification-settings.js';
import { postPair } from './pair.js';
import { getE2e, postE2e } from './e2e.js';

import { respondApproval } from './approvals.js';
import { getMetrics } from './metrics.js';
import { getGeminiLiveStatus, postGeminiLiveToken } from './gemini-live.js';
import { getWebSearchStatus, postWebSearch } from './web-search.js';
import { getMemoryContext, postMemoryRecall } from './memory.js';
import { getPersonality } from './personality.js';
import { getGptLiveStatus, postGptLiveSession } from './gpt-live.js';
import { getGrokLiveStatus, grokLiveSocket } from './grok-live.js';
import { localLiveSocket } from './speech-server.js';
import {
  getLocalLiveStatus,
  rotateLocalLiveKey,
  postLocalLiveChatCompletions,
  postLocalLiveResponses,
} from './local-live.js';
import { postSessionTakeover, getDesktopViews } from './sessions.js';
import { getArtifacts } from './artifacts.js';
import { postHealthKey, postHealthIngest, getHealthStatus, postHealthWipe } from './health.js';
import { postPhoneKey, postPhoneIngest, getPhoneStatus, postPhoneWipe, postPhoneExchange } from './phone.js';
import { getVoiceTools, postVoiceToolCall } from './voice-tools.js';
import { postPresentExchange } from './present.js';
import { putConduitSettings } from './conduit-settings.js';
import { postWatchToolsGrant, postWatchToolsRevoke } from './watch-tools.js';
import { getWatchAudioStatus, postWatchAudioPrepare } from './watch-audio.js';
import {
  deleteLocationRule,
  getLocationRules,
  getLocationMapsLookup,
  postLocationMapsAnswer,
  getLocationReads,
  getLocationStatus,
  postLocationIngest,
  postLocationKey,
  postLocationWipe,
} from './location.js';
import { postRoomFile, getRoomImages, getRoomImage, putRoomImage, deleteRoomImage } from './rooms.js';
import {
  postVoiceSession,
  getVoiceChatCalls,
  getVoiceTags,
  postVoiceTag,
  getVoiceSummary,
  postVoiceSummary,
} from './voice-sessions.js';
import {
  getCalls,
  putCalls,
  postCallWatch,
  putCallWatch,
  deleteCallWatch,
  putCallPresence,
  postCallOutcome,
} from './calls.js';

export { getCapabilities, capabilitiesResponse, postPluginUpdate, postSelfRestart };
export { respondApproval };
export { getCronNotifications, putCronNotifications, getReplySources, putReplySources };
export { postPair, getE2e, postE2e };
export { getMetrics };
export { getGeminiLiveStatus, postGeminiLiveToken, getWebSearchStatus, postWebSearch };
export { getMemoryContext, postMemoryRecall, getPersonality };
export { getGptLiveStatus, postGptLiveSession };
export { getGrokLiveStatus, grokLiveSocket, localLiveSocket };
export { getLocalLiveStatus, rotateLocalLiveKey, postLocalLiveChatCompletions, postLocalLiveResponses };
export { postVoiceSession, getVoiceChatCalls, getVoiceTags, postVoiceTag, getVoiceSummary, postVoiceSummary };
export { postSessionTakeover, getDesktopViews };
export { postHealthKey, postHealthIngest, getHealthStatus, postHealthWipe };
export { postPhoneKey, postPhoneIngest, getPhoneStatus, postPhoneWipe, postPhoneExchange };
export { getVoiceTools, postVoiceToolCall };
export { getLocationReads, getLocationStatus, postLocationIngest, postLocationKey, postLocationWipe };
export {
  getLocationMapsLookup,
  postLocationMapsAnswer,
  postPresentExchange,
  postWatchToolsGrant,
  postWatchToolsRevoke,
};
export { putConduitSettings };
export { getArtifacts, postRoomFile, getRoomImages, getRoomImage, putRoomImage, deleteRoomImage };
export { getCalls, putCalls, postCallWatch, putCallWatch, deleteCallWatch, putCallPresence, postCallOutcome };

/** The host service's plugin routes, served where the Conduit app expects the Hermes dashboard. */
export const dashboardSurface = {
  name: 'dashboard',
  title: 'Conduit host service (dashboard plugin routes)',
  version: '0.1.0',
  description: 'The /api/plugins/conduit_push/* routes the Conduit app calls on the Hermes host.',
  routes: {
    getCapabilities,
    postSelfRestart,
    postPluginUpdate,
    getCronNotifications,
    putCronNotifications,
    getReplySources,
    putReplySources,
    postPair,
    getE2e,
    postE2e,
    respondApproval,
    getMetrics,
    getGeminiLiveStatus,
    postGeminiLiveToken,
    getWebSearchStatus,
    postWebSearch,
    getMemoryContext,
    postMemoryRecall,
    getPersonality,
    getGptLiveStatus,
    postGptLiveSession,
    getGrokLiveStatus,
    grokLiveSocket,
    localLiveSocket,
    getLocalLiveStatus,
    rotateLocalLiveKey,
    postLocalLiveChatCompletions,
    postLocalLiveResponses,
    postVoiceSession,
    getVoiceChatCalls,
    getVoiceTags,
    postVoiceTag,
    getVoiceSummary,
    postVoiceSummary,
    postSessionTakeover,
    getDesktopViews,
    getCalls,
    putCalls,
    postCallWatch,
    putCallWatch,
    deleteCallWatch,
    putCallPresence,
    postCallOutcome,
    postRoomFile,
    getRoomImages,
    getRoomImage,
    putRoomImage,
    deleteRoomImage,
    getArtifacts,
    postHealthKey,
    postHealthIngest,
    getHealthStatus,
    postHealthWipe,
    postLocationKey,
    postLocationIngest,
    getLocationStatus,
    getLocationReads,
    postLocationWipe,
    getLocationMapsLookup,
    postLocationMapsAnswer,
    getLocationRules,
    deleteLocationRule,
    postPhoneKey,
    postPhoneIngest,
    getPhoneStatus,
    postPhoneWipe,
    postPhoneExchange,
    getVoiceTools,
    postVoiceToolCall,
    postPresentExchange,
    putConduitSettings,
    postWatchToolsGrant,
    postWatchToolsRevoke,
    getWatchAudioStatus,
    postWatchAudioPrepare,
  },
} satisfies Surface;
