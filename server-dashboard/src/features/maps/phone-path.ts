import { randomBytes } from 'node:crypto';
import {
  LOCATION_MAPS_LIMITS,
  mapsAnswerPlaintext,
  type MapsLookupPlaintext,
  type MapsLookupRequest,
} from '@conduit/contracts/dashboard/location';
import type { Clock } from '../../clock.js';
import { encodeBase64Url } from '../../crypto/base64url.js';
import type { ProfileScope } from '../../notifier/notifier.js';
import { MAPS_LIMITS } from './maps-limits.js';
import type { MapsPhone, MapsPhoneTarget } from './maps-ports.js';
import type { MapsRequest } from './maps-request.js';
import { lookupRequestOf, phoneAnswerOf } from './phone-answer.js';
import type { PhoneAnswer, PhoneLookups, PendingLookup } from './phone-lookups.js';
import type { PhoneWakeBudget } from './phone-wakes.js';
import type { PlaceCache } from './place-cache.js';

/**
 * The phone path of conduit_maps (the seed: "The tool stores the lookup sealed for that one phone …
 * and wakes it with the same location push as locate"): a repeat within 2 minutes is answered from the
 * last answer; otherwise a wake is taken from the profile's budget, the lookup sealed for the phone and
 * kept, the phone woken, and the answer awaited (bounded). The routes (maps-phone-routes.ts) hand the
 * lookup out and take the answer in.
 */

export interface PhonePathDeps {
  phone: MapsPhone;
  lookups: PhoneLookups;
  wakes: PhoneWakeBudget;
  places: PlaceCache;
  clock: Clock;
}

export type PhoneOutcome =
  /** The phone's answer, or the last one to the same lookup (`repeat_of`). */
  | { kind: 'answered'; answer: PhoneAnswer }
  /** Nothing woke the phone; `reason` says why, for the model. */
  | { kind: 'not_asked'; reason: string }
  /** The phone was woken and did not answer in time. */
  | { kind: 'no_answer' };

const utf8 = new TextEncoder();

/** Two lookups are the same when the phone would be asked the same thing at the same detail. */
function repeatKeyOf(home: string, detail: string, lookup: MapsLookupRequest): string {
  return `${home}\n${detail}\n${JSON.stringify(lookup)}`;
}

export async function askPhone(
  deps: PhonePathDeps,
  profile: ProfileScope,
  target: MapsPhoneTarget & { detail: 'precise' | 'area' },
  request: MapsRequest,
  savedNames: readonly string[],
): Promise<PhoneOutcome> {
  const home = profile.home;
  const lookup = lookupRequestOf(request, { home, savedNames, places: deps.places });
  const repeatKey = repeatKeyOf(home, target.detail, lookup);
  const last = deps.lookups.repeat(repeatKey);
  if (last) {
    const repeatOf = new Date(last.atMs).toISOString();
    return { kind: 'answered', answer: last.answer.ok ? { ...last.answer, repeat_of: repeatOf } : last.answer };
  }

  if (deps.lookups.waitingFor(home) >= MAPS_LIMITS.pendingLookupsPerProfile) {
    return {
      kind: 'not_asked',
      reason: 'Too many maps lookups are already waiting for the iPhone; try again shortly.',
    };
  }
  const nowMs = deps.clock.now();
  const taken = await deps.wakes.take(home, nowMs);
  if (!taken.ok) return { kind: 'not_asked', reason: taken.reason };

  const lookupId = randomBytes(16).toString('base64url');
  const expiresAtMs = nowMs + LOCATION_MAPS_LIMITS.lookupTtlS * 1000;
  const plaintext: MapsLookupPlaintext = {
    v: 1,
    lookup_id: lookupId,
    detail: target.detail,
    request: lookup,
    expires_at: Math.floor(expiresAtMs / 1000),
  };
  const sealed = deps.phone.seal(
    home,
    { deviceId: target.deviceId, kid: target.kid, lookupId },
    utf8.encode(JSON.stringify(plaintext)),
  );
  if (!sealed) {
    await deps.wakes.release(home, taken.atMs);
    return { kind: 'not_asked', reason: "The iPhone's location key changed just now; try again." };
  }
  const pending: PendingLookup = {
    id: lookupId,
    home,
    deviceId: target.deviceId,
    kid: target.kid,
    envelope: {
      v: 1,
      device_id: sealed.deviceId,
      kid: sealed.kid,
      lookup_id: lookupId,
      nonce: encodeBase64Url(sealed.nonce),
      ct: encodeBase64Url(sealed.ct),
    },
    expiresAtMs,
    repeatKey,
    detail: target.detail,
    lookup,
    answer: null,
  };
  // Kept and awaited before the push goes, so an answer can never arrive to a lookup not yet here.
  deps.lookups.add(pending);
  const answered = deps.lookups.wait(lookupId, MAPS_LIMITS.phoneWaitMs);
  let woken: Awaited<ReturnType<MapsPhone['wake']>>;
  try {
    woken = await deps.phone.wake(profile, lookupId);
  } catch {
    woken = { kind: 'refused', reason: 'The relay could not take the request for the iPhone now.' };
  }
  if (woken.kind !== 'sent') {
    deps.lookups.forget(lookupId);
    deps.lookups.cancelWait(lookupId);
    await deps.wakes.release(home, taken.atMs);
    await answered;
    return { kind: 'not_asked', reason: woken.reason };
  }
  const answer = await answered;
  return answer ? { kind: 'answered', answer } : { kind: 'no_answer' };
}

/**
 * The tool's answer from an opened result, for the lookup it answers: shaped at the lookup's detail,
 * its places remembered for place_id (never the user's own position).
 */
export function answerFor(deps: PhonePathDeps, lookup: PendingLookup, raw: unknown): PhoneAnswer | null {
  const parsed = mapsAnswerPlaintext.safeParse(raw);
  if (!parsed.success || parsed.data.lookup_id !== lookup.id) return null;
  return phoneAnswerOf(lookup.lookup, lookup.detail, parsed.data.result, {
    nowMs: deps.clock.now(),
    remember: (place) => deps.places.remember(lookup.home, place),
  });
}

/**
 * When the phone does not answer, a trip from "me" to a saved place gets a labelled straight-line
 * guess from the latest fix's distance to it (the seed), instead of failing; null for any other lookup.
 */
export function straightLineGuess(
  phone: MapsPhone,
  home: string,
  request: MapsRequest,
  savedPlace: string | null,
): PhoneAnswer | null {
  if (request.action !== 'directions' || request.from.kind !== 'me' || savedPlace === null) return null;
  const line = phone.straightLine(home, savedPlace);
  if (!line) return null;
  const speed = MAPS_LIMITS.guessSpeedsMps[request.mode];
  const roughS = Math.round((line.m * MAPS_LIMITS.guessDetourFactor) / speed / 60) * 60;
  const minutes = Math.max(1, Math.round(line.ageS / 60));
  return {
    ok: true,
    source: 'straight-line guess (not Apple Maps)',
    guess: true,
    from: { me: true },
    to: { saved_place: line.place },
    mode: request.mode,
    straight_line_m: line.m,
    rough_duration_s: roughS,
    note:
      `The user's iPhone did not answer within ${MAPS_LIMITS.phoneWaitMs / 1000} s, so this is a guess, not a route: ` +
      `${line.m} m as the crow flies from where the user was ${minutes} min ago to ${line.place}, and a rough time ` +
      'at a typical speed for the mode. Say it is an estimate.',
  };
}
