import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { NotificationEvent } from '../notifier/events.js';
import type { ProfileScope } from '../notifier/notifier.js';
import { backoffDelayMs } from './backoff.js';
import type { SendOutcome, Settlement } from './outcome.js';
import type { Spool, SpooledEntry } from './spool.js';

export interface EventSender {
  send(profile: ProfileScope, event: NotificationEvent): Promise<SendOutcome>;
}

export interface DeliveryLimits {
  /** Events held at once (memory and spool); the oldest is dropped past it. */
  capacity: number;
  /** An event older than this is dropped instead of sent. */
  maxAgeMs: number;
  /** Requests to the relay in flight at once. */
  concurrency: number;
  backoff: { baseMs: number; maxMs: number };
}

interface Entry {
  seq: number;
  profile: ProfileScope;
  event: NotificationEvent;
  enqueuedAt: number;
  attempts: number;
  notBefore: number;
  inFlight: boolean;
  /** Taken back by its sender while in flight: it leaves when the attempt ends instead of retrying. */
  withdrawn: boolean;
}

type Listener = (settlement: Settlement) => void;

/**
 * Hooks hand events here and return at once; a background worker posts them to the relay.
 * Beyond the reference (which drops what it cannot send): network errors, relay 5xx and rate limits
 * are retried with the same event id (the relay's ledger makes a resend harmless) and backoff, and
 * every queued event is spooled to disk so a restart resumes delivery. Events leave only when the
 * relay answered for them, when they are older than `maxAgeMs`, or when the bound pushes out the oldest.
 */
export class DeliveryQueue {
  private readonly entries: Entry[] = [];
  private readonly listeners = new Map<number, Listener>();
  private nextSeq = 1;
  private running = 0;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private idleWaiters: (() => void)[] = [];

  constructor(
    private readonly sender: EventSender,
    private readonly limits: DeliveryLimits,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly spool: Spool | null = null,
    private readonly random: () => number = Math.random,
  ) {}

  /** Loads what a previous process left in the spool and starts delivering it. */
  async start(): Promise<void> {
    if (!this.spool) return;
    const loaded: SpooledEntry[] = await this.spool.load();
    for (const item of loaded) {
      this.nextSeq = Math.max(this.nextSeq, item.seq + 1);
      this.entries.push({
        seq: item.seq,
        profile: item.profile,
        event: item.event as unknown as NotificationEvent,
        enqueuedAt: item.enqueued_at,
        attempts: item.attempts,
        notBefore: 0,
        inFlight: false,
        withdrawn: false,
      });
    }
    if (loaded.length) this.log.info('resuming spooled events', { count: loaded.length });
    this.pump();
  }

  get size(): number {
    return this.entries.length;
  }

  /** What the control API reports: depth, in flight, waiting for a retry, attempts made, the oldest's age. */
  stats(): { depth: number; inFlight: number; retrying: number; attempts: number; oldestAgeMs: number | null } {
    const now = this.clock.now();
    let oldest: number | null = null;
    let inFlight = 0;
    let retrying = 0;
    let attempts = 0;
    for (const entry of this.entries) {
      if (entry.inFlight) inFlight += 1;
      else if (entry.attempts > 0) retrying += 1;
      attempts += entry.attempts;
      oldest = oldest === null ? entry.enqueuedAt : Math.min(oldest, entry.enqueuedAt);
    }
    return {
      depth: this.entries.length,
      inFlight,
      retrying,
      attempts,
      oldestAgeMs: oldest === null ? null : Math.max(0, now - oldest),
    };
  }

  /** O(1) apart from the bounded drop; never waits on disk or network. */
  enqueue(profile: ProfileScope, event: NotificationEvent, onSettled?: Listener): boolean {
    if (this.stopped) return false;
    const now = this.clock.now();
    const entry: Entry = {
      seq: this.nextSeq++,
      profile,
      event,
      enqueuedAt: now,
      attempts: 0,
      notBefore: 0,
      inFlight: false,
      withdrawn: false,
    };
    while (this.entries.length >= this.limits.capacity) {
      const oldest = this.entries.findIndex((e) => !e.inFlight);
      if (oldest < 0) return false;
      const [dropped] = this.entries.splice(oldest, 1);
      if (dropped) this.finish(dropped, { kind: 'dropped', reason: 'queue_full' }, 'queue full; dropped oldest event');
    }
    this.entries.push(entry);
    if (onSettled) this.listeners.set(entry.seq, onSettled);
    this.spool?.write(this.toSpooled(entry));
    queueMicrotask(() => this.pump());
    return true;
  }

  /**
   * Like enqueue, but returns a function that withdraws the event. A waiting event leaves at once and
   * its listener hears nothing more. One in flight cannot be called back: its listener hears how that
   * attempt ended (accepted: it is on the relay, so the sender can undo it) and it is never retried.
   */
  enqueueTracked(profile: ProfileScope, event: NotificationEvent, onSettled: Listener): (() => void) | null {
    const seq = this.nextSeq;
    if (!this.enqueue(profile, event, onSettled)) return null;
    return () => {
      const index = this.entries.findIndex((e) => e.seq === seq);
      const entry = this.entries[index];
      if (entry?.inFlight) {
        entry.withdrawn = true;
        return;
      }
      this.listeners.delete(seq);
      if (!entry) return;
      this.entries.splice(index, 1);
      void this.spool?.remove(seq);
    };
  }

  private toSpooled(entry: Entry): SpooledEntry {
    return {
      v: 1,
      seq: entry.seq,
      profile: entry.profile,
      event: entry.event as unknown as SpooledEntry['event'],
      enqueued_at: entry.enqueuedAt,
      attempts: entry.attempts,
    };
  }

  private finish(entry: Entry, settlement: Settlement, logMessage?: string): void {
    if (logMessage) {
      this.log.warn(logMessage, {
        type: entry.event.type,
        event_id: entry.event.event_id,
        outcome: settlement.kind,
        error: 'error' in settlement ? settlement.error : undefined,
      });
    }
    void this.spool?.remove(entry.seq);
    const listener = this.listeners.get(entry.seq);
    this.listeners.delete(entry.seq);
    listener?.(settlement);
  }

  private pump(): void {
    if (this.stopped) return;
    const now = this.clock.now();
    let earliest = Infinity;
    for (let i = 0; i < this.entries.length && this.running < this.limits.concurrency; i++) {
      const entry = this.entries[i];
      if (!entry || entry.inFlight) continue;
      if (now - entry.enqueuedAt > this.limits.maxAgeMs) {
        this.entries.splice(i--, 1);
        this.finish(entry, { kind: 'dropped', reason: 'expired' }, 'event too old to deliver; dropped');
        continue;
      }
      if (entry.notBefore > now) {
        earliest = Math.min(earliest, entry.notBefore);
        continue;
      }
      this.attempt(entry);
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (earliest !== Infinity) {
      this.timer = setTimeout(() => this.pump(), Math.max(1, earliest - now));
      this.timer.unref();
    }
    if (this.entries.length === 0 && this.running === 0) this.notifyIdle();
  }

  private attempt(entry: Entry): void {
    entry.inFlight = true;
    entry.attempts++;
    this.running++;
    void this.sender
      .send(entry.profile, entry.event)
      .catch((error: unknown): SendOutcome => ({
        kind: 'retry',
        reason: error instanceof Error ? error.name : 'error',
      }))
      .then((outcome) => {
        this.running--;
        entry.inFlight = false;
        if (outcome.kind === 'retry' && !this.stopped && !entry.withdrawn) {
          entry.notBefore = this.clock.now() + backoffDelayMs(entry.attempts, this.limits.backoff, this.random);
          this.spool?.write(this.toSpooled(entry));
          if (entry.attempts === 1) {
            this.log.warn('relay delivery failed; will retry', { type: entry.event.type, reason: outcome.reason });
          }
          // A waiting clarify call learns the first failure at once (it may fall back to Hermes' native path).
          this.listeners.get(entry.seq)?.(outcome);
        } else if (outcome.kind !== 'retry' || entry.withdrawn) {
          const index = this.entries.indexOf(entry);
          if (index >= 0) this.entries.splice(index, 1);
          this.finish(
            entry,
            outcome.kind === 'retry' ? { kind: 'dropped', reason: 'withdrawn' } : outcome,
            outcome.kind === 'failed'
              ? 'relay refused a notification'
              : outcome.kind === 'unpaired'
                ? 'profile is not paired; dropped notification'
                : undefined,
          );
        }
        this.pump();
      });
  }

  private notifyIdle(): void {
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  /** Resolves once nothing is queued or in flight (tests and graceful shutdown). */
  whenIdle(): Promise<void> {
    if (this.entries.length === 0 && this.running === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Stops the worker; what is still queued stays in the spool for the next start. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.spool?.flush();
  }
}
