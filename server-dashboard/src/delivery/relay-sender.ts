import type { NotificationEvent } from '../notifier/events.js';
import type { ProfileScope } from '../notifier/notifier.js';
import type { EventSender } from './delivery-queue.js';
import type { SendOutcome } from './outcome.js';
import type { RelayGateway, RelayTarget } from './relay-gateway.js';

/** What the privacy step hands back for one event at send time (redacted and/or sealed, or null when unpaired). */
export interface PreparedEvent extends RelayTarget {
  body: unknown;
}

export type PrepareEvent = (event: NotificationEvent, home: string) => Promise<PreparedEvent | null>;

/**
 * Sends a queued event: the privacy step runs at send time (so a queued event follows the current
 * redaction and encryption settings), then the event goes to the profile's relay.
 */
export function relaySender(gateway: RelayGateway, prepare: PrepareEvent): EventSender {
  return {
    async send(profile: ProfileScope, event: NotificationEvent): Promise<SendOutcome> {
      let prepared: PreparedEvent | null;
      try {
        prepared = await prepare(event, profile.home);
      } catch {
        // An unreadable credential file is reported by the pairing commands; this event cannot go.
        return { kind: 'failed', status: 0, error: 'credentials_unreadable' };
      }
      if (!prepared) return { kind: 'unpaired' };
      return gateway.postEvent({ relayUrl: prepared.relayUrl, credential: prepared.credential }, prepared.body);
    },
  };
}
