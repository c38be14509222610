/**
 * The realtime voice gateway: a typed client for its HTTP signalling (discovery, call setup) over the
 * locked OpenAPI snapshot, and the Zod contracts of its routes and of the Realtime events on the
 * `oai-events` data channel.
 */
export { createVoiceClient } from '../voice/client.js';
export type { paths, components, operations } from '../voice/schema.js';
export * from '@conduit/contracts/voice/index';
