import { randomUUID } from 'node:crypto';
import { isPaired } from '../credentials/credential-file.js';
import { readCredentials } from '../credentials/credential-store.js';
import { decodeBase64Url, encodeBase64Url } from '../crypto/base64url.js';
import type { HostEvent, SealedEvent } from '@conduit/contracts/relay/events';
import { applyPrivacy, type ApplyPrivacyOptions } from '../crypto/privacy.js';
import type { PluginIdentity } from './plugin-hello.js';
import type { RelayApi } from './relay-api.js';
import { credentialRelayUrl, relayUrlText } from './relay-url.js';

/** `conduit push test`: a response.ready with fixed copy and a fresh id, through the full egress. */
export function testEvent(identity: PluginIdentity, profile: string): HostEvent {
  return {
    event_id: `test:${randomUUID()}`,
    type: 'response.ready',
    plugin_version: identity.version,
    plugin_capabilities: identity.capabilities,
    profile,
    title: 'Hermes Conduit',
    body: 'Push notifications are connected.',
  };
}

export type TestPushOutcome =
  | { kind: 'sent' }
  | { kind: 'not-paired' }
  /** `--corrupt` on a pairing without E2E: there is no ciphertext to break. */
  | { kind: 'e2e-off' }
  | { kind: 'failed'; message: string };

export interface TestPushOptions extends ApplyPrivacyOptions {
  home: string;
  profile: string;
  identity: PluginIdentity;
  relay: RelayApi;
  /** Flip one bit of the ciphertext: the phone must fail to verify it and keep the generic alert. */
  corrupt?: boolean;
}

export async function sendTestPush(options: TestPushOptions): Promise<TestPushOutcome> {
  if (!isPaired(await readCredentials(options.home))) return { kind: 'not-paired' };
  const prepared = await applyPrivacy(testEvent(options.identity, options.profile), options.home, options);
  if (!prepared) return { kind: 'not-paired' };
  let body = prepared.body;
  if (options.corrupt) {
    if (!('e2e' in body)) return { kind: 'e2e-off' };
    body = corruptCiphertext(body);
  }
  try {
    const relayUrl = relayUrlText(credentialRelayUrl(prepared.relayUrl));
    await options.relay.postEvent(relayUrl, prepared.credential, body);
    return { kind: 'sent' };
  } catch (error) {
    return { kind: 'failed', message: error instanceof Error ? error.message : String(error) };
  }
}

/** The envelope stays well formed (the relay accepts it); only bit 0 of the first ciphertext byte flips. */
export function corruptCiphertext(event: SealedEvent): SealedEvent {
  const ct = decodeBase64Url(event.e2e.ct);
  if (!ct || ct.length === 0) return event;
  const flipped = new Uint8Array(ct);
  flipped[0] = (flipped[0] ?? 0) ^ 0x01;
  return { ...event, e2e: { ...event.e2e, ct: encodeBase64Url(flipped) } };
}
