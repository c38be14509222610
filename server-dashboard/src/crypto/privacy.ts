import { randomBytes as nodeRandomBytes } from 'node:crypto';
import { e2eState, isPaired, relayUrlOf, type CredentialFile } from '../credentials/credential-file.js';
import { readCredentials, unchanged, updateCredentials } from '../credentials/credential-store.js';
import { keyedEventId, keysFromRecord } from './e2e-keys.js';
import type { ContentFreeEvent, HostEvent, OutgoingEvent } from '@conduit/contracts/relay/events';
import { E2eSealError, sealEvent, versionFields } from './e2e-seal.js';
import { isRedactKey, redactEvent, redactedEventId } from './redaction.js';

/**
 * What leaves the host for one event: `build_outgoing = seal(redact(event))` (EVENTS.md §3), decided at
 * SEND time from the credential file as it is then. A queued event therefore follows `redact on|off`
 * and a newly provisioned E2E key even if it was enqueued before the change (the seed: "redact off
 * restores full content, including for events still waiting in the local delivery queue").
 */
export type PrivacyMode = 'plain' | 'redacted' | 'sealed' | 'content-free';

export interface PrivacyContext {
  /** Unix seconds, stamped as the envelope's `iat`. */
  nowSeconds: number;
  randomBytes: (length: number) => Uint8Array;
}

export interface Outgoing {
  body: OutgoingEvent;
  mode: PrivacyMode;
  /** A redact key this call had to mint; the caller persists it so retries keep the same ids. */
  mintedRedactKey?: string;
}

/** Applies redaction and sealing to an event for a paired profile. Pure: no IO. */
export function buildOutgoing(event: HostEvent, credentials: CredentialFile, context: PrivacyContext): Outgoing {
  let mintedRedactKey: string | undefined;
  const redactKey = (): string => {
    if (isRedactKey(credentials.redact_key)) return credentials.redact_key;
    mintedRedactKey ??= Buffer.from(context.randomBytes(32)).toString('hex');
    return mintedRedactKey;
  };
  const withKey = (outgoing: Omit<Outgoing, 'mintedRedactKey'>): Outgoing =>
    mintedRedactKey ? { ...outgoing, mintedRedactKey } : outgoing;

  const redacted = credentials.redact_content === true ? redactEvent(event, redactKey()) : event;
  const e2e = e2eState(credentials);
  // plugin.hello carries only the version; the relay never shows it, so it is never sealed.
  if (e2e.state === 'off' || event.type === 'plugin.hello') {
    return withKey({ body: redacted, mode: redacted === event ? 'plain' : 'redacted' });
  }
  const keys = e2e.state === 'on' ? keysFromRecord(e2e.record) : null;
  const installationId = credentials.installation_id;
  const gatewayId = credentials.gateway_id;
  if (keys && installationId && gatewayId) {
    try {
      const sealed = sealEvent(redacted, {
        keys,
        installationId,
        gatewayId,
        nowSeconds: context.nowSeconds,
        nonce: () => context.randomBytes(12),
      });
      return withKey({ body: sealed, mode: 'sealed' });
    } catch (error) {
      if (!(error instanceof E2eSealError)) throw error;
      return withKey({ body: contentFree(redacted, keyedEventId(keys.meta, redacted.event_id)), mode: 'content-free' });
    }
  }
  // An encrypted pairing whose key cannot seal: never fall back to plaintext.
  return withKey({
    body: contentFree(redacted, redactedEventId(redactKey(), redacted.event_id)),
    mode: 'content-free',
  });
}

function contentFree(event: HostEvent, eventId: string): ContentFreeEvent {
  return { event_id: eventId, type: event.type, ...versionFields(event) };
}

/** Everything a sender needs for one POST /v1/events, read from the profile at send time. */
export interface PreparedDelivery extends Outgoing {
  relayUrl: string;
  /** The gateway credential (Bearer). Never log it. */
  credential: string;
}

export interface ApplyPrivacyOptions {
  clock?: () => number;
  randomBytes?: (length: number) => Uint8Array;
}

/**
 * The call a delivery queue makes right before it posts an event: reads the profile's credential file,
 * applies redaction and sealing, and persists a redact key it had to mint (under the file lock, keeping
 * one that another writer stored meanwhile). Null when the profile is not paired (drop the event).
 * Throws CorruptCredentialsError when the file is unreadable.
 */
export async function applyPrivacy(
  event: HostEvent,
  home: string,
  options: ApplyPrivacyOptions = {},
): Promise<PreparedDelivery | null> {
  const clock = options.clock ?? Date.now;
  const random = options.randomBytes ?? ((length: number) => new Uint8Array(nodeRandomBytes(length)));
  const credentials = await readCredentials(home);
  if (!isPaired(credentials)) return null;
  const context = { nowSeconds: Math.floor(clock() / 1000), randomBytes: random };
  const outgoing = buildOutgoing(event, credentials, context);
  if (!outgoing.mintedRedactKey) {
    return { ...outgoing, relayUrl: relayUrlOf(credentials), credential: credentials.credential };
  }
  const minted = outgoing.mintedRedactKey;
  return updateCredentials(home, (current) => {
    if (!isPaired(current)) return { next: unchanged, result: null };
    const next = isRedactKey(current.redact_key) ? current : { ...current, redact_key: minted };
    const again = buildOutgoing(event, next, context);
    return {
      next: next === current ? unchanged : next,
      result: { ...again, relayUrl: relayUrlOf(next), credential: next.credential },
    };
  });
}
