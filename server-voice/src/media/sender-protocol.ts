import type { PacingStats } from './frame-clock.js';
import type { OutboundRoute } from './call-peer.js';
import type { ThreadScheduling } from './thread-priority.js';

/**
 * The messages between the gateway and its media sender process (media-sender.ts, sender-process.ts), over
 * Node's IPC channel with the `advanced` (structured clone) serialization, so packets travel as bytes.
 * Both ends are this package, started together; nothing else speaks it.
 */

/** Registers a call; sent together with the call's UDP socket as the message's handle. */
export interface AddCall {
  t: 'add';
  id: string;
  route: Omit<OutboundRoute, 'socket'>;
  /** The Opus packet a tick with nothing queued sends (the call's encoded 20 ms of silence). */
  silence: Uint8Array;
}

/** Work for calls already added, batched: one IPC message per turn of the gateway's event loop. */
export type SenderOp =
  /** One encoded speech frame appended to the call's queue. */
  | ['frame', string, Uint8Array]
  /** Drop the call's queued speech at once; reports after this carry `epoch`. */
  | ['clear', string, number]
  /** The call ended: stop sending and close this process's copy of its socket. */
  | ['remove', string];

export type ToSender = AddCall | { t: 'ops'; ops: SenderOp[] };

export type FromSender =
  /** Started; `scheduling` is what its sending thread got (see `requestRealtimeScheduling`). */
  | { t: 'ready'; pid: number; scheduling: ThreadScheduling }
  /** Speech frames sent since the last report: [call id, epoch, frames]; `at` is the send time (epoch ms). */
  | { t: 'sent'; at: number; entries: [string, number, number][] }
  /** A call could not be added (its socket could not be taken over); the gateway ends the call. */
  | { t: 'failed'; id: string; message: string }
  /** Outbound pacing as sent, every 5 s while calls are live. */
  | { t: 'pacing'; calls: number; stats: PacingStats };
