import type { ApnsNotification } from '../apns/types.js';
import { sealedRouting, type GatewayScope } from './alert-payload.js';
import type { SealedEvent } from './events.js';

/**
 * The Apple location push of a `location.request` event: it starts the app's Location Push Service
 * Extension, which opens the envelope, finds the request id inside and answers the host directly
 * (a fresh fix for locate, or a sealed maps lookup). The relay only ever holds the envelope: the
 * request id, and so what was asked, stays between host and phone.
 *
 * Apple's wire for location pushes: `apns-push-type: location`, topic `<bundle id>.location-query`,
 * token-based provider authentication only; priority 10 for a query that needs an answer now
 * (5 lets iOS defer it to save power). A locate the user asked for waits on the answer, hence 10.
 */

/**
 * A location query the phone receives late is answered to a host that stopped waiting: keep it for
 * five minutes (the host's own locate cadence), then let APNs drop it.
 */
export const LOCATION_EXPIRATION_S = 300;

export function locationQueryPush(
  event: SealedEvent,
  scope: GatewayScope,
  options: { topic: string; nowMs: number },
): ApnsNotification {
  return {
    payload: { aps: {}, conduit: sealedRouting(event, scope), conduit_e2e: event.e2e },
    pushType: 'location',
    topic: `${options.topic}.location-query`,
    priority: 10,
    expiration: Math.floor(options.nowMs / 1000) + LOCATION_EXPIRATION_S,
  };
}
