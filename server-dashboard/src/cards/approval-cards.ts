import { randomBytes } from 'node:crypto';
import type { ApprovalAnswerResult, HermesApi } from '@conduit/contracts/hermes/api-client';
import type { Logger } from '../log.js';
import { hookString, type HookPayload } from '../bridge/hook-payload.js';
import { isDecisionCapacityFull, type Settlement } from '../delivery/outcome.js';
import type { NotificationEvent } from '../notifier/events.js';
import type { ProfileScope } from '../notifier/notifier.js';
import type { ApprovalBook, ParkedApproval } from './approval-book.js';
import { PENDING_TTL_MS } from './approval-book.js';
import type { ClarifyPairing } from './clarify-loop.js';
import { awaitDecisionAnswer, type DecisionPollPorts } from './decision-poll.js';

/** The choices Hermes' API server takes (spec/hermes/SURFACES.md §1). */
export type ApprovalChoice = 'once' | 'session' | 'always' | 'deny';

const CHOICES = new Set<string>(['once', 'session', 'always', 'deny']);
/** Hermes reads these as "once" too; a phone may send them. */
const ONCE_ALIASES = new Set(['approve', 'approved', 'allow']);

/** A phone's answer as a choice Hermes takes, or null (then Hermes is asked natively only). */
export function approvalChoiceOf(answer: string | undefined): ApprovalChoice | null {
  const text = (answer ?? '').trim().toLowerCase();
  if (ONCE_ALIASES.has(text)) return 'once';
  return CHOICES.has(text) ? (text as ApprovalChoice) : null;
}

export type ApprovalAnswer =
  | { kind: 'unknown' }
  | { kind: 'already_answered' }
  | { kind: 'no_hermes' }
  | { kind: 'run_unknown' }
  | { kind: ApprovalAnswerResult; runId: string };

export interface ApprovalCardPorts extends DecisionPollPorts {
  log: Logger;
  book: ApprovalBook;
  hermes: HermesApi | null;
  /** The profile's relay and how to open the phone's answers (sealed when E2E is on). */
  readPairing(profile: ProfileScope): Promise<ClarifyPairing | null>;
  enqueue(profile: ProfileScope, event: NotificationEvent): boolean;
  enqueueTracked(
    profile: ProfileScope,
    event: NotificationEvent,
    onSettled: (settlement: Settlement) => void,
  ): (() => void) | null;
}

/** The notification as a plain approval: its card names no relay decision. */
function withoutRequestId(event: NotificationEvent): NotificationEvent {
  if (event.decision?.kind !== 'approval' || event.decision.request_id === undefined) return event;
  const { request_id: _parked, ...decision } = event.decision;
  return { ...event, decision };
}

/**
 * Answerable approval cards. An approval card is parked on the relay as a decision (the relay's
 * extension for approval cards that name a request id), polled like a clarify card, and the phone's
 * answer goes to the Hermes API server run that waits on it. The same answer path serves the host
 * route. An answer given natively first (post_approval_response) retires the card: polling stops and
 * the parked decision is released, so a late answer on the phone is refused (410) instead of lost.
 * Unlike clarify, nothing here holds a Hermes hook: Hermes waits on its own approval, natively. When
 * the relay has no room for another decision (429 decision_capacity_exceeded) the approval is
 * announced at once without a card, as the reference relay (which parks no approvals) would.
 */
export class ApprovalCards {
  private closing = false;

  constructor(private readonly ports: ApprovalCardPorts) {}

  /** pre_approval_request: announce the approval, with an answerable card when it has one. */
  async raised(profile: ProfileScope, payload: HookPayload, event: NotificationEvent): Promise<void> {
    const { book } = this.ports;
    const sessionKey = hookString(payload, 'session_key') ?? '';
    for (const card of book.raised(profile, payload)) card.stop();
    const existing = sessionKey ? book.card(profile, sessionKey) : undefined;
    if (existing?.eventId === event.event_id) return; // the same approval again: its card is out already
    if (existing) {
      // A new approval in the session: the old card must not answer it.
      existing.stop();
      book.detachCard(profile, sessionKey, existing);
    }
    const decision = event.decision?.kind === 'approval' ? event.decision : undefined;
    // Parked only when a relay answer can reach Hermes (an API server and the run that waits); otherwise
    // the phone would be told "answered" for an answer nobody passes on. The card still notifies.
    const found = sessionKey ? book.lookup(profile, sessionKey) : undefined;
    const reachable = this.ports.hermes !== null && found?.state === 'pending' && found.runId !== undefined;
    if (!sessionKey || !decision || !reachable || this.closing) {
      this.ports.enqueue(profile, event);
      return;
    }
    const pairing = await this.ports.readPairing(profile).catch(() => null);
    if (!pairing) {
      this.ports.enqueue(profile, event); // the queue reports "unpaired" and drops it
      return;
    }

    const decisionId = `conduit-approval-${randomBytes(9).toString('base64url')}`;
    const parked: NotificationEvent = { ...event, decision: { ...decision, request_id: decisionId } };
    let stopped = false;
    let wake: () => void = () => {};
    const stop = new Promise<void>((resolve) => (wake = resolve));
    let cancel: (() => void) | null = null;
    const card: ParkedApproval = {
      decisionId,
      eventId: event.event_id,
      target: pairing.target,
      stop: () => {
        if (stopped) return;
        stopped = true;
        cancel?.();
        wake();
      },
    };
    book.attachCard(profile, sessionKey, card);
    cancel = this.ports.enqueueTracked(profile, parked, (settlement) => {
      if (isDecisionCapacityFull(settlement)) {
        if (!stopped) this.announcePlainly(profile, sessionKey, card, event);
        return;
      }
      // Still queued, retried with the same id: the card stays attached, so stop() withdraws it.
      if (settlement.kind === 'retry') return;
      if (settlement.kind !== 'accepted' || stopped) {
        // Never parked, or retired while the event was on its way: nothing may stay answerable.
        book.detachCard(profile, sessionKey, card);
        // Accepted or refused by APNs, it is parked; withdrawn mid-attempt after a network error, it may be.
        const parked =
          settlement.kind === 'accepted' ||
          settlement.kind === 'failed' ||
          (settlement.kind === 'dropped' && settlement.reason === 'withdrawn');
        if (parked) this.release(card);
        return;
      }
      void this.watch(profile, sessionKey, pairing, card, { stop, stopped: () => stopped || this.closing });
    });
    if (!cancel) book.detachCard(profile, sessionKey, card);
  }

  /** post_approval_response: answered natively (or timed out in Hermes). Retires the card. */
  answered(profile: ProfileScope, sessionKey: string): void {
    this.ports.book.answered(profile, sessionKey)?.stop();
  }

  /**
   * Passes an answer to the Hermes API server run waiting on the approval, at most once. Used for
   * answers polled from the relay and for the host route. `runHint` names the run when the hook did not.
   */
  async answer(
    profile: ProfileScope,
    sessionKey: string,
    choice: ApprovalChoice,
    runHint?: string,
  ): Promise<ApprovalAnswer> {
    const { book, hermes } = this.ports;
    const found = book.lookup(profile, sessionKey);
    if (found.state === 'settled' || (found.state === 'pending' && found.answering))
      return { kind: 'already_answered' };
    if (found.state === 'unknown') return { kind: 'unknown' };
    if (!hermes) return { kind: 'no_hermes' };
    const runId = found.runId ?? runHint;
    if (!runId) return { kind: 'run_unknown' };
    if (!book.setAnswering(profile, sessionKey, true)) return { kind: 'already_answered' };
    const result = await hermes.answerApproval(runId, choice, found.requestId).catch(() => 'unreachable' as const);
    if (result === 'accepted') this.answered(profile, sessionKey);
    else book.setAnswering(profile, sessionKey, false);
    return { kind: result, runId };
  }

  /** The service is stopping: stop polling and release every parked card (a restart forgets them). */
  async shutdown(): Promise<void> {
    this.closing = true;
    const cards = this.ports.book.parkedCards();
    for (const card of cards) card.stop();
    await Promise.allSettled(cards.map((card) => this.ports.gateway.releaseDecision(card.target, card.decisionId)));
  }

  /**
   * The relay's decisions are full, so it kept nothing and sent no push (and did not consume the event
   * id). Waiting for room would leave the user untold while Hermes waits, so the card is withdrawn and
   * the same notification goes out at once as a plain approval: same copy, no request id (the privacy
   * step then seals no `req` and no parking descriptor). Hermes' native prompt and the host route answer it.
   */
  private announcePlainly(
    profile: ProfileScope,
    sessionKey: string,
    card: ParkedApproval,
    event: NotificationEvent,
  ): void {
    card.stop(); // takes the parked event out of the retry queue; nothing was parked, so nothing to release
    this.ports.book.detachCard(profile, sessionKey, card);
    this.ports.log.info('relay decision capacity full; approval sent without an answerable card');
    this.ports.enqueue(profile, withoutRequestId(event));
  }

  /** Fire and forget: a slow relay never delays anything Hermes waits on. */
  private release(card: ParkedApproval): void {
    void this.ports.gateway.releaseDecision(card.target, card.decisionId).catch(() => false);
  }

  private async watch(
    profile: ProfileScope,
    sessionKey: string,
    pairing: ClarifyPairing,
    card: ParkedApproval,
    wait: { stop: Promise<void>; stopped(): boolean },
  ): Promise<void> {
    const { book, log } = this.ports;
    const poll = await awaitDecisionAnswer(this.ports, card.target, card.decisionId, {
      budgetMs: PENDING_TTL_MS,
      ...wait,
    });
    book.detachCard(profile, sessionKey, card);
    if (!poll) {
      // Released, undeliverable, expired or retired: a late answer on the phone must be refused.
      if (!this.closing) this.release(card);
      return;
    }
    const opened = pairing.openAnswers(card.decisionId, { q0: poll.answer }, false);
    if (!opened) {
      log.warn('approval answer rejected (not sealed for this pairing); Hermes still asks natively');
      return;
    }
    const choice = approvalChoiceOf(opened.q0);
    if (!choice) {
      log.warn('approval answer is not a choice Hermes takes; Hermes still asks natively');
      return;
    }
    const outcome = await this.answer(profile, sessionKey, choice);
    if (outcome.kind === 'accepted') log.info('approval answered from the phone', { choice });
    else log.warn('approval answer from the phone did not reach Hermes', { outcome: outcome.kind });
  }
}
