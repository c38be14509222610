import type { MapsLookupRequest, SealedMapsEnvelope } from '@conduit/contracts/dashboard/location';
import { setBounded } from '../../bounded-map.js';
import type { Clock } from '../../clock.js';
import type { Timers } from '../../kernel/timers.js';
import { MAPS_LIMITS } from './maps-limits.js';

/** A tool answer built from the phone's result (phone-answer.ts): what the model reads. */
export type PhoneAnswer = { ok: true; [key: string]: unknown } | { ok: false; error: string };

/** A lookup stored sealed for one phone, waiting for (or holding) its answer. */
export interface PendingLookup {
  id: string;
  home: string;
  deviceId: string;
  kid: string;
  /** The sealed lookup the phone fetches, exactly as it was sealed. */
  envelope: SealedMapsEnvelope;
  expiresAtMs: number;
  /** The repeat cache's key of this lookup: a late answer still serves a repeat. */
  repeatKey: string;
  /** What the phone was asked, and at which detail: its answer is shaped by them. */
  lookup: MapsLookupRequest;
  detail: 'precise' | 'area';
  /** The first answer that opened, once there is one. */
  answer: PhoneAnswer | null;
}

/** Every profile's lookups at once, at most: profiles × pending each, so memory stays bounded. */
const PENDING_MAX = MAPS_LIMITS.profilesRemembered * MAPS_LIMITS.pendingLookupsPerProfile;

/**
 * The phone path's short-lived state, in memory (a restart ends every wait anyway): the sealed lookups
 * the phone fetches and answers, the tool calls waiting on them, and the last answers a repeat within
 * 2 minutes is given.
 */
export class PhoneLookups {
  private readonly pending = new Map<string, PendingLookup>();
  private readonly waiters = new Map<string, Set<(answer: PhoneAnswer | null) => void>>();
  private readonly repeats = new Map<string, { answer: PhoneAnswer; atMs: number }>();

  constructor(
    private readonly clock: Clock,
    private readonly timers: Timers,
  ) {}

  /** Lookups of the profile not yet answered nor expired. */
  waitingFor(home: string): number {
    this.sweep();
    return [...this.pending.values()].filter((lookup) => lookup.home === home && lookup.answer === null).length;
  }

  add(lookup: PendingLookup): void {
    this.sweep();
    setBounded(this.pending, lookup.id, lookup, PENDING_MAX);
  }

  forget(id: string): void {
    this.pending.delete(id);
  }

  /** The profile's live lookup with this id, or null (unknown, another profile's, or expired). */
  find(home: string, id: string): PendingLookup | null {
    const lookup = this.pending.get(id);
    if (!lookup || lookup.home !== home) return null;
    if (lookup.expiresAtMs <= this.clock.now()) {
      this.pending.delete(id);
      return null;
    }
    return lookup;
  }

  /**
   * Takes the first answer: wakes the waiting tool call and keeps it for a repeat. A lookup keeps its
   * answer until it expires, so a second answer (a replay) is told apart from an unknown lookup.
   */
  settle(lookup: PendingLookup, answer: PhoneAnswer): 'taken' | 'already' {
    if (lookup.answer !== null) return 'already';
    lookup.answer = answer;
    if (answer.ok) this.remember(lookup.repeatKey, answer);
    for (const wake of [...(this.waiters.get(lookup.id) ?? [])]) wake(answer);
    return 'taken';
  }

  /** Resolves with the lookup's answer, or null when `ms` pass first (an in-process event, no polling). */
  wait(id: string, ms: number): Promise<PhoneAnswer | null> {
    return new Promise((resolve) => {
      const set = this.waiters.get(id) ?? new Set<(answer: PhoneAnswer | null) => void>();
      this.waiters.set(id, set);
      let done = false;
      const finish = (answer: PhoneAnswer | null) => {
        if (done) return;
        done = true;
        set.delete(wake);
        if (set.size === 0) this.waiters.delete(id);
        cancel();
        resolve(answer);
      };
      const wake = (answer: PhoneAnswer | null) => finish(answer);
      set.add(wake);
      const cancel = this.timers.after(ms, () => finish(null));
      // The answer may have come while the push was on its way.
      const already = this.pending.get(id)?.answer;
      if (already) finish(already);
    });
  }

  /** Ends the waits on a lookup with no answer (its push never left). */
  cancelWait(id: string): void {
    for (const wake of [...(this.waiters.get(id) ?? [])]) wake(null);
  }

  /** The last answer to the same lookup within 2 minutes, or null. */
  repeat(repeatKey: string): { answer: PhoneAnswer; atMs: number } | null {
    const last = this.repeats.get(repeatKey);
    if (!last) return null;
    if (this.clock.now() - last.atMs >= MAPS_LIMITS.repeatWithinMs) {
      this.repeats.delete(repeatKey);
      return null;
    }
    return last;
  }

  private remember(repeatKey: string, answer: PhoneAnswer): void {
    setBounded(this.repeats, repeatKey, { answer, atMs: this.clock.now() }, PENDING_MAX);
  }

  /** A full pass: lookups are few, and an expired one may sit behind a newer one. */
  private sweep(): void {
    const now = this.clock.now();
    for (const [id, lookup] of this.pending) if (lookup.expiresAtMs <= now) this.pending.delete(id);
  }
}
