import { FIXED_LIMITS } from '../limits.js';
import type { InstallationRecord } from './records.js';
import type { RelayStore } from './relay-store.js';

/** StoreMeta key of the running total of installations removed by this expiry (storage:status `expired`). */
export const EXPIRED_INSTALLATIONS_KEY = 'expired-unpaired-installations';

/**
 * Registration is anonymous, so without this a flood of registrations would hold installation
 * capacity for ever: an installation no host ever paired with and whose phone has not used its
 * credential for `ttlMs` is removed, with its expired pairing codes. Paired installations (even after
 * their hosts were revoked) and installations with a live pairing code are never touched here; the
 * operator's storage:prune-inactive remains the only way those leave.
 *
 * "Seen" is any request the phone authenticates with its device credential (the app re-sends its
 * state at every launch), stamped at most every `seenStampEveryMs` so reads do not become writes.
 * Removal runs every `FIXED_LIMITS.unpairedSweepIntervalMs`, once at start, and when a registration
 * finds the relay full (at most once a minute, so a flood of refused registrations cannot turn into a
 * flood of sweeps).
 */
export class UnpairedExpiry {
  /** Stamps may lag by this much, so the effective TTL is at least ttlMs minus it (1 h of 7 days by default). */
  readonly seenStampEveryMs: number;
  private running: Promise<number> | undefined;
  private lastCapacitySweepAt = Number.NEGATIVE_INFINITY;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: RelayStore,
    private readonly ttlMs: number,
    private readonly now: () => number,
    private readonly onError: (error: unknown) => void,
    private readonly onExpired: (count: number) => void = () => undefined,
  ) {
    this.seenStampEveryMs = Math.min(FIXED_LIMITS.seenStampEveryMs, Math.floor(ttlMs / 24));
  }

  /** After a device credential authenticated: stamps the installation seen unless it is paired or freshly stamped. */
  async noteSeen(installation: InstallationRecord): Promise<void> {
    if (installation.pairedAt !== null) return;
    const now = this.now();
    if (installation.lastSeenAt !== null && now - installation.lastSeenAt < this.seenStampEveryMs) return;
    await this.store.recordInstallationSeen(installation.id, now);
  }

  /** Removes every expired installation; concurrent callers share one pass. Resolves with how many went. */
  sweep(): Promise<number> {
    if (this.running) return this.running;
    const pass = (async () => {
      try {
        const now = this.now();
        const removed = (await this.store.expireUnpairedInstallations(now - this.ttlMs, now)).length;
        if (removed > 0) this.onExpired(removed);
        return removed;
      } finally {
        this.running = undefined;
      }
    })();
    this.running = pass;
    return pass;
  }

  /** Called when a registration finds the relay full: reclaims expired slots first, at most once a minute. */
  async sweepAtCapacity(): Promise<void> {
    const now = this.now();
    if (now - this.lastCapacitySweepAt < FIXED_LIMITS.unpairedCapacitySweepEveryMs) return;
    this.lastCapacitySweepAt = now;
    await this.sweep();
  }

  /** Starts the periodic sweep (and one now); the timer does not keep the process alive. */
  start(): void {
    const run = () => void this.sweep().catch(this.onError);
    run();
    this.timer = setInterval(run, FIXED_LIMITS.unpairedSweepIntervalMs);
    this.timer.unref();
  }

  /** Stops the timer and waits for a pass under way, so the store can close after it. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running?.catch(() => undefined);
  }
}
