import type { ApnsNotification } from '../apns/types.js';
import { modeOf, scopedRouting, sealedRouting, type GatewayScope } from './alert-payload.js';
import type { RelayEvent } from './events.js';

/**
 * The silent push of a `phone.changes` event in `background` mode: it wakes the app to fetch the
 * host's pending changes (POST /phone/exchange), which it may apply without asking. Nothing a
 * person could read travels here: only the routing ids of the authenticated gateway and, for a
 * sealed event, the envelope verbatim. The alert mode goes through `alert-payload.ts` instead.
 */

/**
 * A nudge the phone misses while offline still helps within a day; after that the phone has almost
 * certainly exchanged on its own (pending changes live 7 days on the host, so nothing is lost).
 */
const BACKGROUND_EXPIRATION_S = 86_400;

export function backgroundChangesPush(
  event: RelayEvent,
  scope: GatewayScope,
  options: { nowMs: number },
): ApnsNotification {
  const conduit = event.e2e
    ? sealedRouting(event, scope)
    : { type: event.type, ...modeOf(event), ...scopedRouting(scope) };
  const payload: Record<string, unknown> = { aps: { 'content-available': 1 }, conduit };
  if (event.e2e) payload.conduit_e2e = event.e2e;
  return {
    payload,
    pushType: 'background',
    // APNs refuses background pushes at priority 10; 5 lets iOS batch them with other work.
    priority: 5,
    expiration: Math.floor(options.nowMs / 1000) + BACKGROUND_EXPIRATION_S,
  };
}
