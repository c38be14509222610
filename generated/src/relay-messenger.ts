/**
 * The Relay messenger server's HTTP API, typed from its vendored, locked OpenAPI contract: what the
 * host's messenger connector calls.
 */
export { createRelayMessengerClient } from '../relay-messenger/client.js';
export type { paths, components, operations } from '../relay-messenger/schema.js';
