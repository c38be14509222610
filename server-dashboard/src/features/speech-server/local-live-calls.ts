import { randomBytes } from 'node:crypto';
import WebSocket from 'ws';
import { z } from 'zod';
import {
  conduitTurnAppFrame,
  type ConduitTurnAppFrame,
  conduitTurnCancelFrame,
  conduitTurnFrame,
} from '@conduit/contracts/dashboard/local-live';
import type { CallAttachment } from '../../kernel/relayed-call.js';
import type { Timers } from '../../kernel/timers.js';
import type { Logger } from '../../log.js';

/** The bounds of Local Live's turns (the seed, Local Live). */
export const TURN_BOUNDS = {
  /** A turn with no frame from the app this long ends: the app is gone or stuck, and the speaker waits. */
  silentTurnMs: 90_000,
  /**
   * Sentences Classic voice sent on speak sockets and the model route has not read back yet, per
   * profile. The server asks for each within a second or two; more than this waiting means they were
   * never asked for, and the oldest go.
   */
  pendingSpokenTexts: 32,
} as const;

/** How a turn ended, for the completion being written and the log. */
export type TurnEnd = 'done' | 'error' | 'timeout' | 'cancelled' | 'superseded' | 'closed';

/** Where a turn's text goes: the model route's answer being written. */
export interface TurnSink {
  delta(text: string): void;
  end(how: TurnEnd): void;
}

/** A turn sent to the app; `abandon` is the caller going away (the speech server stopped listening). */
export interface RunningTurn {
  id: string;
  abandon(): void;
}

/** One open Local Live socket. */
interface LiveCall {
  profile: string;
  /** Classic voice's reply voice (`?mode=speak`): never given turns, its sentences are read back. */
  speak: boolean;
  socket: WebSocket;
}

interface Turn {
  id: string;
  profile: string;
  call: LiveCall;
  sink: TurnSink;
  cancelTimer: () => void;
}

/** The bytes that mark a frame worth parsing; every other frame (audio, mostly) passes unread. */
const TURN_MARK = Buffer.from('"conduit.turn');
const ITEM_CREATE_MARK = Buffer.from('conversation.item.create');

const userItemCreate = z.object({
  type: z.literal('conversation.item.create'),
  item: z.looseObject({
    role: z.literal('user'),
    content: z.array(z.looseObject({ type: z.string(), text: z.string().optional() })),
  }),
});

function parseJson(frame: Buffer): unknown {
  try {
    return JSON.parse(frame.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

function typeOf(value: unknown): string | null {
  if (typeof value !== 'object' || value === null || !('type' in value)) return null;
  return typeof value.type === 'string' ? value.type : null;
}

/**
 * The open Local Live calls of one host and the turns in flight on them. One live call per profile at
 * a time: a turn goes to the profile's newest listening socket, and a newer turn of the profile
 * cancels the one before it.
 */
export class LocalLiveCalls {
  /** Listening sockets per profile, oldest first. */
  private readonly listening = new Map<string, LiveCall[]>();
  private readonly spoken = new Map<string, string[]>();
  private readonly turns = new Map<string, Turn>();
  private readonly currentTurn = new Map<string, Turn>();

  constructor(
    private readonly timers: Timers,
    private readonly log: Logger,
  ) {}

  /** Takes a relayed Local Live socket into account until it ends. */
  attach(profile: string, speak: boolean, socket: WebSocket): CallAttachment {
    const call: LiveCall = { profile, speak, socket };
    if (!speak) this.listening.set(profile, [...(this.listening.get(profile) ?? []), call]);
    let ended = false;
    return {
      keepClientText: (frame) => this.readAppFrame(call, frame),
      ended: () => {
        if (ended) return;
        ended = true;
        const rest = (this.listening.get(profile) ?? []).filter((open) => open !== call);
        if (rest.length > 0) this.listening.set(profile, rest);
        else this.listening.delete(profile);
        for (const turn of [...this.turns.values()]) if (turn.call === call) this.finish(turn, 'closed');
      },
    };
  }

  /** Whether a Local Live socket that can take a turn is open for the profile. */
  hasCall(profile: string): boolean {
    return (this.listening.get(profile)?.length ?? 0) > 0;
  }

  /** True once, when `text` is a sentence Classic voice sent on a speak socket of the profile. */
  takeSpoken(profile: string, text: string): boolean {
    const pending = this.spoken.get(profile) ?? [];
    const at = pending.indexOf(text.trim());
    if (at === -1) return false;
    pending.splice(at, 1);
    if (pending.length === 0) this.spoken.delete(profile);
    return true;
  }

  /** Sends a turn to the profile's newest listening socket; null when none is open. */
  startTurn(profile: string, text: string, sink: TurnSink): RunningTurn | null {
    const call = this.listening.get(profile)?.at(-1);
    if (!call) return null;
    const previous = this.currentTurn.get(profile);
    if (previous) this.cancel(previous, 'superseded');
    const id = `turn_${randomBytes(12).toString('base64url')}`;
    const turn: Turn = { id, profile, call, sink, cancelTimer: () => {} };
    this.turns.set(id, turn);
    this.currentTurn.set(profile, turn);
    this.armTimer(turn);
    send(call.socket, conduitTurnFrame.parse({ type: 'conduit.turn', turn_id: id, text }));
    this.log.info('Local Live turn sent to the app', { profile, turn: id });
    return {
      id,
      abandon: () => {
        if (this.turns.get(id) === turn) this.cancel(turn, 'cancelled');
      },
    };
  }

  /** Ends every turn (the host is stopping). */
  endAll(): void {
    for (const turn of [...this.turns.values()]) this.finish(turn, 'closed');
  }

  /** Reads one text frame of the app: turn frames stay on the host; speak sentences are noted and pass. */
  private readAppFrame(call: LiveCall, frame: Buffer): boolean {
    if (frame.includes(TURN_MARK)) {
      const parsed = parseJson(frame);
      const type = typeOf(parsed);
      if (type !== null && type.startsWith('conduit.turn')) {
        const appFrame = conduitTurnAppFrame.safeParse(parsed);
        if (appFrame.success) this.onAppFrame(call, appFrame.data);
        // Kept even when malformed or unknown: a conduit.turn frame is addressed to this host alone.
        return true;
      }
    }
    if (call.speak && frame.includes(ITEM_CREATE_MARK)) this.noteSpoken(call.profile, parseJson(frame));
    return false;
  }

  private onAppFrame(call: LiveCall, frame: ConduitTurnAppFrame): void {
    const turn = this.turns.get(frame.turn_id);
    // A frame for a turn that ended (cancelled, timed out) or of another socket is late; it is dropped.
    if (!turn || turn.call !== call) return;
    if (frame.type === 'conduit.turn.delta') {
      this.armTimer(turn);
      turn.sink.delta(frame.text);
    } else this.finish(turn, frame.type === 'conduit.turn.done' ? 'done' : 'error');
  }

  private noteSpoken(profile: string, parsed: unknown): void {
    const item = userItemCreate.safeParse(parsed);
    if (!item.success) return;
    const text = item.data.item.content
      .filter((part) => part.type === 'input_text' || part.type === 'text')
      .map((part) => part.text ?? '')
      .join('')
      .trim();
    if (!text) return;
    const pending = [...(this.spoken.get(profile) ?? []), text];
    this.spoken.set(profile, pending.slice(-TURN_BOUNDS.pendingSpokenTexts));
  }

  private armTimer(turn: Turn): void {
    turn.cancelTimer();
    turn.cancelTimer = this.timers.after(TURN_BOUNDS.silentTurnMs, () => this.cancel(turn, 'timeout'));
  }

  /** Tells the app to stop working on the turn, then ends it. */
  private cancel(turn: Turn, how: TurnEnd): void {
    if (this.turns.get(turn.id) !== turn) return;
    send(turn.call.socket, conduitTurnCancelFrame.parse({ type: 'conduit.turn.cancel', turn_id: turn.id }));
    this.finish(turn, how);
  }

  private finish(turn: Turn, how: TurnEnd): void {
    if (this.turns.get(turn.id) !== turn) return;
    this.turns.delete(turn.id);
    if (this.currentTurn.get(turn.profile) === turn) this.currentTurn.delete(turn.profile);
    turn.cancelTimer();
    this.log.info('Local Live turn ended', { profile: turn.profile, turn: turn.id, end: how });
    turn.sink.end(how);
  }
}

function send(socket: WebSocket, frame: Record<string, unknown>): void {
  if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(frame));
}
