import {
  CALL_AVOID_PLACES_MAX,
  CALL_RULES_MAX,
  CALL_SETTING_BOUNDS,
  WATCH_ID_PATTERN,
  deleteCallWatch,
  getCalls,
  postCallOutcome,
  postCallWatch,
  putCallPresence,
  putCallWatch,
  putCalls,
} from '@conduit/contracts/dashboard/calls';
import { PHONE_DEVICE_ID_PATTERN } from '@conduit/contracts/dashboard/phone-data';
import { bindRoute } from '@conduit/contracts/server';
import { CorruptCredentialsError, readCredentials } from '../../credentials/credential-store.js';
import { isPaired } from '../../credentials/credential-file.js';
import { LockTimeoutError } from '../../credentials/file-lock.js';
import { answerWithDetail, DetailError, readJsonBody } from '../../kernel/detail-errors.js';
import type { HostFeature } from '../../kernel/feature.js';
import { profileForRoute } from '../../kernel/profile-files.js';
import { limiterKey, perMinute } from '../../kernel/rate-window.js';
import type { ProfileScope } from '../../notifier/notifier.js';
import { CorruptStateError } from '../../state/json-state-file.js';
import {
  CALL_LIMITS,
  CallsState,
  newWatchId,
  settingsOf,
  type CallOutcomeRecord,
  type CallSettings,
  type CallsFile,
  type CallWatch,
} from './calls-state.js';

const BOUNDS = {
  requestsPerMinute: 30,
  bodyLimitBytes: 4096,
} as const;

const NO_STORE = { 'Cache-Control': 'no-store' };
const NOT_PAIRED = "This Hermes profile isn't paired with Conduit";
const CALLS_OFF = 'Calls are off for this Hermes profile';

const BOOLEAN_SETTINGS = ['enabled', 'when_asked', 'decides', 'alerts', 'avoid_unknown_place'] as const;
/** A saved place id as the phone's location batches carry them (contracts/dashboard/location.ts). */
const PLACE_ID = PHONE_DEVICE_ID_PATTERN;
const NUMBER_SETTINGS = Object.keys(CALL_SETTING_BOUNDS) as (keyof typeof CALL_SETTING_BOUNDS)[];

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function wholeNumber(value: unknown, min: number, max: number): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max;
}

/** `PUT /calls`: every key is checked before anything changes (the reference's messages). */
function settingsChange(body: unknown): Partial<CallSettings> {
  if (!isRecord(body) || !isRecord(body.settings)) throw new DetailError(400, 'Expected a JSON object with settings');
  const change: Partial<CallSettings> = {};
  for (const [key, value] of Object.entries(body.settings)) {
    if ((BOOLEAN_SETTINGS as readonly string[]).includes(key)) {
      if (typeof value !== 'boolean') throw new DetailError(400, `${key} must be true or false`);
      change[key as (typeof BOOLEAN_SETTINGS)[number]] = value;
    } else if ((NUMBER_SETTINGS as string[]).includes(key)) {
      const { min, max } = CALL_SETTING_BOUNDS[key as keyof typeof CALL_SETTING_BOUNDS];
      if (!wholeNumber(value, min, max))
        throw new DetailError(400, `${key} must be a whole number from ${min} to ${max}`);
      change[key as keyof typeof CALL_SETTING_BOUNDS] = value;
    } else if (key === 'rules') {
      if (typeof value !== 'string' || value.length > CALL_RULES_MAX) {
        throw new DetailError(400, `rules must be text of up to ${CALL_RULES_MAX} characters`);
      }
      change.rules = value;
    } else if (key === 'avoid_places') {
      const message = `avoid_places must be a list of up to ${CALL_AVOID_PLACES_MAX} saved place ids`;
      if (!Array.isArray(value) || value.length > CALL_AVOID_PLACES_MAX) throw new DetailError(400, message);
      if (!value.every((id): id is string => typeof id === 'string' && PLACE_ID.test(id))) {
        throw new DetailError(400, message);
      }
      change.avoid_places = [...new Set(value)];
    } else {
      throw new DetailError(400, `unknown setting ${key}`);
    }
  }
  return change;
}

/** Session ids as Hermes writes them: non-empty, no whitespace or control characters, bounded. */
const SESSION_ID = /^[^\s\p{Cc}]{1,128}$/u;

function sessionIds(value: unknown, min: number): string[] {
  const max = CALL_LIMITS.sessionIdsPerWatch;
  const message =
    min === 0
      ? `session_ids must be a list of up to ${max} session ids`
      : `session_ids must be a list of 1 to ${max} session ids`;
  if (!Array.isArray(value) || value.length < min || value.length > max) throw new DetailError(400, message);
  const ids: string[] = [];
  for (const id of value) {
    if (typeof id !== 'string' || !SESSION_ID.test(id)) throw new DetailError(400, message);
    if (!ids.includes(id)) ids.push(id);
  }
  return ids;
}

function optionalText(body: Record<string, unknown>, key: string, max: number): string | null {
  const value = body[key];
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string' || value.length > max) {
    throw new DetailError(400, `${key} must be text of up to ${max} characters`);
  }
  const text = value.trim();
  return text === '' ? null : text;
}

function optionalWhole(body: Record<string, unknown>, key: string, min: number, max: number): number | undefined {
  const value = body[key];
  if (value === undefined || value === null) return undefined;
  if (!wholeNumber(value, min, max)) throw new DetailError(400, `${key} must be a whole number from ${min} to ${max}`);
  return value;
}

function objectBody(raw: unknown): Record<string, unknown> {
  const body = readJsonBody(raw);
  if (!isRecord(body)) throw new DetailError(400, 'Request body must be a JSON object');
  return body;
}

function holdOf(body: Record<string, unknown>): number {
  const hold = optionalWhole(body, 'hold_s', 0, CALL_LIMITS.holdMaxS);
  if (hold === undefined) throw new DetailError(400, `hold_s must be a whole number from 0 to ${CALL_LIMITS.holdMaxS}`);
  return hold;
}

function watchId(raw: string): string {
  if (!WATCH_ID_PATTERN.test(raw)) throw new DetailError(400, 'Unknown watch id');
  return raw;
}

/** A watch's outcome as the app reads it: a stopped job did not finish, so it reads as failed. */
function appOutcome(outcome: 'done' | 'failed' | 'stopped'): 'done' | 'failed' {
  return outcome === 'done' ? 'done' : 'failed';
}

type WatchAnswer = { status: 'watching'; id: string } | { status: 'ended'; outcome: 'done' | 'failed' };
type HoldAnswer = { status: 'watching' | 'gone' } | { status: 'ended'; outcome: 'done' | 'failed' };

async function paired(profile: ProfileScope): Promise<boolean> {
  return isPaired(await readCredentials(profile.home));
}

function unexpiredWatches(file: CallsFile, nowS: number): CallWatch[] {
  return file.watches.filter((watch) => watch.expires_at > nowS);
}

/**
 * Calls from Hermes (`hermes-calls`, `hermes-call-presence`, `hermes-call-outcomes`): the settings,
 * the watches Conduit asks for during a Live Voice call ("call me when it's done"), presence while
 * the user is in a call, and the declined and missed calls the phone reports. The state is the
 * profile's conduit-calls.json (calls-state.ts), shared with the turn-end path.
 */
export const callsFeature: HostFeature = {
  name: 'calls',
  capabilities: [
    { name: 'hermes-calls', method: 'GET', path: getCalls.path },
    { name: 'hermes-call-presence', method: 'PUT', path: putCallPresence.path },
    { name: 'hermes-call-outcomes', method: 'POST', path: postCallOutcome.path },
  ],
  register(scope, kernel) {
    const requests = perMinute(BOUNDS.requestsPerMinute, kernel.clock);
    const states = new Map<string, CallsState>();
    const stateOf = (profile: ProfileScope): CallsState => {
      let state = states.get(profile.home);
      if (!state) states.set(profile.home, (state = new CallsState(profile.home)));
      return state;
    };
    const nowS = (): number => kernel.clock.now() / 1000;

    answerWithDetail(scope, {
      bodyLimitBytes: BOUNDS.bodyLimitBytes,
      known(error) {
        if (error instanceof CorruptStateError || error instanceof CorruptCredentialsError) {
          return new DetailError(503, error.message);
        }
        if (error instanceof LockTimeoutError) return new DetailError(503, 'Calls state is busy; try again shortly');
        return undefined;
      },
      failure: (request, type) => `Calls ${request.routeOptions.url ?? ''} failed on the host (${type})`,
    });

    /** Resolves the profile and takes one of its 30 requests a minute. */
    const admit = (requested: string | undefined): ProfileScope => {
      const profile = profileForRoute(kernel.hermesHome, requested);
      if (!requests.tryTake(limiterKey(requested)))
        throw new DetailError(429, 'Too many call requests; try again shortly');
      return profile;
    };

    bindRoute(scope, getCalls, async ({ query }) => {
      const profile = admit(query.profile);
      const now = nowS();
      const [file, isPairedNow] = await Promise.all([stateOf(profile).read(now), paired(profile)]);
      return {
        status: 200,
        body: {
          ok: true as const,
          paired: isPairedNow,
          settings: settingsOf(file),
          bounds: CALL_SETTING_BOUNDS,
          rules_max: CALL_RULES_MAX,
          watches: unexpiredWatches(file, now).length,
        },
        headers: NO_STORE,
      };
    });

    bindRoute(scope, putCalls, async ({ query, body: raw }) => {
      const profile = admit(query.profile);
      const change = settingsChange(readJsonBody(raw));
      const settings = await stateOf(profile).update(nowS(), (file) => {
        const next = { ...file, settings: { ...settingsOf(file), ...change } };
        return { file: next, result: settingsOf(next) };
      });
      return { status: 200, body: { ok: true as const, settings }, headers: NO_STORE };
    });

    bindRoute(scope, postCallWatch, async ({ query, body: raw }) => {
      const profile = admit(query.profile);
      const body = objectBody(raw);
      const ids = sessionIds(body.session_ids, 1);
      const title = optionalText(body, 'title', CALL_LIMITS.titleMaxChars);
      const hold = optionalWhole(body, 'hold_s', 0, CALL_LIMITS.holdMaxS) ?? 0;
      const endedWithin = optionalWhole(body, 'ended_within_s', 0, 1800);
      if (!(await paired(profile))) throw new DetailError(409, NOT_PAIRED);
      const now = nowS();
      const answer = await stateOf(profile).update<WatchAnswer>(now, (file) => {
        const settings = settingsOf(file);
        if (!settings.enabled || !settings.when_asked) throw new DetailError(409, CALLS_OFF);
        if (endedWithin !== undefined) {
          const ended = file.ends.filter((end) => ids.includes(end.session_id) && end.at >= now - endedWithin).at(-1);
          if (ended) return { file, result: { status: 'ended' as const, outcome: appOutcome(ended.outcome) } };
        }
        const holdUntil = hold > 0 ? now + hold : null;
        const existing = file.watches.find((watch) => watch.session_ids.some((id) => ids.includes(id)));
        if (existing) {
          const merged: CallWatch = {
            ...existing,
            session_ids: [...new Set([...existing.session_ids, ...ids])].slice(0, CALL_LIMITS.sessionIdsPerWatch),
            title: title ?? existing.title,
            hold_until: holdUntil,
            origin: 'conduit',
            asked: true,
          };
          const watches = file.watches.map((watch) => (watch === existing ? merged : watch));
          return { file: { ...file, watches }, result: { status: 'watching' as const, id: existing.id } };
        }
        if (file.watches.length >= CALL_LIMITS.watches) {
          throw new DetailError(429, 'Too many jobs are already waiting to call you');
        }
        const watch: CallWatch = {
          id: newWatchId(),
          session_ids: ids,
          title,
          created_at: now,
          expires_at: now + CALL_LIMITS.watchTtlS,
          hold_until: holdUntil,
          pending: null,
          origin: 'conduit',
          reason: null,
          asked: true,
        };
        return {
          file: { ...file, watches: [...file.watches, watch] },
          result: { status: 'watching' as const, id: watch.id },
        };
      });
      return { status: 200, body: { ok: true as const, ...answer }, headers: NO_STORE };
    });

    bindRoute(scope, putCallWatch, async ({ query, params, body: raw }) => {
      const profile = admit(query.profile);
      const id = watchId(params.watch_id);
      const hold = holdOf(objectBody(raw));
      const now = nowS();
      const answer = await stateOf(profile).update<HoldAnswer>(now, (file) => {
        const watch = file.watches.find((candidate) => candidate.id === id);
        if (!watch) return { file, result: { status: 'gone' as const } };
        if (watch.pending !== null) {
          // The job ended during the hold: say so; releasing the hold consumes the watch.
          const result = { status: 'ended' as const, outcome: appOutcome(watch.pending) };
          if (hold > 0) return { file, result };
          return { file: { ...file, watches: file.watches.filter((other) => other !== watch) }, result };
        }
        const renewed = { ...watch, hold_until: hold > 0 ? now + hold : null };
        const watches = file.watches.map((other) => (other === watch ? renewed : other));
        return { file: { ...file, watches }, result: { status: 'watching' as const } };
      });
      return { status: 200, body: { ok: true as const, ...answer }, headers: NO_STORE };
    });

    bindRoute(scope, deleteCallWatch, async ({ query, params }) => {
      const profile = admit(query.profile);
      const id = watchId(params.watch_id);
      const removed = await stateOf(profile).update(nowS(), (file) => {
        const watches = file.watches.filter((watch) => watch.id !== id);
        return { file: { ...file, watches }, result: watches.length !== file.watches.length };
      });
      return { status: 200, body: { ok: true as const, removed }, headers: NO_STORE };
    });

    bindRoute(scope, putCallPresence, async ({ query, body: raw }) => {
      const profile = admit(query.profile);
      const hold = holdOf(objectBody(raw));
      if (!(await paired(profile))) throw new DetailError(409, NOT_PAIRED);
      const now = nowS();
      await stateOf(profile).update(now, (file) => ({
        file: { ...file, presence_until: hold > 0 ? now + hold : null },
        result: undefined,
      }));
      return {
        status: 200,
        body: { ok: true as const, status: hold > 0 ? ('present' as const) : ('away' as const) },
        headers: NO_STORE,
      };
    });

    bindRoute(scope, postCallOutcome, async ({ query, body: raw }) => {
      const profile = admit(query.profile);
      const body = objectBody(raw);
      const callId = body.call_id;
      if (typeof callId !== 'string' || !/^[A-Za-z0-9_-]{8,64}$/.test(callId)) {
        throw new DetailError(400, 'call_id must be 8 to 64 letters, digits, - or _');
      }
      const ids = sessionIds(body.session_ids ?? [], 0);
      if (body.outcome !== 'declined' && body.outcome !== 'missed') {
        throw new DetailError(400, 'outcome must be declined or missed');
      }
      const outcome = body.outcome;
      const kind = optionalText(body, 'kind', 32);
      const title = optionalText(body, 'title', CALL_LIMITS.titleMaxChars);
      const reason = optionalText(body, 'reason', CALL_LIMITS.reasonMaxChars);
      const age = optionalWhole(body, 'age_s', 0, 86_399) ?? 0;
      if (!(await paired(profile))) throw new DetailError(409, NOT_PAIRED);
      const now = nowS();
      await stateOf(profile).update(now, (file) => {
        // A retried report keeps the first; one already told to Hermes is not told again.
        if (file.told.includes(callId) || file.outcomes.some((known) => known.call_id === callId)) {
          return { file, result: undefined };
        }
        const record: CallOutcomeRecord = {
          call_id: callId,
          session_ids: ids,
          outcome,
          kind,
          title,
          reason,
          at: now - age,
          received_at: now,
        };
        const outcomes = [...file.outcomes, record].slice(-CALL_LIMITS.outcomesKept);
        return { file: { ...file, outcomes }, result: undefined };
      });
      return { status: 200, body: { ok: true as const, status: 'recorded' as const }, headers: NO_STORE };
    });
  },
};
