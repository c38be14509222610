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

/** How an event left the queue, for whoever waits on it (a held clarify call). */
export type Settlement = SendOutcome | { kind: 'dropped'; reason: 'queue_full' | 'expired' | 'stopped' };
