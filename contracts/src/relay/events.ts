import { z } from 'zod';
import { e2eClarifyRouting, e2eEnvelope } from '../crypto/e2e.js';
import { defineRoute } from '../route.js';
import { beforeTheRoute, errorOf, lenient, sharedStateUnavailable, tooLarge, unauthorized } from './shared.js';

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

/**
 * The host→relay event payload (API.md §1.1, EVENTS.md §2), declared once: the relay's POST /v1/events
 * body below is built from these fields, and the host builds its events from the same schemas.
 */
const eventIdentity = {
  type: z.enum(RELAY_EVENT_TYPES),
  event_id: z.string().regex(/^[A-Za-z0-9:_-]{8,128}$/),
};

/** What a notification says; sealed into the envelope (E2E_INNER_FIELDS) when the pairing has E2E. */
const eventContent = {
  title: z.string().optional(),
  body: z.string().optional(),
  session_id: z.string().optional(),
  profile: z.string().optional(),
  gateway: z.string().optional(),
};

/** Always in the clear, sealed or not: the relay records the plugin version for the phone. */
const eventVersion = {
  plugin_version: z.string().optional(),
  plugin_capabilities: z.array(z.string()).optional(),
};

/**
 * The approval card of an `approval.needed` event. The relay shows it only with a session key, a
 * description and at least one of `once`, `session`, `always`, `deny` among the choices.
 */
export const approvalDecision = z.object({
  kind: z.literal('approval'),
  session_key: z.string(),
  description: z.string(),
  choices: z.array(z.string()),
  /**
   * Our relay's extension: the relay decision the card is parked under, so the phone can answer it
   * there. The reference relay ignores it.
   */
  request_id: z.string().optional(),
});
export type ApprovalDecision = z.infer<typeof approvalDecision>;

/** One question of a batch clarify (Hermes' `questions[]` protocol). */
export const clarifyQuestion = z.object({
  question: z.string(),
  /** `^[A-Za-z0-9_-]{1,40}$`, unique in the batch: the key its answer comes back under. */
  qid: z.string(),
  choices: z.array(z.string()).optional(),
  multi_select: z.literal(true).optional(),
});
export type ClarifyQuestion = z.infer<typeof clarifyQuestion>;

/** The answerable card of an `input.needed` event: the relay parks it under `request_id`. */
export const clarifyDecision = z.object({
  kind: z.literal('clarify'),
  /** `^[A-Za-z0-9_-]{4,128}$`, never truncated: the id the host polls the answer under. */
  request_id: z.string(),
  question: z.string(),
  choices: z.array(z.string()).optional(),
  /** Present only when Hermes' call used the questions[] protocol, even with one entry. */
  questions: z.array(clarifyQuestion).optional(),
});
export type ClarifyDecision = z.infer<typeof clarifyDecision>;

export const hostDecision = z.discriminatedUnion('kind', [approvalDecision, clarifyDecision]);
export type HostDecision = z.infer<typeof hostDecision>;

export const CALL_KINDS = ['done', 'failed', 'stopped', 'approval', 'question'] as const;

/** The call of a `call.requested` event: why Hermes wants to talk, and the chats the phone may open. */
export const callRequest = z.object({
  /** `^[A-Za-z0-9_-]{8,64}$`. */
  id: z.string(),
  kind: z.enum(CALL_KINDS),
  /** At most 4 are kept; one malformed id drops the whole call. */
  session_ids: z.array(z.string()),
  title: z.string().optional(),
  reason: z.string().optional(),
});
export type CallRequest = z.infer<typeof callRequest>;

/** A host event as the host builds it, before redaction and sealing. */
export const hostEvent = z.object({
  ...eventIdentity,
  ...eventContent,
  ...eventVersion,
  /** The stored chat the phone opens; sealed only (the relay drops it from a plaintext event). */
  stored_session_id: z.string().optional(),
  decision: hostDecision.optional(),
  call: callRequest.optional(),
});
export type HostEvent = z.infer<typeof hostEvent>;

/** An event whose content is sealed for the phone; the relay sees routing data only. */
export const sealedEvent = z.object({
  ...eventIdentity,
  ...eventVersion,
  e2e: e2eEnvelope,
  clarify: e2eClarifyRouting.optional(),
});
export type SealedEvent = z.infer<typeof sealedEvent>;

/** What an encrypted pairing sends when it cannot seal an event: no content at all, never plaintext. */
export const contentFreeEvent = z.object({ ...eventIdentity, ...eventVersion });
export type ContentFreeEvent = z.infer<typeof contentFreeEvent>;

/** Whatever leaves a host for POST /v1/events: plain (possibly redacted), sealed, or content-free. */
export type OutgoingEvent = HostEvent | SealedEvent | ContentFreeEvent;

/**
 * How far `e2e.iat` may lie from the relay's clock, in seconds: 25 h back (a host that queued an event
 * for a day), 2 h ahead (clock skew). The phone's own window is narrower (CRYPTO.md §1).
 */
export const RELAY_IAT_WINDOW_S = { past: 25 * 60 * 60, future: 2 * 60 * 60 } as const;

export function iatWithinWindow(iatS: number, nowMs: number): boolean {
  const nowS = Math.floor(nowMs / 1000);
  return iatS >= nowS - RELAY_IAT_WINDOW_S.past && iatS <= nowS + RELAY_IAT_WINDOW_S.future;
}

/**
 * What the reference ignores in an event: `mode` except on phone.changes (null meaning absent), and
 * `clarify` except beside the envelope of a sealed input.needed or approval.needed.
 */
function withoutIgnoredFields(body: unknown): unknown {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return body;
  const event: Record<string, unknown> = { ...body };
  if (event.type !== 'phone.changes' || event.mode === null) delete event.mode;
  if (event.e2e === undefined || (event.type !== 'input.needed' && event.type !== 'approval.needed')) {
    delete event.clarify;
  }
  return event;
}

/**
 * The POST /v1/events body as the relay validates it, in the reference's order of checks (API.md §2):
 * type, event_id, mode, then everything sealed (invalid_e2e). Content is cleaned, never refused: a
 * malformed title, card or call is dropped and the routing stub still reaches the phone. The relay adds
 * the `iat` window against its clock (iatWithinWindow).
 */
const postEventBody = z.preprocess(
  withoutIgnoredFields,
  z
    .object({
      ...eventIdentity,
      title: lenient(eventContent.title),
      body: lenient(eventContent.body),
      session_id: lenient(eventContent.session_id),
      profile: lenient(eventContent.profile),
      gateway: lenient(eventContent.gateway),
      plugin_version: lenient(eventVersion.plugin_version),
      // Each capability is cleaned on its own: one malformed entry does not cost the others.
      plugin_capabilities: lenient(
        z.array(lenient(z.string())).transform((items) => items.filter((item) => item !== undefined)),
      ),
      // approvalDecision, clarifyDecision and callRequest say what the phone is shown; anything else in
      // an object is dropped by the relay, not refused.
      decision: lenient(z.record(z.string(), z.unknown())),
      call: lenient(z.record(z.string(), z.unknown())),
      mode: z
        .enum(PHONE_CHANGES_MODES)
        .optional()
        .describe(
          'phone.changes only (ignored on other types): alert (default) or background. Any other value: 400 invalid_mode.',
        ),
      e2e: e2eEnvelope.optional().describe('Sealed event; required for location.request (400 invalid_e2e without it).'),
      // The relay defaults absent qids to [] and card to true (hosts older than batch clarify send neither).
      clarify: e2eClarifyRouting.partial({ qids: true, card: true }).optional(),
    })
    .superRefine((event, context) => {
      if (event.e2e && event.e2e.msg !== event.event_id) {
        context.addIssue({ code: 'custom', path: ['e2e', 'msg'], message: 'msg must equal event_id' });
      }
      // The relay never sees the request id of a location query in the clear.
      if (event.type === 'location.request' && !event.e2e) {
        context.addIssue({ code: 'custom', path: ['e2e'], message: 'location.request is sealed only' });
      }
      if (event.clarify && event.clarify.request_id !== event.e2e?.req) {
        context.addIssue({ code: 'custom', path: ['clarify', 'request_id'], message: 'request_id must equal e2e.req' });
      }
    }),
);

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
  bodyReading: 'handler',
  body: postEventBody,
  bodyErrorCodes: {
    type: 'invalid_event_type',
    event_id: 'invalid_event_id',
    mode: 'invalid_mode',
    e2e: 'invalid_e2e',
    clarify: 'invalid_e2e',
  },
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
    503: sharedStateUnavailable,
    ...beforeTheRoute,
  },
});
