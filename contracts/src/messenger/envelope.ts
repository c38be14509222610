/**
 * Relay event envelopes (`WebhookEnvelopeBase`) and the payloads the connector reads
 * (`MessageEvent`, `ReactionEventBase`), from the locked Relay contract. The envelope is validated
 * before it is committed; payloads are validated when an event is processed, so an odd payload
 * never blocks the transport.
 */
import { z } from 'zod';

/** UUID v1–v8, as the reference adapter checks event ids. */
export const eventUuid = z
  .string()
  .regex(/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$/, 'not a UUID');

const anyUuid = z.string().regex(/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/);

/** `WebhookEventType` of the locked contract (location sharing included: the spec lists it). */
export const webhookEventType = z.enum([
  'message.sent',
  'message.received',
  'message.read',
  'message.delivered',
  'message.failed',
  'reaction.added',
  'reaction.removed',
  'participant.added',
  'participant.removed',
  'chat.created',
  'chat.group_name_updated',
  'chat.group_icon_updated',
  'chat.typing_indicator.started',
  'chat.typing_indicator.stopped',
  'contact.added',
  'contact.removed',
  'call.created',
  'call.updated',
  'call.ended',
  'payment.succeeded',
  'payment.canceled',
  'payment.expired',
  'location.sharing.started',
  'location.sharing.stopped',
]);
export type WebhookEventType = z.infer<typeof webhookEventType>;

/** The envelope: extra top-level keys are allowed by the contract (it is not additionalProperties:false). */
export const webhookEnvelope = z.looseObject({
  api_version: z.literal('v1'),
  webhook_version: z.literal('2026-08-30'),
  event_type: webhookEventType,
  event_id: eventUuid,
  created_at: z.string(),
  trace_id: z.string(),
  agent_id: anyUuid,
  data: z.record(z.string(), z.unknown()),
});
export type WebhookEnvelope = z.infer<typeof webhookEnvelope>;

export const chatHandle = z.looseObject({
  id: z.string(),
  handle: z.string(),
  kind: z.string().optional(),
  display_name: z.string().nullable().optional(),
});
export type ChatHandle = z.infer<typeof chatHandle>;

/** One inbound part; parts are read by `type` and unknown shapes are kept as data. */
export const inboundPart = z.looseObject({ type: z.string() });
export type InboundPart = z.infer<typeof inboundPart>;

export const replyTo = z.looseObject({ message_id: z.string(), part_index: z.number().int().min(0).optional() });

/** `MessageEvent` (message.received and friends). */
export const messageEvent = z.looseObject({
  chat: z.looseObject({
    id: anyUuid,
    is_group: z.boolean().nullable().optional(),
    owner_handle: chatHandle.nullable().optional(),
  }),
  id: anyUuid,
  direction: z.enum(['inbound', 'outbound']),
  sender_handle: chatHandle,
  from_handle: chatHandle.nullable().optional(),
  parts: z.array(inboundPart),
  sent_at: z.string().nullable().optional(),
  reply_to: replyTo.nullable().optional(),
});
export type MessageEvent = z.infer<typeof messageEvent>;

/** `ReactionEventBase` (reaction.added / reaction.removed). */
export const reactionEvent = z.looseObject({
  chat_id: z.string(),
  from_handle: chatHandle,
  message_id: z.string(),
  part_index: z.number().int().min(0),
  reaction_type: z.enum(['love', 'like', 'dislike', 'laugh', 'emphasize', 'question', 'custom']),
  custom_emoji: z.string().nullable().optional(),
  is_from_me: z.boolean(),
  reacted_at: z.string(),
});
export type ReactionEvent = z.infer<typeof reactionEvent>;
