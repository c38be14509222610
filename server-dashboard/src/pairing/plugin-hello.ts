import { createHash } from 'node:crypto';
import type { HostEvent } from '@conduit/contracts/relay/events';

/** What this host reports to the relay on every event (the relay shows it to the phone in /v1/meta). */
export interface PluginIdentity {
  version: string;
  capabilities: string[];
}

/**
 * `plugin.hello`, sent right after pairing so the phone sees this host's version at once. Its id is
 * `hello:` + the first 32 hex of SHA-256 over the JSON list `["<version>"]`, so announcing the same
 * version twice is a duplicate the relay absorbs. Never sealed (privacy.ts).
 */
export function pluginHelloEvent(identity: PluginIdentity, profile: string): HostEvent {
  const digest = createHash('sha256')
    .update(JSON.stringify([identity.version]))
    .digest('hex')
    .slice(0, 32);
  return {
    event_id: `hello:${digest}`,
    type: 'plugin.hello',
    plugin_version: identity.version,
    plugin_capabilities: identity.capabilities,
    profile,
  };
}
