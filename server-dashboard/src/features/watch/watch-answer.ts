import { DetailError } from '../../kernel/detail-errors.js';

/**
 * A Watch call's answer before it is sealed (CRYPTO.md §3): the route's own body (`{ok: true, …}`), or
 * `{ok: false, status, detail}` with the status and message the route would have answered.
 */
export type WatchAnswer = ({ ok: true } & Record<string, unknown>) | { ok: false; status: number; detail: string };

/** A call's arguments: only string and integer values are kept, as the reference keeps them. */
export type WatchArgs = Readonly<Record<string, string | number>>;

export function refusal(status: number, detail: string): WatchAnswer {
  return { ok: false, status, detail };
}

/**
 * What a tool's failure answers: a DetailError as the route would answer it, anything else by its type
 * only (its message may carry upstream text), as the routes' 500 does.
 */
export function answerOfFailure(tool: string, error: unknown): WatchAnswer {
  if (error instanceof DetailError) return refusal(error.status, error.message);
  const type = error instanceof Error ? error.name || 'Error' : 'Error';
  return refusal(500, `Watch ${tool} failed on the host (${type})`);
}

/**
 * What becomes of a call's answer once it has been run: whether the relay took it for the waiting
 * Watch. A tool that must count only answers the Watch received (live tokens) listens here; the book
 * settles every call exactly once, false when the answer was never posted or the relay refused it.
 */
export interface AnswerDelivery {
  onSettled(listener: (delivered: boolean) => void): void;
}
