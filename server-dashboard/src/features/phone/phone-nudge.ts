import type { HostEvent } from '@conduit/contracts/relay/events';
import type { Clock } from '../../clock.js';
import type { RelayGateway } from '../../delivery/relay-gateway.js';
import { sendPhoneChanges, type PhoneChangesOutcome } from '../../kernel/phone-changes-event.js';
import { PLUGIN_CAPABILITIES } from '../../notifier/events.js';
import type { ProfileScope } from '../../notifier/notifier.js';
import type { StoredChange } from './phone-changes.js';

/**
 * How a new pending change wakes the phone: a `phone.changes` relay event with event id
 * `phone:<change id>`, prepared exactly as every notification of the profile is
 * (kernel/phone-changes-event.ts), in `alert` mode when the user approves the change on the
 * phone and `background` mode (a silent push) when the user lets Hermes make it without asking. It is
 * sent once and the change never depends on it: the phone finds the queue on its next exchange.
 */
export type PhoneNudgeOutcome =
  | (Extract<PhoneChangesOutcome, { kind: 'sent' }> & { mode: PhoneNudgeMode })
  | Exclude<PhoneChangesOutcome, { kind: 'sent' }>;

export type PhoneNudgeMode = 'alert' | 'background';

export interface PhoneNudge {
  nudge(profile: ProfileScope, change: StoredChange): Promise<PhoneNudgeOutcome>;
}

export const nudgeModeOf = (change: StoredChange): PhoneNudgeMode => (change.ask ? 'alert' : 'background');

export function phoneChangeEventId(changeId: string): string {
  return `phone:${changeId}`;
}

/**
 * The notification (sealed when the pairing has E2E): the change's one-line summary and what it asks.
 * The change itself is fetched from this host; nothing else of the calendar travels.
 */
export function phoneChangeEvent(profile: ProfileScope, change: StoredChange, pluginVersion: string): HostEvent {
  return {
    type: 'phone.changes',
    event_id: phoneChangeEventId(change.id),
    title: change.summary,
    body: change.ask ? 'Hermes asks you to approve this change.' : 'Hermes made this change for you.',
    profile: profile.name,
    plugin_version: pluginVersion,
    plugin_capabilities: [...PLUGIN_CAPABILITIES],
  };
}

/** The real nudge: the profile's pairing read at send time, posted with the host's relay gateway. */
export function relayPhoneNudge(options: { gateway: RelayGateway; clock: Clock; pluginVersion: string }): PhoneNudge {
  return {
    async nudge(profile, change) {
      const mode = nudgeModeOf(change);
      const sent = await sendPhoneChanges(
        options,
        profile,
        phoneChangeEvent(profile, change, options.pluginVersion),
        mode,
      );
      return sent.kind === 'sent' ? { ...sent, mode } : sent;
    },
  };
}
