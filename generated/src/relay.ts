/**
 * The Conduit push relay: a typed client over its locked OpenAPI snapshot and the Zod contracts of its
 * routes and host events, for validating what you send or receive at run time.
 */
export { createRelayClient } from '../relay/client.js';
export type { paths, components, operations } from '../relay/schema.js';
export { relaySurface } from '@conduit/contracts/relay/index';
export * from '@conduit/contracts/relay/events';
export * from '@conduit/contracts/crypto/e2e';
