/**
 * Frames of the Relay agent WebSocket (`GET /v1/websocket`), as the locked Relay contract declares them
 * (contracts/openapi/relay-messenger/b1e534c0…/openapi.yaml, `WebSocket*Frame`). Every frame is a strict
 * object: Relay and its reference adapter treat an unknown key as a protocol error, so do we.
 */
import { z } from 'zod';
import { webhookEnvelope } from './envelope.js';

/** A canonical non-negative decimal sequence: "0" or no leading zero ("01" and "00" are refused). */
export const sequenceString = z.string().regex(/^(0|[1-9][0-9]*)$/, 'non-canonical sequence');

const uuid = z.string().regex(/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/);

export const readyFrame = z
  .strictObject({
    type: z.literal('ready'),
    connection_id: uuid,
    acked_through: sequenceString,
    full_sync_required: z.boolean(),
    full_sync_through: sequenceString.nullable(),
    heartbeat_interval_ms: z.number().int().min(1),
    max_in_flight: z.number().int().min(1),
  })
  // full_sync_through is a string exactly when a FULL sync is required, null otherwise.
  .refine(
    (f) => f.full_sync_required === (f.full_sync_through !== null),
    'full_sync_through must match full_sync_required',
  );

export const eventFrame = z.strictObject({
  type: z.literal('event'),
  sequence: sequenceString,
  event: webhookEnvelope,
});

export const fullSyncFrame = z.strictObject({
  type: z.literal('full_sync'),
  through_sequence: sequenceString,
  reason: z.literal('checkpoint_outside_retention'),
});

export const errorFrameCode = z.enum([
  'invalid_frame',
  'ack_out_of_range',
  'stale_connection',
  'ack_failed',
  'delivery_failed',
  'full_sync_required',
  'full_sync_mismatch',
]);

export const errorFrame = z.strictObject({
  type: z.literal('error'),
  code: errorFrameCode,
  message: z.string(),
  fatal: z.boolean(),
  retryable: z.boolean(),
});

export const disconnectReason = z.enum(['revoked', 'heartbeat_timeout', 'restart', 'webhook_configured']);

export const disconnectFrame = z.strictObject({ type: z.literal('disconnect'), reason: disconnectReason });

export const pongFrame = z.strictObject({ type: z.literal('pong') });

/** Legacy server ping; the locked contract says Relay never sends one, but the adapter tolerates it. */
export const legacyPingFrame = z.strictObject({ type: z.literal('ping'), sent_at: z.unknown() });

export const serverFrame = z.union([
  readyFrame,
  eventFrame,
  fullSyncFrame,
  errorFrame,
  disconnectFrame,
  pongFrame,
  legacyPingFrame,
]);

export const ackFrame = z.strictObject({ type: z.literal('ack'), through_sequence: sequenceString });
export const fullSyncCompleteFrame = z.strictObject({
  type: z.literal('full_sync_complete'),
  through_sequence: sequenceString,
});
export const clientPingFrame = z.strictObject({ type: z.literal('ping') });
export const clientPongFrame = z.strictObject({ type: z.literal('pong') });
export const clientFrame = z.union([ackFrame, fullSyncCompleteFrame, clientPingFrame, clientPongFrame]);

export type ReadyFrame = z.infer<typeof readyFrame>;
export type EventFrame = z.infer<typeof eventFrame>;
export type FullSyncFrame = z.infer<typeof fullSyncFrame>;
export type ErrorFrame = z.infer<typeof errorFrame>;
export type DisconnectFrame = z.infer<typeof disconnectFrame>;
export type ServerFrame = z.infer<typeof serverFrame>;
export type ClientFrame = z.infer<typeof clientFrame>;

/**
 * The exact bytes of the heartbeat. Relay's edge answers `{"type":"pong"}` by matching the ping
 * byte for byte, so it is a constant rather than a serialised object.
 */
export const PING_BYTES = '{"type":"ping"}';
