/**
 * The Conduit SDK: typed clients for the push relay, the host service's plugin routes and the voice
 * gateway, and each surface's Zod contracts under its own namespace (`relay`, `dashboard`, `voice`).
 * Each surface is also its own entry: `@conduit/sdk/relay`, `@conduit/sdk/dashboard`, `@conduit/sdk/voice`.
 */
export { createRelayClient } from '../relay/client.js';
export { createDashboardClient } from '../dashboard/client.js';
export { createVoiceClient } from '../voice/client.js';
export * as relay from './relay.js';
export * as dashboard from './dashboard.js';
export * as voice from './voice.js';
