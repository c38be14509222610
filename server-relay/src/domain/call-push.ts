import type { ApnsNotification } from '../apns/types.js';
import { sealedRouting, type GatewayScope } from './alert-payload.js';
import type { RelayEvent } from './events.js';
import type { Preferences } from './preferences.js';

/** What both ringing devices carry so either can settle the ring (§6). */
export interface RingTicket {
  id: string;
  token: string;
  url: string;
}

/** APNs keeps a VoIP push for an offline phone for up to a day; a late one shows as a missed call. */
const CALL_EXPIRATION_S = 86_400;
/** A stop push is useless once the other device has rung out. */
const STOP_EXPIRATION_S = 60;

/**
 * The VoIP push that rings the phone (and, with the same payload, the Watch) for a call.requested
 * event; null when there is nothing to ring with (no valid call, no envelope) so the caller falls back
 * to the alert.
 */
export function callPushFor(
  event: RelayEvent,
  preferences: Preferences,
  scope: GatewayScope,
  options: { topic: string; nowMs: number; ring?: RingTicket },
): ApnsNotification | null {
  // Integer UNIX seconds, as the reference stamps it (nowSeconds): the phone compares it with its own
  // clock to show a late push as a missed call instead of ringing.
  const sentAt = Math.floor(options.nowMs / 1000);
  let payload: Record<string, unknown>;
  if (event.e2e) {
    const routing = sealedRouting(event, scope);
    const stub: Record<string, unknown> = { ...routing, sent_at: sentAt };
    if (options.ring) stub.ring = options.ring;
    payload = { aps: {}, conduit_e2e: event.e2e, body: { conduit: { ...stub } }, conduit: { ...stub } };
  } else {
    if (!event.call) return null;
    const routing: Record<string, unknown> = {
      type: event.type,
      session_id: event.sessionId,
      profile: event.profile,
      gateway: event.gateway,
      gateway_id: scope.gatewayId,
    };
    if (scope.dashboardId) routing.dashboard_id = scope.dashboardId;
    const call: Record<string, unknown> = {
      id: event.call.id,
      kind: event.call.kind,
      session_ids: event.call.session_ids,
    };
    if (preferences.show_previews) {
      if (event.call.title) call.title = event.call.title;
      if (event.call.reason) call.reason = event.call.reason;
    }
    const stub: Record<string, unknown> = { ...routing, sent_at: sentAt };
    if (options.ring) stub.ring = options.ring;
    payload = { aps: {}, body: { conduit: { ...routing, call, ...stub } }, conduit: stub };
  }
  return {
    payload,
    pushType: 'voip',
    topic: `${options.topic}.voip`,
    expiration: sentAt + CALL_EXPIRATION_S,
  };
}

/** Tells the device that did not settle a ring to stop ringing. */
export function stopPushFor(
  ring: { id: string; outcome: string; by: string; start?: string },
  topic: string,
  nowMs: number,
): ApnsNotification {
  const settled: Record<string, unknown> = { id: ring.id, settled: ring.outcome, by: ring.by };
  if (ring.start !== undefined) settled.start = ring.start;
  return {
    payload: { aps: {}, conduit: { ring: settled } },
    pushType: 'voip',
    topic: `${topic}.voip`,
    expiration: Math.floor(nowMs / 1000) + STOP_EXPIRATION_S,
  };
}
