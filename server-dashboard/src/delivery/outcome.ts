/** How one attempt to hand an event to the relay ended. */
export type SendOutcome =
  /** The relay took it (202), or had it already (200 duplicate). */
  | { kind: 'accepted'; delivered: boolean; duplicate: boolean }
  /** Worth another try with the same event id: network error, relay 5xx, rate limit. */
  | { kind: 'retry'; reason: string }
  /** Final: the relay refused it, APNs refused it, or the relay URL may not carry the credential. */
  | { kind: 'failed'; status: number; error: string }
  /** No credential for this profile (never paired, or unpaired meanwhile). */
  | { kind: 'unpaired' };

/**
 * How an event left the queue, for whoever waits on it (a held clarify call, a parked approval card).
 * `withdrawn`: taken back while an attempt was in flight, and that attempt did not land.
 */
export type Settlement = SendOutcome | { kind: 'dropped'; reason: 'queue_full' | 'expired' | 'stopped' | 'withdrawn' };

/**
 * The relay's 429 when its decision store is full (spec/relay/API.md §2 step 3). It is checked before
 * the event id is consumed, so the same id may be sent again, with or without a decision to park.
 */
export const DECISION_CAPACITY_EXCEEDED = 'decision_capacity_exceeded';

/** True when the relay kept nothing of an event that parks a decision because its decisions are full. */
export function isDecisionCapacityFull(settlement: Settlement): boolean {
  return settlement.kind === 'retry' && settlement.reason === DECISION_CAPACITY_EXCEEDED;
}
