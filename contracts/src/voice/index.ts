import type { Surface } from '../route.js';
import { callOptions, callOptionsAlias, createCall, createCallAlias } from './calls.js';
import { getDiscovery, discoveryOptions, discoveryResponse } from './discovery.js';
import { getMetrics } from './metrics.js';

export {
  getDiscovery,
  discoveryOptions,
  discoveryResponse,
  createCall,
  createCallAlias,
  callOptions,
  callOptionsAlias,
  getMetrics,
};
export * from './events.js';

/** The voice gateway's HTTP signalling surface (the media and events ride WebRTC). */
export const voiceSurface = {
  name: 'voice',
  title: 'Conduit realtime voice gateway',
  version: '0.1.0',
  description: 'OpenAI-compatible WebRTC signalling for realtime voice with Hermes.',
  routes: { getDiscovery, discoveryOptions, createCall, createCallAlias, callOptions, callOptionsAlias, getMetrics },
} satisfies Surface;
