import { hash } from 'node:crypto';
import { FIXED_LIMITS } from '../limits.js';
import type { ApnsNotification } from '../apns/types.js';
import type { EventType, PlainEvent, RelayEvent, SealedEvent } from './events.js';
import type { Preferences } from './preferences.js';

/**
 * The alert push for one event (§7). Pure: the same event, preferences and gateway give the same
 * notification, so tests assert whole payloads.
 */

/** The event types that can become a visible alert (plugin.hello never notifies; location.request is a location push). */
export type AlertEventType = Exclude<EventType, 'plugin.hello' | 'location.request'>;

/**
 * Copy shown when previews are off (the default) or the event is sealed: the reference's strings,
 * word for word (the app and its users already know them).
 */
export const GENERIC_COPY: Record<AlertEventType, { title: string; body: string }> = {
  'approval.needed': { title: 'Approval needed', body: 'Hermes is waiting for your approval.' },
  'input.needed': { title: 'Input needed', body: 'Hermes needs your response before it can continue.' },
  'response.ready': { title: 'Response ready', body: 'Hermes has finished responding.' },
  'turn.failed': { title: 'Turn failed', body: 'A Hermes turn could not be completed.' },
  'background_task.finished': { title: 'Background task finished', body: 'A delegated task has finished.' },
  'call.requested': { title: 'Hermes wants to talk', body: 'Tap to talk to Hermes.' },
  // Says nothing about the change itself: it comes from the host once the phone opens it.
  'phone.changes': { title: 'Change to review', body: 'Hermes has a change for you to approve.' },
};

const COMPLETION_TYPES = new Set<string>(['response.ready', 'background_task.finished']);
/** Types that wait on the user; a phone.changes alert asks for an approval too. */
const ATTENTION_TYPES = new Set<string>(['approval.needed', 'input.needed', 'call.requested', 'phone.changes']);

/** The authenticated gateway an event came from; routing ids come only from here, never the body. */
export interface GatewayScope {
  gatewayId: string;
  dashboardId?: string | null;
}

export interface AlertPush {
  notification: ApnsNotification;
  /** The structured decision card reached the payload (plaintext) or the sealed card can be shown (e2e). */
  cardDelivered: boolean;
}

/**
 * Gateway-scoped opaque token: two hosts paired with one phone never share a thread or collapse
 * id, even for equal session ids.
 */
export function scopeToken(gatewayId: string, seed: string): string {
  // One-shot: no Hash object for every alert.
  return hash('sha256', `${gatewayId}:${seed}`, 'hex').slice(0, 16);
}

export function soundFor(type: string, preferences: Preferences): string | undefined {
  if (COMPLETION_TYPES.has(type)) return preferences.completion_sound ? 'default' : undefined;
  if (ATTENTION_TYPES.has(type)) return preferences.attention_sound !== false ? 'default' : undefined;
  return undefined;
}

/**
 * `\nProfile: p · Session: …last8`, so generic copy still says which chat it is about. A session id
 * of 10 characters or fewer is shown whole, as the reference's shortSessionId does.
 */
export function contextLine(profile: string | undefined, sessionId: string | undefined): string {
  const parts: string[] = [];
  const shownProfile = profile?.trim();
  const shownSession = sessionId?.trim();
  if (shownProfile) parts.push(`Profile: ${shownProfile}`);
  if (shownSession) {
    parts.push(`Session: ${shownSession.length > 10 ? `…${shownSession.slice(-8)}` : shownSession}`);
  }
  return parts.length > 0 ? `\n${parts.join(' · ')}` : '';
}

function genericCopy(type: EventType): { title: string; body: string } {
  return type === 'plugin.hello' || type === 'location.request' ? { title: 'Hermes', body: '' } : GENERIC_COPY[type];
}

function byteLength(payload: unknown): number {
  return Buffer.byteLength(JSON.stringify(payload));
}

export function scopedRouting(scope: GatewayScope): Record<string, string> {
  const out: Record<string, string> = { gateway_id: scope.gatewayId };
  if (scope.dashboardId) out.dashboard_id = scope.dashboardId;
  return out;
}

export function plainAlert(event: PlainEvent, preferences: Preferences, scope: GatewayScope): AlertPush {
  const generic = genericCopy(event.type);
  // Each half on its own, as the reference: with previews on, an event without a body still gets the
  // generic body with its context line, so the banner says which profile and chat it is about.
  const alert = {
    title: preferences.show_previews && event.title ? event.title : generic.title,
    body:
      preferences.show_previews && event.body ? event.body : generic.body + contextLine(event.profile, event.sessionId),
  };
  const routing: Record<string, unknown> = {
    type: event.type,
    ...modeOf(event),
    session_id: event.sessionId,
    profile: event.profile,
    gateway: event.gateway,
    ...scopedRouting(scope),
  };
  const aps: Record<string, unknown> = { alert };
  const sound = soundFor(event.type, preferences);
  if (sound) aps.sound = sound;
  if (event.type === 'call.requested') aps.category = 'HERMES_CALL';
  const threadId = scopeToken(scope.gatewayId, event.sessionId ?? 'hermes');
  aps['thread-id'] = threadId;
  const conduit: Record<string, unknown> = { ...routing };
  // Cards follow decision_cards alone: previews hide text, not the ability to answer.
  if (event.decision && preferences.decision_cards !== false) conduit.decision = event.decision;
  if (event.call) conduit.call = visibleCall(event.call, preferences);
  const payload: Record<string, unknown> = { aps, body: { conduit }, conduit: { ...routing } };
  let cardDelivered = conduit.decision !== undefined;
  if ((conduit.decision || conduit.call) && byteLength(payload) > FIXED_LIMITS.maxStructuredPayloadBytes) {
    // All or nothing: a partial batch card would collect answers for a decision that can never complete.
    delete conduit.decision;
    delete conduit.call;
    cardDelivered = false;
  }
  return {
    // No pushType: an alert is APNs' default, and the reference's notification (what
    // APNS_CAPTURE_PATH writes) carries none.
    notification: {
      collapseId: `${event.type}:${scopeToken(scope.gatewayId, event.sessionId ?? event.eventId)}`,
      payload,
      threadId,
    },
    cardDelivered,
  };
}

function visibleCall(call: NonNullable<PlainEvent['call']>, preferences: Preferences): Record<string, unknown> {
  const out: Record<string, unknown> = { id: call.id, kind: call.kind, session_ids: call.session_ids };
  if (preferences.show_previews) {
    if (call.title) out.title = call.title;
    if (call.reason) out.reason = call.reason;
  }
  return out;
}

/** `{mode}` for phone.changes, so the app tells a change to approve from one already allowed. */
export function modeOf(event: RelayEvent): { mode?: string } {
  return event.mode ? { mode: event.mode } : {};
}

export function sealedRouting(event: SealedEvent, scope: GatewayScope): Record<string, unknown> {
  return { type: event.type, ...modeOf(event), e2e: 1, ...scopedRouting(scope) };
}

export function sealedAlert(event: SealedEvent, preferences: Preferences, scope: GatewayScope): AlertPush {
  const generic = genericCopy(event.type);
  const token = scopeToken(scope.gatewayId, event.e2e.tok);
  // Keys in the reference's order, so a captured payload reads the same byte for byte.
  const aps: Record<string, unknown> = { alert: { title: generic.title, body: generic.body } };
  const sound = soundFor(event.type, preferences);
  if (sound) aps.sound = sound;
  if (event.type === 'call.requested') aps.category = 'HERMES_CALL';
  aps['mutable-content'] = 1;
  aps['thread-id'] = token;
  const routing = sealedRouting(event, scope);
  const payload: Record<string, unknown> = {
    aps,
    conduit_e2e: event.e2e,
    body: { conduit: { ...routing } },
    conduit: { ...routing },
  };
  let envelopeKept = true;
  if (byteLength(payload) > FIXED_LIMITS.maxStructuredPayloadBytes) {
    // Never truncated: the phone shows the generic alert rather than a ciphertext it cannot open.
    delete payload.conduit_e2e;
    delete aps['mutable-content'];
    envelopeKept = false;
  }
  const cardDelivered = envelopeKept && (event.clarify?.card ?? false) && preferences.decision_cards !== false;
  return {
    notification: { collapseId: `${event.type}:${token}`, payload, threadId: token },
    cardDelivered,
  };
}
