import { z } from 'zod';
import { defineRoute } from '../route.js';
import { errorOf, JSON_BODY, tooLarge, unauthorized } from './shared.js';

const e2eEnvelope = z.object({
  v: z.literal(1),
  kid: z.string().regex(/^[0-9a-f]{32}$/),
  msg: z.string().describe('Equals event_id.'),
  iat: z.number().int().describe('UNIX seconds within [now−25 h, now+2 h].'),
  tok: z.string().regex(/^[0-9a-f]{16}$/),
  z: z.union([z.literal(0), z.literal(1)]),
  req: z.string(),
  n: z.string().regex(/^[A-Za-z0-9_-]{16}$/),
  ct: z.string().regex(/^[A-Za-z0-9_-]{22,2600}$/),
});

/**
 * The event types a host may post: the reference's (API.md §1.1, in its order), then the two this
 * relay adds from the seed: `phone.changes` (a nudge to pick up pending phone changes) and
 * `location.request` (an on-demand location push, sealed only).
 */
export const RELAY_EVENT_TYPES = [
  'approval.needed',
  'input.needed',
  'response.ready',
  'turn.failed',
  'background_task.finished',
  'call.requested',
  'plugin.hello',
  'phone.changes',
  'location.request',
] as const;
export type RelayEventType = (typeof RELAY_EVENT_TYPES)[number];

/**
 * How a `phone.changes` event reaches the phone: `alert`, a visible notification for a change the
 * user approves (the default when `mode` is absent); `background`, a silent content-available push
 * for an add the user lets Hermes make without asking.
 */
export const PHONE_CHANGES_MODES = ['alert', 'background'] as const;
export type PhoneChangesMode = (typeof PHONE_CHANGES_MODES)[number];

/** Route 10: a host event to push (or a plugin.hello that only records the plugin version). */
export const postEvent = defineRoute({
  method: 'POST',
  path: '/v1/events',
  operationId: 'postEvent',
  summary: 'Deliver a host event',
  description:
    'phone.changes: mode alert is a notification (sealed like any other when e2e is set); mode background is a ' +
    'silent push (apns-push-type background, priority 5) carrying only opaque routing fields. location.request: an ' +
    "Apple location push (topic <APNS_TOPIC>.location-query) to the installation's location push token, carrying " +
    'only the sealed envelope; 409 location_push_unavailable (event id not consumed) when the phone registered none.',
  tags: ['events'],
  auth: 'gateway',
  bodyContentType: JSON_BODY,
  body: z.object({
    type: z.enum(RELAY_EVENT_TYPES),
    event_id: z.string().regex(/^[A-Za-z0-9:_-]{8,128}$/),
    title: z.string().optional(),
    body: z.string().optional(),
    session_id: z.string().optional(),
    profile: z.string().optional(),
    gateway: z.string().optional(),
    plugin_version: z.string().optional(),
    plugin_capabilities: z.array(z.string()).optional(),
    decision: z.record(z.string(), z.unknown()).optional(),
    call: z.record(z.string(), z.unknown()).optional(),
    mode: z
      .enum(PHONE_CHANGES_MODES)
      .optional()
      .describe(
        'phone.changes only (ignored on other types): alert (default) or background. Any other value: 400 invalid_mode.',
      ),
    e2e: e2eEnvelope.optional().describe('Sealed event; required for location.request (400 invalid_e2e without it).'),
    clarify: z
      .object({ request_id: z.string(), qids: z.array(z.string()).optional(), card: z.boolean().optional() })
      .optional(),
  }),
  responses: {
    200: {
      description: 'Already accepted (same gateway, same event id within 24 h).',
      schema: z.object({ accepted: z.literal(true), duplicate: z.literal(true) }),
    },
    202: {
      description: 'Accepted; delivered says whether APNs took a push, rang whether a VoIP call rang.',
      schema: z.object({ accepted: z.literal(true), delivered: z.boolean(), rang: z.literal(true).optional() }),
    },
    400: {
      description: 'Invalid event.',
      schema: errorOf(['invalid_json', 'invalid_event_type', 'invalid_event_id', 'invalid_e2e', 'invalid_mode']),
    },
    401: unauthorized,
    409: {
      description:
        'location.request to an installation without a location push token; the event id is not consumed, so the ' +
        'same event succeeds once the phone registers one.',
      schema: errorOf(['location_push_unavailable']),
    },
    413: tooLarge,
    429: {
      description: 'Decision capacity (event id not consumed), the daily call ceiling, or a rate limit.',
      schema: errorOf(['decision_capacity_exceeded', 'call_limit', 'rate_limited']),
    },
    502: {
      description: 'APNs could not be reached, or refused the push.',
      schema: z.object({
        error: z.enum(['apns_unreachable', 'apns_rejected']),
        reason: z.string().optional(),
        status: z.number().int().optional(),
      }),
    },
  },
});
