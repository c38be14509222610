import { createHash } from 'node:crypto';
import type { HostEvent } from '@conduit/contracts/relay/events';
import { applyPrivacy, type ApplyPrivacyOptions } from '../crypto/privacy.js';
import type { RelayApi } from './relay-api.js';
import { credentialRelayUrl, relayUrlText } from './relay-url.js';

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

export interface AnnounceOptions extends ApplyPrivacyOptions {
  identity: PluginIdentity;
  relay: RelayApi;
}

const HELLO_TIMEOUT_MS = 4_000;

/**
 * Sends `plugin.hello` for a profile just paired (nothing when it is not paired). Throws what the relay
 * or the credential file answered: the pairing stands either way, each caller says so its own way.
 */
export async function announcePlugin(home: string, profile: string, options: AnnounceOptions): Promise<void> {
  const hello = await applyPrivacy(pluginHelloEvent(options.identity, profile), home, options);
  if (!hello) return;
  await options.relay.postEvent(
    relayUrlText(credentialRelayUrl(hello.relayUrl)),
    hello.credential,
    hello.body,
    HELLO_TIMEOUT_MS,
  );
}
