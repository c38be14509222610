import type { Clock } from '../clock.js';
import type { DecisionPoll, RelayGateway, RelayTarget } from '../delivery/relay-gateway.js';
import { pollDelayMs } from './clarify-answers.js';

export interface DecisionPollPorts {
  clock: Clock;
  gateway: RelayGateway;
  /** Waits; injected so tests run the poll schedule without real time. */
  sleep(ms: number): Promise<void>;
  pollBaseMs: number;
}

/** One wait on a parked decision: how long at most, and how the waiter is told to give up early. */
export interface DecisionWait {
  budgetMs: number;
  /** Resolves when the wait must end now (the native path answered, or the service is stopping). */
  stop: Promise<void>;
  stopped(): boolean;
}

export type AnsweredPoll = Extract<DecisionPoll, { status: 'answered' }>;

/** Before the first `pending`, this many `unknown` polls or errors in a row mean the card never arrived. */
const MAX_UNKNOWN_BEFORE_PENDING = 30;

/**
 * Polls a decision parked on the relay until the phone has answered all of it. Null when there is no
 * answer to wait for: the card is not on the phone (deliverable false), the decision was released or
 * expired, the budget is spent, or the wait was stopped. Delays are 2, 4, 8, 10, 10… seconds (from
 * the configured base), back to the first step whenever a batch makes progress.
 */
export async function awaitDecisionAnswer(
  ports: DecisionPollPorts,
  target: RelayTarget,
  requestId: string,
  wait: DecisionWait,
): Promise<AnsweredPoll | null> {
  const deadline = ports.clock.now() + wait.budgetMs;
  let step = 0;
  let seenPending = false;
  let unknownStreak = 0;
  let remaining = Infinity;
  for (;;) {
    const delay = pollDelayMs(step, ports.pollBaseMs);
    if (ports.clock.now() + delay > deadline) return null;
    await Promise.race([ports.sleep(delay), wait.stop]);
    if (wait.stopped()) return null;
    step++;
    const result = await ports.gateway.pollDecision(target, requestId);
    const poll: DecisionPoll | null = result.kind === 'ok' ? result.poll : null;
    if (!poll || poll.status === 'unknown') {
      if (seenPending && poll) return null; // released or expired on the relay
      if (++unknownStreak >= MAX_UNKNOWN_BEFORE_PENDING && !seenPending) return null;
      continue;
    }
    unknownStreak = 0;
    if (poll.status === 'rejected') return null;
    if (poll.status === 'pending') {
      seenPending = true;
      if (!poll.deliverable) return null; // no card on the phone: the native path only
      const left = poll.remaining?.length ?? 1;
      if (left < remaining) {
        if (remaining !== Infinity) step = 0; // progress: poll quickly again
        remaining = left;
      }
      continue;
    }
    return poll;
  }
}
