import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { bindRoute, WireError } from '@conduit/contracts/server';
import { iatWithinWindow } from '@conduit/contracts/relay/events';
import { postEvent } from '@conduit/contracts/relay/index';
import type { ApnsNotification, ApnsResult } from '../apns/types.js';
import { plainAlert, sealedAlert, type AlertPush, type GatewayScope } from '../domain/alert-payload.js';
import { callPushFor, type RingTicket } from '../domain/call-push.js';
import { decisionKey, type DecisionRecord } from '../domain/decisions.js';
import { parkedRequestId, validateEvent, type RelayEvent } from '../domain/events.js';
import { locationQueryPush } from '../domain/location-push.js';
import { backgroundChangesPush } from '../domain/phone-changes.js';
import { deliversType } from '../domain/preferences.js';
import { FIXED_LIMITS } from '../limits.js';
import { authenticateGateway, limit, type AuthenticatedGateway, type RelayContext } from '../relay-context.js';
import { readJson } from '../http/read-json.js';
import { assertDecisionCapacity } from './decision-capacity.js';
import { sendVoipPush } from '../delivery/voip-push.js';

/** APNs answers that mean the device token is gone for good. */
export function tokenIsGone(result: ApnsResult): boolean {
  return result.status === 410 || result.reason === 'BadDeviceToken' || result.reason === 'Unregistered';
}

type EventReply =
  | { status: 200; body: { accepted: true; duplicate: true } }
  | { status: 202; body: { accepted: true; delivered: boolean; rang?: true } };

const DUPLICATE: EventReply = { status: 200, body: { accepted: true, duplicate: true } };
const DAY_MS = 24 * 60 * 60 * 1000;

export function eventRoutes(app: FastifyInstance, context: RelayContext): void {
  const { limits } = context.config;

  bindRoute(
    app,
    postEvent,
    async ({ request, readBody }) => {
      // §2 order: auth, per-installation limit, validation, dedupe, capacity preflight, budgets, metadata, delivery.
      const auth = await authenticateGateway(context, request);
      const { installation, gateway } = auth;
      await limit(context, `event:${installation.id}`, FIXED_LIMITS.eventPerInstallation);
      // The contract refuses (type, event_id, mode, the sealed parts, in that order); validateEvent cleans.
      const validation = validateEvent(readBody(), context.now());
      if (!validation.ok) throw new Error(`the contract admitted an event the relay refuses (${validation.code})`);
      const event = validation.event;
      const duplicate = await context.ledger.has(installation.id, gateway.id, event.eventId);
      const requestId = parkedRequestId(event);

      const run = async (): Promise<EventReply> => {
        if (!duplicate && event.type === 'location.request' && !installation.locationPushToken) {
          // Before the id is consumed and any budget spent: the host may send the same event again
          // once the phone has registered its Location Push Service Extension's token.
          throw new WireError(409, 'location_push_unavailable');
        }
        if (!duplicate && requestId !== undefined) {
          // Before the id is consumed: a caller may retry the same event once capacity frees up.
          await assertDecisionCapacity(context, installation.id);
        }
        if (duplicate && !event.pluginVersion) return DUPLICATE;
        await limit(context, 'event-global', limits.eventsPerMinute);
        if (!duplicate && event.type === 'call.requested') {
          if (!(await context.limiter.hit(`call:${installation.id}`, limits.callsPerInstallationPerDay, DAY_MS))) {
            throw new WireError(429, 'call_limit');
          }
        }
        const now = context.now();
        if (event.pluginVersion) {
          context.activity.record(installation.id, gateway.id, {
            pluginVersion: event.pluginVersion,
            pluginCapabilities: event.pluginCapabilities ?? [],
            lastEventAt: now,
          });
        }
        if (!(await context.ledger.add(installation.id, gateway.id, event.eventId))) return DUPLICATE;
        context.activity.record(installation.id, gateway.id, { lastEventAt: now });
        if (event.type === 'plugin.hello') return { status: 202, body: { accepted: true, delivered: false } };
        if (requestId !== undefined) return deliverClarify(context, auth, event, requestId);
        if (event.type === 'location.request') return deliverLocationQuery(context, auth, event);
        if (event.type === 'phone.changes' && event.mode === 'background') {
          return deliverBackgroundChanges(context, auth, event);
        }
        return deliverNotification(context, auth, event);
      };
      // Clarify events check capacity and park under one lock, as the reference does synchronously.
      return requestId !== undefined && !duplicate ? context.decisionLock(run) : run();
    },
    {
      readJson,
      // The envelope's time against this relay's clock, after the contract's own checks (all invalid_e2e).
      narrowBody: (schema) =>
        schema.superRefine((event, check) => {
          if (event.e2e && !iatWithinWindow(event.e2e.iat, context.now())) {
            check.addIssue({ code: 'custom', path: ['e2e', 'iat'], message: 'iat outside the relay window' });
          }
        }),
    },
  );
}

function scopeOf(auth: AuthenticatedGateway): GatewayScope {
  return { gatewayId: auth.gateway.id, dashboardId: auth.gateway.dashboardId };
}

function alertFor(context: RelayContext, auth: AuthenticatedGateway, event: RelayEvent): AlertPush {
  const preferences = auth.installation.preferences;
  return event.e2e ? sealedAlert(event, preferences, scopeOf(auth)) : plainAlert(event, preferences, scopeOf(auth));
}

/**
 * The token a push goes to. The device token is the installation itself: APNs calling it gone
 * deactivates the installation. The location push token belongs to one extension: APNs calling it
 * gone forgets just that token, and alerts keep flowing to the device token.
 */
type PushTarget = { field: 'deviceToken' } | { field: 'locationPushToken'; token: string };

const DEVICE: PushTarget = { field: 'deviceToken' };

/**
 * Sends one push and maps APNs' answer to the wire (§2 step 9/10): alerts, background nudges and
 * location queries share the error mapping; what a gone token costs depends on the target.
 */
async function sendPush(
  context: RelayContext,
  auth: AuthenticatedGateway,
  notification: ApnsNotification,
  onUndeliverable: () => Promise<void>,
  target: PushTarget = DEVICE,
): Promise<EventReply> {
  const { installation } = auth;
  let result: ApnsResult;
  try {
    result = await context.apns.send(
      target.field === 'deviceToken' ? installation.deviceToken : target.token,
      notification,
    );
  } catch (error) {
    context.log('error', 'apns send threw', { error: error instanceof Error ? error.message : String(error) });
    await onUndeliverable();
    throw new WireError(502, 'apns_unreachable');
  }
  if (result.ok) return { status: 202, body: { accepted: true, delivered: true } };
  if (tokenIsGone(result)) {
    if (target.field === 'deviceToken') {
      // The app was deleted or the token rotated: stop pushing until the phone registers again.
      await context.store.updateInstallation(installation.id, { active: false, updatedAt: context.now() });
      context.log('info', 'installation deactivated by apns', { installation: installation.id, reason: result.reason });
    } else {
      // Only this token, and only if the phone sent no newer one; location.request answers 409 until it does.
      await context.store.clearTokenIfUnchanged(installation.id, target.field, target.token);
      context.log('info', 'location push token forgotten by apns', {
        installation: installation.id,
        reason: result.reason,
      });
    }
  }
  await onUndeliverable();
  throw new WireError(502, 'apns_rejected', { reason: result.reason ?? 'unknown', status: result.status });
}

async function deliverClarify(
  context: RelayContext,
  auth: AuthenticatedGateway,
  event: RelayEvent,
  requestId: string,
): Promise<EventReply> {
  const { installation, gateway } = auth;
  const delivering = deliversType(installation.preferences, event.type);
  const push = delivering ? alertFor(context, auth, event) : undefined;
  const decision: DecisionRecord = {
    key: decisionKey(installation.id, gateway.id, requestId),
    installationId: installation.id,
    gatewayId: gateway.id,
    requestId,
    question: '[encrypted]',
    choices: [],
    questions: [],
    answers: Object.create(null) as Record<string, string>,
    deliverable: push?.cardDelivered ?? false,
    createdAt: context.now(),
  };
  if (event.e2e) {
    decision.questions = (event.clarify?.qids ?? []).map((qid) => ({
      qid,
      question: '[encrypted]',
      choices: [],
      multi_select: false,
    }));
  } else if (event.decision?.kind === 'clarify') {
    decision.question = event.decision.question;
    decision.choices = event.decision.choices;
    decision.questions = event.decision.questions ?? [];
  } else if (event.decision?.kind === 'approval') {
    // Parked as a scalar decision: the phone answers with one of the card's choices.
    decision.question = event.decision.description;
    decision.choices = event.decision.choices;
  }
  // Expired records are pruned lazily, so an old request id can be parked again after its TTL.
  await context.store.pruneDecisions(decision.createdAt - FIXED_LIMITS.decisionTtlMs);
  // A re-used request id never sends a second card.
  if (!(await context.store.insertDecision(decision))) return DUPLICATE;
  if (!push) return { status: 202, body: { accepted: true, delivered: false } };
  return sendPush(context, auth, push.notification, async () => {
    // Only the flag: the phone may already have answered through another card of this request id.
    await context.store.markDecisionUndeliverable(decision.key);
  });
}

async function deliverNotification(
  context: RelayContext,
  auth: AuthenticatedGateway,
  event: RelayEvent,
): Promise<EventReply> {
  if (!deliversType(auth.installation.preferences, event.type)) {
    return { status: 202, body: { accepted: true, delivered: false } };
  }
  if (event.type === 'call.requested' && auth.installation.voipToken) {
    if (await ringCall(context, auth, event))
      return { status: 202, body: { accepted: true, delivered: true, rang: true } };
  }
  return sendPush(context, auth, alertFor(context, auth, event).notification, nothingToUndo);
}

const nothingToUndo = async (): Promise<void> => undefined;

/**
 * phone.changes in background mode: a silent push. Like the alert mode it follows `enabled` (there
 * is no per-type switch, so `phone_changes` is never off on its own); the phone still finds the
 * change on its next exchange when nothing is pushed.
 */
async function deliverBackgroundChanges(
  context: RelayContext,
  auth: AuthenticatedGateway,
  event: RelayEvent,
): Promise<EventReply> {
  if (!deliversType(auth.installation.preferences, event.type)) {
    return { status: 202, body: { accepted: true, delivered: false } };
  }
  const push = backgroundChangesPush(event, scopeOf(auth), { nowMs: context.now() });
  return sendPush(context, auth, push, nothingToUndo);
}

/**
 * location.request: an Apple location push. Notification preferences do not gate it: it shows
 * nothing, and the phone itself answers only while the user's background location sharing is on
 * and not paused.
 *
 * It goes to the token Apple hands the Location Push Service Extension
 * (CLLocationManager.startMonitoringLocationPushes), which the phone registers as
 * location_push_token; APNs refuses the device token on the location-query topic. Without one the
 * route has already answered 409 location_push_unavailable.
 */
async function deliverLocationQuery(
  context: RelayContext,
  auth: AuthenticatedGateway,
  event: RelayEvent,
): Promise<EventReply> {
  // Validation refuses a plaintext location.request; this keeps the type system in step with it.
  if (!event.e2e) throw new WireError(400, 'invalid_e2e');
  const token = auth.installation.locationPushToken;
  if (!token) throw new WireError(409, 'location_push_unavailable');
  const push = locationQueryPush(event, scopeOf(auth), { topic: context.config.apnsTopic, nowMs: context.now() });
  return sendPush(context, auth, push, nothingToUndo, { field: 'locationPushToken', token });
}

/**
 * Rings the phone with a VoIP push, and the Watch too when it registered its own PushKit token.
 * Any failure falls back to the alert (the caller); a token APNs calls gone is forgotten.
 */
async function ringCall(context: RelayContext, auth: AuthenticatedGateway, event: RelayEvent): Promise<boolean> {
  const { installation } = auth;
  const phoneToken = installation.voipToken;
  if (!phoneToken) return false;
  const now = context.now();
  let ring: RingTicket | undefined;
  if (installation.watchVoipToken) {
    const id = randomBytes(16).toString('base64url');
    ring = {
      id,
      token: randomBytes(32).toString('base64url'),
      url: `${context.config.publicUrl}/v1/rings/${id}/settled`,
    };
  }
  const push = callPushFor(event, installation.preferences, scopeOf(auth), {
    topic: context.config.apnsTopic,
    nowMs: now,
    ...(ring ? { ring } : {}),
  });
  if (!push) return false;
  if (!(await sendVoipPush(context, { installationId: installation.id, device: 'phone', token: phoneToken }, push))) {
    return false;
  }
  const watchToken = installation.watchVoipToken;
  if (ring && watchToken) {
    await context.rings.create({
      id: ring.id,
      token: ring.token,
      installationId: installation.id,
      createdAt: now,
      phoneToken,
      watchToken,
    });
    // The Watch push rides on the phone's: sent only once APNs took the phone's, never fails the event.
    await sendVoipPush(
      context,
      { installationId: installation.id, device: 'watch', token: watchToken },
      { ...push, topic: `${context.config.apnsWatchTopic}.voip` },
    );
  }
  return true;
}
