import { withDeadline } from './deadline.js';
import type { Timers } from './timers.js';
import { HermesStateDb, isLockError, type StoreNeed } from './hermes-state-writer.js';

/**
 * How a voice route (features/voice-sessions) or a Watch job's Voice Jobs label (kernel/voice-tags.ts)
 * reaches a profile's state.db within its budget (ROUTES.md: 20 s, then 504):
 * writes of one profile run one at a time in arrival order, each attempt takes Hermes' write lock
 * with `BEGIN IMMEDIATE`, and a lock held by another writer (Hermes' gateway, a CLI) is waited out
 * with Hermes' own jittered retry until the budget ends. better-sqlite3 is synchronous, so the wait
 * for a lock is split into short busy timeouts with the event loop free between them.
 */

export interface StoreCallBounds {
  /** A request's whole budget, queueing included. */
  budgetMs: number;
  /**
   * One attempt's SQLite busy timeout. It blocks the event loop while it waits, so it stays short: a
   * commit's fsync is usually done within it, and a longer hold is waited out between attempts.
   */
  lockWaitMs: number;
  /** The pause between attempts, jittered as Hermes' `_execute_write` does (20–150 ms) to break convoys. */
  retryMinMs: number;
  retryMaxMs: number;
}

export const STORE_CALL_BOUNDS: StoreCallBounds = {
  budgetMs: 20_000,
  lockWaitMs: 50,
  retryMinMs: 20,
  retryMaxMs: 150,
};

/** The request's budget ran out; the route answers 504 `Voice <what> timed out`. */
export class VoiceTimedOut extends Error {
  constructor() {
    super('voice store call timed out');
    this.name = 'VoiceTimedOut';
  }
}

/** Hermes has not created the profile's state.db; a write never creates it (a read finds nothing). */
export class MissingStoreError extends Error {
  constructor() {
    super('state.db does not exist');
    this.name = 'MissingStoreError';
  }
}

/** A request whose budget ran out before its turn: it starts no attempt, so a 504 writes nothing after the fact. */
class Abandoned extends Error {}

/** Runs each profile's writes one at a time, in the order they arrived. */
class ProfileWrites {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const task = previous.then(work, work);
    const tail = task.catch(() => undefined);
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return task;
  }
}

export class StoreCalls {
  private readonly writes = new ProfileWrites();

  constructor(
    private readonly timers: Timers,
    private readonly bounds: StoreCallBounds,
    private readonly random: () => number = Math.random,
  ) {}

  /** A read of the store; `work` gets null when Hermes has not created it yet (nothing stored). */
  read<T>(home: string, needs: readonly StoreNeed[], work: (db: HermesStateDb | null) => T): Promise<T> {
    const ticket = { abandoned: false };
    return this.bounded(
      this.attempts(
        home,
        needs,
        ticket,
        (db) => {
          db.checkSchema();
          return work(db);
        },
        work,
      ),
      ticket,
    );
  }

  /** A write in one `BEGIN IMMEDIATE` transaction, after the profile's earlier writes. */
  write<T>(home: string, needs: readonly StoreNeed[], work: (db: HermesStateDb) => T): Promise<T> {
    const ticket = { abandoned: false };
    const task = this.writes.run(home, () =>
      this.attempts(
        home,
        needs,
        ticket,
        (db) =>
          db.immediate(() => {
            db.checkSchema();
            return work(db);
          }),
        () => {
          throw new MissingStoreError();
        },
      ),
    );
    return this.bounded(task, ticket);
  }

  private bounded<T>(task: Promise<T>, ticket: { abandoned: boolean }): Promise<T> {
    return withDeadline(task, this.bounds.budgetMs, this.timers, () => {
      // Marked as the deadline fires, before any continuation runs: an attempt whose pause ends on the
      // same tick must already see it.
      ticket.abandoned = true;
      return new VoiceTimedOut();
    });
  }

  /** Attempts until one gets past the locks, the work fails otherwise, or the budget ends. */
  private async attempts<T>(
    home: string,
    needs: readonly StoreNeed[],
    ticket: { abandoned: boolean },
    attempt: (db: HermesStateDb) => T,
    missing: (db: null) => T,
  ): Promise<T> {
    if (ticket.abandoned) throw new Abandoned();
    const db = HermesStateDb.open(home, needs, this.bounds.lockWaitMs);
    if (db === null) return missing(null);
    try {
      for (;;) {
        try {
          return attempt(db);
        } catch (error) {
          if (!isLockError(error)) throw error;
        }
        const pause = this.bounds.retryMinMs + this.random() * (this.bounds.retryMaxMs - this.bounds.retryMinMs);
        await new Promise<void>((resolve) => this.timers.after(pause, resolve));
        // Checked after every pause: once the request has answered 504, no attempt starts.
        if (ticket.abandoned) throw new Abandoned();
      }
    } finally {
      db.close();
    }
  }
}
