import type { HostEvent } from '@conduit/contracts/relay/events';
import type { Clock } from '../../clock.js';
import type { RelayGateway } from '../../delivery/relay-gateway.js';
import { sendPhoneChanges, type PhoneChangesOutcome } from '../../kernel/phone-changes-event.js';
import { PLUGIN_CAPABILITIES } from '../../notifier/events.js';
import type { ProfileScope } from '../../notifier/notifier.js';
import type { StoredPrompt } from './present-store.js';

/**
 * How a new prompt wakes the phone: a `phone.changes` relay event with event id `present:<id>`, an
 * alert (the user has something to OK). It is prepared exactly as every notification of the profile
 * is (kernel/phone-changes-event.ts), and sent once: a prompt does not depend on
 * it, since the phone finds waiting prompts on its next exchange anyway.
 */
export type PresentNudgeOutcome = PhoneChangesOutcome;

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
    // Alert said out loud (it is the relay's default too), so a prompt never lands as a silent push.
    nudge: (profile, prompt) =>
      sendPhoneChanges(options, profile, presentEvent(profile, prompt, options.pluginVersion), 'alert'),
  };
}
