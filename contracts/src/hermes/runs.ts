import { z } from 'zod';

/**
 * The Hermes API server's runs (spec/hermes/SURFACES.md §1): what `POST /v1/runs` answers and the
 * lifecycle events `GET /v1/runs/{run_id}/events` streams as SSE `data: {json}` frames.
 *
 * Hermes changes quickly and these are read, not written, so the schemas are forgiving: every event
 * keeps the fields it does not declare, and a declared field of another type reads as absent rather
 * than losing the event (a `run.completed` whose `output` is not text still ends the run). An event
 * whose name is not listed here is not one of ours to read.
 */

/** A field read only when it is text; anything else reads as absent. */
const text = z.string().optional().catch(undefined);
/** A field read only when it is a finite number; anything else reads as absent. */
const number = z.number().optional().catch(undefined);

/** What every run event carries besides its name. */
const common = { run_id: text, timestamp: number };

/** `POST /v1/runs` → 202 `{run_id, status}`. */
export const runCreated = z.looseObject({ run_id: z.string().min(1).max(256), status: text });

/** A piece of the reply text; the pieces joined are what the run has said so far. */
export const messageDelta = z.looseObject({ event: z.literal('message.delta'), ...common, delta: text });
export const reasoningDelta = z.looseObject({ event: z.literal('reasoning.delta'), ...common, delta: text });
export const reasoningAvailable = z.looseObject({ event: z.literal('reasoning.available'), ...common, text });

/** Hermes runs its own tools; these say one started and finished (text may be revised at that boundary). */
export const toolStarted = z.looseObject({ event: z.literal('tool.started'), ...common, tool: text, preview: text });
export const toolCompleted = z.looseObject({
  event: z.literal('tool.completed'),
  ...common,
  tool: text,
  duration: number,
  error: z.union([z.boolean(), z.string()]).optional().catch(undefined),
});

export const subagentStart = z.looseObject({ event: z.literal('subagent.start'), ...common });
export const subagentComplete = z.looseObject({ event: z.literal('subagent.complete'), ...common });

/**
 * The run waits on an approval (`waiting_for_approval`) until `POST /v1/runs/{id}/approval` answers it.
 * Early builds send no `request_id` (the oldest pending approval is answered).
 */
export const approvalRequest = z.looseObject({
  event: z.literal('approval.request'),
  ...common,
  request_id: text,
  /** Redacted by Hermes. */
  command: text,
  description: text,
  choices: z.array(z.string()).optional().catch(undefined),
});

/** The terminal events: exactly one ends a run's stream. */
export const runCompleted = z.looseObject({
  event: z.literal('run.completed'),
  ...common,
  output: text,
  /** Steer text the run took but never delivered to the model: the client replays it as a new turn. */
  pending_steer: text,
});
export const runFailed = z.looseObject({ event: z.literal('run.failed'), ...common, error: text });
export const runCancelled = z.looseObject({ event: z.literal('run.cancelled'), ...common });

/** One lifecycle event of a run, told apart by `event`. */
export const hermesRunEvent = z.discriminatedUnion('event', [
  messageDelta,
  reasoningDelta,
  reasoningAvailable,
  toolStarted,
  toolCompleted,
  subagentStart,
  subagentComplete,
  approvalRequest,
  runCompleted,
  runFailed,
  runCancelled,
]);
export type HermesRunEvent = z.infer<typeof hermesRunEvent>;
export type HermesRunEventName = HermesRunEvent['event'];
