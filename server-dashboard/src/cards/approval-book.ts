import type { Clock } from '../clock.js';
import { hookString, type HookPayload } from '../bridge/hook-payload.js';
import type { RelayTarget } from '../delivery/relay-gateway.js';
import type { ProfileScope } from '../notifier/notifier.js';

/** An approval card parked on the relay as a decision the phone can answer there. */
export interface ParkedApproval {
  /** The relay decision id (not Hermes' approval request id). */
  decisionId: string;
  /** The notification that carries the card, so a repeated hook does not park a second one. */
  eventId: string;
  target: RelayTarget;
  /** Ends the relay poll and takes the card out of the delivery queue if it is still waiting there. */
  stop(): void;
}

interface Pending {
  runId: string | undefined;
  requestId: string | undefined;
  raisedAt: number;
  card: ParkedApproval | undefined;
  /** An answer is on its way to Hermes; a second one is refused rather than sent twice. */
  answering: boolean;
}

export type ApprovalLookup =
  | { state: 'pending'; runId: string | undefined; requestId: string | undefined; answering: boolean }
  | { state: 'settled' }
  | { state: 'unknown' };

/**
 * How long an approval is remembered as waiting, and so how long its relay card is polled. Hermes'
 * own approval timeout is shorter and ends it first (post_approval_response with choice "timeout").
 */
export const PENDING_TTL_MS = 60 * 60_000;
/** How long an answered approval is remembered, so a late phone answer hears "already answered". */
const SETTLED_TTL_MS = 30 * 60_000;
const MAX_ENTRIES = 1_000;

/**
 * The approvals Hermes is waiting on, per profile and session key, as its hooks reported them:
 * pre_approval_request opens one (with the API server run id when Hermes names it), and
 * post_approval_response — an answer given natively, in the TUI, Desktop or a chat platform —
 * settles it, which retires the phone's card. Pure bookkeeping: the relay and Hermes are reached by
 * `ApprovalCards`.
 */
export class ApprovalBook {
  private readonly pending = new Map<string, Pending>();
  private readonly settled = new Map<string, number>();

  constructor(private readonly clock: Clock) {}

  private key(profile: ProfileScope, sessionKey: string): string {
    return `${profile.home}\u0000${sessionKey}`;
  }

  /** Forgets old entries; returns the parked cards of the approvals it dropped, for release. */
  private sweep(now: number): ParkedApproval[] {
    const dropped: ParkedApproval[] = [];
    const drop = (key: string) => {
      const card = this.pending.get(key)?.card;
      if (card) dropped.push(card);
      this.pending.delete(key);
    };
    for (const [key, entry] of this.pending) if (now - entry.raisedAt > PENDING_TTL_MS) drop(key);
    for (const [key, at] of this.settled) if (now - at > SETTLED_TTL_MS) this.settled.delete(key);
    while (this.pending.size > MAX_ENTRIES) drop(this.pending.keys().next().value as string);
    while (this.settled.size > MAX_ENTRIES) this.settled.delete(this.settled.keys().next().value as string);
    return dropped;
  }

  /**
   * Opens (or re-opens) the approval of a session. Returns the cards no longer wanted: the one of an
   * approval this replaces, and any the bounds dropped.
   */
  raised(profile: ProfileScope, payload: HookPayload): ParkedApproval[] {
    const sessionKey = hookString(payload, 'session_key');
    if (!sessionKey) return [];
    const now = this.clock.now();
    const dropped = this.sweep(now);
    const key = this.key(profile, sessionKey);
    this.settled.delete(key);
    const previous = this.pending.get(key);
    this.pending.set(key, {
      runId: hookString(payload, 'run_id'),
      requestId: hookString(payload, 'approval_request_id') ?? hookString(payload, 'request_id'),
      raisedAt: now,
      card: previous?.card,
      answering: false,
    });
    return dropped;
  }

  /** The parked card of a waiting approval, if it has one. */
  card(profile: ProfileScope, sessionKey: string): ParkedApproval | undefined {
    return this.pending.get(this.key(profile, sessionKey))?.card;
  }

  /** Records the card parked for a waiting approval; false when the approval is no longer waiting. */
  attachCard(profile: ProfileScope, sessionKey: string, card: ParkedApproval): boolean {
    const entry = this.pending.get(this.key(profile, sessionKey));
    if (!entry) return false;
    entry.card = card;
    return true;
  }

  /** Takes the card off a waiting approval (its relay decision is gone); the approval still waits. */
  detachCard(profile: ProfileScope, sessionKey: string, card: ParkedApproval): void {
    const entry = this.pending.get(this.key(profile, sessionKey));
    if (entry?.card === card) entry.card = undefined;
  }

  /** Marks an answer in flight (true) or done without success (false); false when none may start. */
  setAnswering(profile: ProfileScope, sessionKey: string, answering: boolean): boolean {
    const entry = this.pending.get(this.key(profile, sessionKey));
    if (!entry || (answering && entry.answering)) return false;
    entry.answering = answering;
    return true;
  }

  /** Settles a waiting approval; returns its parked card, which the caller retires. */
  answered(profile: ProfileScope, sessionKey: string): ParkedApproval | undefined {
    const key = this.key(profile, sessionKey);
    const entry = this.pending.get(key);
    if (!entry) return undefined;
    this.pending.delete(key);
    this.settled.set(key, this.clock.now());
    return entry.card;
  }

  lookup(profile: ProfileScope, sessionKey: string): ApprovalLookup {
    for (const card of this.sweep(this.clock.now())) card.stop();
    const key = this.key(profile, sessionKey);
    const entry = this.pending.get(key);
    if (entry) return { state: 'pending', runId: entry.runId, requestId: entry.requestId, answering: entry.answering };
    return this.settled.has(key) ? { state: 'settled' } : { state: 'unknown' };
  }

  /** Every card still parked, for the service's shutdown. */
  parkedCards(): ParkedApproval[] {
    return [...this.pending.values()].flatMap((entry) => (entry.card ? [entry.card] : []));
  }
}
