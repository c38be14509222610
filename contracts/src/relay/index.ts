import type { Surface } from '../route.js';
import { healthz } from './health.js';
import { deleteInstallation, registerInstallation, updateInstallation } from './installations.js';
import { claimPairing, createPairing, revokeCurrentGateway } from './pairings.js';
import { postEvent } from './events.js';
import { pollDecision, releaseDecision, respondDecision, respondDecisionLegacy } from './decisions.js';
import { getMeta } from './meta.js';
import { fetchRingSession, settleRing, storeRingSession } from './rings.js';
import { closeWatchGrant, createWatchGrant, pollWatchCalls, postWatchCall, postWatchResult } from './watch-tools.js';
import { watchAudioHost, watchAudioWatch } from './watch-audio.js';
import { registerLiveActivity, removeLiveActivity, reportLiveActivityProgress } from './live-activities.js';
import { mintMapsToken } from './maps.js';
import { getMetrics } from './metrics.js';

export {
  healthz,
  registerInstallation,
  updateInstallation,
  deleteInstallation,
  createPairing,
  claimPairing,
  revokeCurrentGateway,
  postEvent,
  respondDecision,
  respondDecisionLegacy,
  pollDecision,
  releaseDecision,
  getMeta,
  settleRing,
  storeRingSession,
  fetchRingSession,
  createWatchGrant,
  postWatchCall,
  pollWatchCalls,
  postWatchResult,
  closeWatchGrant,
  watchAudioHost,
  watchAudioWatch,
  registerLiveActivity,
  removeLiveActivity,
  reportLiveActivityProgress,
  mintMapsToken,
  getMetrics,
};

/** The push relay's wire surface: every route the Conduit app, the Watch and host plugins call. */
export const relaySurface = {
  name: 'relay',
  title: 'Conduit push relay',
  version: '0.11.0',
  description:
    'Registers phones and Watches, pairs Hermes hosts with them and delivers host events through APNs. Wire-compatible with the reference relay.',
  routes: {
    healthz,
    registerInstallation,
    updateInstallation,
    deleteInstallation,
    settleRing,
    storeRingSession,
    fetchRingSession,
    createPairing,
    claimPairing,
    postEvent,
    respondDecision,
    respondDecisionLegacy,
    pollDecision,
    releaseDecision,
    revokeCurrentGateway,
    getMeta,
    createWatchGrant,
    postWatchCall,
    pollWatchCalls,
    postWatchResult,
    closeWatchGrant,
    watchAudioHost,
    watchAudioWatch,
    registerLiveActivity,
    removeLiveActivity,
    reportLiveActivityProgress,
    mintMapsToken,
    getMetrics,
  },
} satisfies Surface;
