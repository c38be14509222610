import type { HostEvent } from '@conduit/contracts/relay/events';
import type { Clock } from '../../clock.js';
import { applyPrivacy } from '../../crypto/privacy.js';
import type { RelayGateway } from '../../delivery/relay-gateway.js';
import { PLUGIN_CAPABILITIES } from '../../notifier/events.js';
import type { ProfileScope } from '../../notifier/notifier.js';
import type { StoredPrompt } from './present-store.js';

/**
 * How a new prompt wakes the phone: a `phone.changes` relay event with event id `present:<id>`, an
 * alert (the user has something to OK). It is prepared exactly as every notification of the profile
 * is (applyPrivacy: redacted when redaction is on, sealed end to end when the pairing has a key,
 * content-free rather than plaintext when it cannot seal), and sent once: a prompt does not depend on
 * it, since the phone finds waiting prompts on its next exchange anyway.
 */
export type PresentNudgeOutcome =
  /** The relay took it (or had it already); `sealed` when its content went end to end encrypted. */
  | { kind: 'sent'; delivered: boolean; sealed: boolean }
  /** This profile is not paired with a phone for pushes. */
  | { kind: 'unpaired' }
  /** The relay does not know phone.changes (one without `phone-changes-v1`). */
  | { kind: 'unsupported' }
  /** Anything else: unreachable relay, refused credential, APNs refusal. */
  | { kind: 'failed'; reason: string };

export interface PresentNudge {
  nudge(profile: ProfileScope, prompt: StoredPrompt): Promise<PresentNudgeOutcome>;
}

/** The event id of a prompt's nudge: one per prompt, so a resend is the relay's duplicate. */
export function presentEventId(promptId: string): string {
  return `present:${promptId}`;
}

/** The notification the phone shows (sealed when the pairing has E2E): the prompt's title, and what it asks. */
export function presentEvent(profile: ProfileScope, prompt: StoredPrompt, pluginVersion: string): HostEvent {
  return {
    type: 'phone.changes',
    event_id: presentEventId(prompt.id),
    title: prompt.title,
    body: `Hermes asks you to confirm: ${prompt.action_label}`,
    session_id: prompt.session_id,
    profile: profile.name,
    plugin_version: pluginVersion,
    plugin_capabilities: [...PLUGIN_CAPABILITIES],
  };
}

/** The real nudge: the profile's pairing read at send time, posted with the host's relay gateway. */
export function relayPresentNudge(options: {
  gateway: RelayGateway;
  clock: Clock;
  pluginVersion: string;
  randomBytes?: (length: number) => Uint8Array;
}): PresentNudge {
  return {
    async nudge(profile, prompt) {
      let prepared;
      try {
        prepared = await applyPrivacy(presentEvent(profile, prompt, options.pluginVersion), profile.home, {
          clock: () => options.clock.now(),
          ...(options.randomBytes ? { randomBytes: options.randomBytes } : {}),
        });
      } catch {
        return { kind: 'failed', reason: 'credentials_unreadable' };
      }
      if (!prepared) return { kind: 'unpaired' };
      // `mode` is a routing field the relay reads beside a sealed envelope too; alert is its default,
      // said out loud so the prompt never lands as a silent push.
      const sent = await options.gateway.postEvent(
        { relayUrl: prepared.relayUrl, credential: prepared.credential },
        { ...prepared.body, mode: 'alert' },
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
    },
  };
}
