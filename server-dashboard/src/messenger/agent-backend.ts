/**
 * How the connector reaches Hermes: one turn per inbound Message. The Hermes API server backend
 * (`/v1/runs`, its SSE events, `/approval`, `/stop`) is the real one; `ScriptedAgentBackend` serves
 * tests and benchmarks.
 */
export interface TurnRequest {
  /** Idempotency-Key for the run, derived from the inbound event so a replayed turn is not a second run. */
  idempotencyKey: string;
  /** Hermes session continuity (one per Relay chat). */
  sessionId: string;
  input: string;
  /** Images the person sent with the message, downloaded from Relay. */
  images?: TurnImage[];
  instructions?: string;
}

export interface TurnImage {
  contentType: string;
  filename: string;
  bytes: Uint8Array;
}

export type TurnEvent =
  | { kind: 'approval'; requestId: string | null; command: string; description: string }
  | {
      kind: 'completed';
      output: string;
      /** Steer text the run took but never delivered (replay it). */ pendingSteer?: string;
    }
  | { kind: 'failed'; error: string }
  | { kind: 'cancelled' };

export interface AgentTurn {
  runId: string;
  /** Lifecycle events until completed/failed/cancelled (which end the stream). */
  events: AsyncIterable<TurnEvent>;
}

export type ApprovalChoice = 'once' | 'session' | 'always' | 'deny';

export interface ReactionNotice {
  platform: 'relayapp';
  event_name: 'reaction:added' | 'reaction:removed';
  reaction: string;
  user_id: string;
  item_user_id: null;
  item_type: 'message';
  channel_id: string;
  message_ts: string;
  team_id: '';
  event_ts: string;
  raw_event: unknown;
}

export interface AgentBackend {
  startTurn(request: TurnRequest): Promise<AgentTurn>;
  approve(runId: string, choice: ApprovalChoice, requestId: string | null): Promise<void>;
  stop(runId: string): Promise<void>;
  /**
   * Folds words into the running turn (`busy_input_mode: steer`); false when the run did not take them
   * (not running, or no tool boundary left), and the caller queues them instead. Absent: never steers.
   */
  steer?(runId: string, text: string): Promise<boolean>;
  /** Present when the backend can take reactions; otherwise reactions are settled as ignored. */
  onReaction?: (notice: ReactionNotice) => Promise<void>;
}

/** A turn failed in a way worth retrying later (the inbox row returns to pending). */
export class AgentTurnError extends Error {
  override name = 'AgentTurnError';
}

/** Hermes ended the run failed or cancelled: a retry starts a new run (a new Idempotency-Key). */
export class AgentRunFailedError extends AgentTurnError {
  override name = 'AgentRunFailedError';
}
