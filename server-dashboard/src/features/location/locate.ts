import { randomBytes } from 'node:crypto';
import type { Clock } from '../../clock.js';
import type { Timers } from '../../kernel/timers.js';
import type { ProfileScope } from '../../notifier/notifier.js';
import { PhoneDataStore } from '../../kernel/phone-data/store.js';
import {
  freshFixSince,
  latestFix,
  locationSharing,
  logLocationUse,
  type LocationReadResult,
} from './location-reads.js';
import type { LocationPushOutcome, LocationRelay } from './location-relay.js';
import { LOCATION_HOST_LIMITS as LIMITS } from './location-limits.js';
import { LOCATION_SHAPE } from './location-store.js';

/**
 * On-demand locate: a fresh fix asked of the phone through the relay's location push, answered by the
 * phone's next sealed batch. The budget (LOCATION_HOST_LIMITS) lives in the profile's store, so a
 * restart does not hand out a new one.
 */

const DAY_S = 86_400;

/**
 * Wakes whoever waits on a profile's next stored fix. In-process: the waiter and the ingest that
 * satisfies it are the same service, and a restart ends the wait anyway.
 */
export class FixSignals {
  private readonly waiters = new Map<string, Set<() => void>>();

  /** Calls `wake` after every batch that stored something in `home`, until the returned stop is called. */
  listen(home: string, wake: () => void): () => void {
    let set = this.waiters.get(home);
    if (!set) {
      set = new Set();
      this.waiters.set(home, set);
    }
    set.add(wake);
    return () => {
      set.delete(wake);
      if (set.size === 0) this.waiters.delete(home);
    };
  }

  notify(home: string): void {
    for (const wake of [...(this.waiters.get(home) ?? [])]) wake();
  }
}

export interface LocateEnv {
  relay: LocationRelay;
  signals: FixSignals;
  clock: Clock;
  timers: Timers;
}

/**
 * Takes one locate from the profile's budget, or says why not. Check and take happen in one
 * synchronous transaction, so two calls at once cannot both pass; a push the relay refused gives its
 * slot back (release), since it woke nothing.
 */
function takeLocate(home: string, requestId: string, nowS: number): { ok: true } | { ok: false; error: string } {
  const store = PhoneDataStore.open(home, LOCATION_SHAPE, false);
  if (!store) return { ok: false, error: 'No location has been shared with this profile' };
  try {
    return store.db.transaction((): { ok: true } | { ok: false; error: string } => {
      store.db.prepare('DELETE FROM location_locates WHERE at < ?').run(nowS - DAY_S);
      const recent = store.db.prepare('SELECT MAX(at) AS last, COUNT(*) AS n FROM location_locates').get() as {
        last: number | null;
        n: number;
      };
      if (recent.last !== null && recent.last > nowS - LIMITS.locateEveryS) {
        const waitS = Math.ceil(recent.last + LIMITS.locateEveryS - nowS);
        return { ok: false, error: `At most one locate every 5 minutes; the next one in ${waitS} s.` };
      }
      if (recent.n >= LIMITS.locatesPerDay) {
        return { ok: false, error: `At most ${LIMITS.locatesPerDay} locates a day for this profile.` };
      }
      store.db
        .prepare("INSERT INTO location_locates (request_id, at, state) VALUES (?, ?, 'pending')")
        .run(requestId, nowS);
      return { ok: true };
    })();
  } finally {
    store.close();
  }
}

function settleLocate(home: string, requestId: string, sent: boolean): void {
  const store = PhoneDataStore.open(home, LOCATION_SHAPE, false);
  if (!store) return;
  try {
    if (sent) store.db.prepare("UPDATE location_locates SET state = 'sent' WHERE request_id = ?").run(requestId);
    else store.db.prepare('DELETE FROM location_locates WHERE request_id = ?').run(requestId);
  } finally {
    store.close();
  }
}

const PUSH_REFUSALS: Record<Exclude<LocationPushOutcome['kind'], 'sent'>, string> = {
  unpaired: 'This profile is not paired with Conduit for pushes, so the phone cannot be woken for a fresh fix.',
  not_sealed:
    'The pairing has no end-to-end encryption, and a location request is only ever sent sealed; pair Conduit again to turn it on.',
  no_location_push: 'The phone has not registered for location requests with the relay (update or reopen Conduit).',
  unsupported: "The pairing's relay does not support location requests.",
  failed: 'The relay could not take the location request now.',
};

/** Resolves with a fresh fix once an ingest stores one, or null when the wait runs out. */
function waitForFreshFix(env: LocateEnv, home: string, sinceS: number): Promise<ReturnType<typeof freshFixSince>> {
  const fresh = () => freshFixSince(home, sinceS, sinceS - LIMITS.locateClockSkewS, env.clock.now() / 1000);
  return new Promise((resolve) => {
    let done = false;
    const finish = (fix: ReturnType<typeof freshFixSince>) => {
      if (done) return;
      done = true;
      stop();
      cancel();
      resolve(fix);
    };
    const stop = env.signals.listen(home, () => {
      const fix = fresh();
      if (fix) finish(fix);
    });
    const cancel = env.timers.after(LIMITS.locateWaitMs, () => finish(null));
    // The answer may have landed while the push was on its way.
    const already = fresh();
    if (already) finish(already);
  });
}

/** conduit_location's `locate`: ask the phone for a fresh fix and wait for it, within the budget. */
export async function locate(env: LocateEnv, profile: ProfileScope, chat: string | null): Promise<LocationReadResult> {
  const nowS = env.clock.now() / 1000;
  const sharing = locationSharing(profile.home);
  logLocationUse(profile.home, { at: nowS, action: 'locate', via: 'tool', chat });
  if (sharing.state !== 'on') {
    return {
      ok: true,
      action: 'locate',
      sharing: sharing.state,
      message:
        sharing.state === 'paused'
          ? 'The user has paused location sharing in Conduit, so the phone is not asked.'
          : 'Location sharing is off in Conduit for this profile, so the phone is not asked.',
    };
  }
  const latest = () => latestFix(profile.home, { maxAgeS: LIMITS.locateLatestMaxAgeS, nowS: env.clock.now() / 1000 });
  if (!sharing.background) {
    return {
      ok: false,
      error:
        'locate needs background location sharing ("In the background") on in Conduit; use now for the latest fix.',
    };
  }
  const requestId = randomBytes(16).toString('base64url');
  const taken = takeLocate(profile.home, requestId, nowS);
  if (!taken.ok) return { ok: true, action: 'locate', fresh: false, refused: taken.error, latest: latest() };
  const outcome = await env.relay.requestLocation(profile, { kind: 'locate', requestId });
  settleLocate(profile.home, requestId, outcome.kind === 'sent');
  if (outcome.kind !== 'sent') {
    return { ok: true, action: 'locate', fresh: false, refused: PUSH_REFUSALS[outcome.kind], latest: latest() };
  }
  const fix = await waitForFreshFix(env, profile.home, nowS);
  if (fix) return { ok: true, action: 'locate', sharing: 'on', fresh: true, fix };
  return {
    ok: true,
    action: 'locate',
    sharing: 'on',
    fresh: false,
    waiting: true,
    message:
      'The phone was asked for a fresh fix and has not answered within 20 s; this is the latest fix. ' +
      'The fresh one shows in now once it arrives.',
    latest: latest(),
  };
}
