import type { HostEvent } from '@conduit/contracts/relay/events';
import type { Clock } from '../clock.js';
import { applyPrivacy } from '../crypto/privacy.js';
import type { RelayGateway } from '../delivery/relay-gateway.js';
import type { ProfileScope } from '../notifier/notifier.js';

/**
 * What became of one `phone.changes` nudge (a confirm prompt's, a pending change's): the phone never
 * depends on it, since it finds what waits for it on its next exchange anyway.
 */
export type PhoneChangesOutcome =
  /** The relay took it (or had it already); `sealed` when its content went end to end encrypted. */
  | { kind: 'sent'; delivered: boolean; sealed: boolean }
  /** This profile is not paired with a phone for pushes. */
  | { kind: 'unpaired' }
  /** The relay does not know phone.changes (one without `phone-changes-v1`). */
  | { kind: 'unsupported' }
  /** Anything else: unreachable relay, refused credential, APNs refusal. */
  | { kind: 'failed'; reason: string };

/**
 * Sends one `phone.changes` event through the profile's pairing, read at send time and prepared exactly
 * as every notification of the profile is (applyPrivacy: redacted when redaction is on, sealed end to
 * end when the pairing has a key, content-free rather than plaintext when it cannot seal). `mode` is a
 * routing field the relay reads beside a sealed envelope too: `alert` (the user has something to OK) or
 * `background` (a silent push the app answers by itself).
 */
export async function sendPhoneChanges(
  options: {
    gateway: RelayGateway;
    clock: Clock;
    randomBytes?: ((length: number) => Uint8Array) | undefined;
  },
  profile: ProfileScope,
  event: HostEvent,
  mode: 'alert' | 'background',
): Promise<PhoneChangesOutcome> {
  let prepared;
  try {
    prepared = await applyPrivacy(event, profile.home, {
      clock: () => options.clock.now(),
      ...(options.randomBytes ? { randomBytes: options.randomBytes } : {}),
    });
  } catch {
    return { kind: 'failed', reason: 'credentials_unreadable' };
  }
  if (!prepared) return { kind: 'unpaired' };
  const sent = await options.gateway.postEvent(
    { relayUrl: prepared.relayUrl, credential: prepared.credential },
    { ...prepared.body, mode },
  );
  switch (sent.kind) {
    case 'accepted':
      return { kind: 'sent', delivered: sent.delivered, sealed: prepared.mode === 'sealed' };
    case 'unpaired':
      return { kind: 'unpaired' };
    case 'retry':
      return { kind: 'failed', reason: sent.reason };
    case 'failed':
      if (sent.status === 400 && sent.error === 'invalid_event_type') return { kind: 'unsupported' };
      return { kind: 'failed', reason: sent.error };
  }
}

/**
 * How a tool tells Hermes whether the phone was woken; `later` says what happens anyway (e.g. "the
 * phone sees the change when it next syncs").
 */
export function nudgeForModel(
  outcome: PhoneChangesOutcome,
  later: string,
): { phone_notified: true } | { phone_notified: false; nudge: string } {
  switch (outcome.kind) {
    case 'sent':
      return { phone_notified: true };
    case 'unpaired':
      return { phone_notified: false, nudge: `This profile is not paired for notifications; ${later}.` };
    case 'unsupported':
      return { phone_notified: false, nudge: `The push relay doesn't support this notification; ${later}.` };
    case 'failed':
      return { phone_notified: false, nudge: `The notification could not be sent now; ${later}.` };
  }
}
