import { createHash } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import type { CallRequest } from '@conduit/contracts/relay/events';
import type { Clock } from '../../clock.js';
import type { Logger } from '../../log.js';
import type { Timers } from '../../kernel/timers.js';
import type { Whereabouts, WhereIs } from '../../kernel/whereabouts.js';
import { clean } from '../../notifier/text.js';
import { eventId } from '../../notifier/event-id.js';
import { buildEvent, type NotificationEvent } from '../../notifier/events.js';
import type { ProfileScope } from '../../notifier/notifier.js';
import type { SendOutcome } from '../../delivery/outcome.js';
import {
  CALLS_FILE,
  CallsState,
  settingsOf,
  withTurnEnd,
  type CallOutcomeRecord,
  type CallsFile,
  type CallWatch,
  type TurnOutcome,
} from './calls-state.js';

/**
 * What happens to a call that would go out (EVENTS.md, "Call requests": `_decide`):
 * - `off`: the settings do not allow this kind of call;
 * - `busy`: the user is in a Live Voice call (presence), or another of Conduit's watches is held;
 * - `limited`: the gap, hour or day limit is reached;
 * - `call`: it rings.
 */
export type CallDecision = 'off' | 'busy' | 'limited' | 'call';

/** Why a call is `limited`: EVENTS.md's gap, hour and day limits, and `place` (the seed, "No calls at places"). */
export type LimitedReason = 'gap' | 'hour' | 'day' | 'place';

export type { Whereabouts } from '../../kernel/whereabouts.js';

/**
 * The decision and, for `limited`, its reason. `where` is asked only when the settings avoid places,
 * so a profile that never set them never opens its location store; without it (no location on this
 * host) the place is unknown.
 */
export function callVerdict(
  file: CallsFile,
  watch: CallWatch,
  nowS: number,
  where?: () => Whereabouts,
): { decision: CallDecision; reason?: LimitedReason } {
  const settings = settingsOf(file);
  if (!settings.enabled) return { decision: 'off' };
  if (watch.origin === 'alert' ? !settings.alerts : watch.asked ? !settings.when_asked : !settings.decides) {
    return { decision: 'off' };
  }
  if (file.presence_until !== null && file.presence_until > nowS) return { decision: 'busy' };
  const heldElsewhere = file.watches.some(
    (other) =>
      other.id !== watch.id && other.origin === 'conduit' && other.hold_until !== null && other.hold_until > nowS,
  );
  if (heldElsewhere) return { decision: 'busy' };
  const last = file.history.at(-1);
  if (last !== undefined && nowS - last < settings.min_gap_s) return { decision: 'limited', reason: 'gap' };
  if (file.history.filter((at) => at > nowS - 3600).length >= settings.per_hour) {
    return { decision: 'limited', reason: 'hour' };
  }
  if (file.history.filter((at) => at > nowS - 86_400).length >= settings.per_day) {
    return { decision: 'limited', reason: 'day' };
  }
  if (settings.avoid_places.length > 0 || settings.avoid_unknown_place) {
    const here = where?.() ?? { placeId: null, known: false };
    const avoided = here.placeId !== null && settings.avoid_places.includes(here.placeId);
    if (avoided || (settings.avoid_unknown_place && !here.known)) return { decision: 'limited', reason: 'place' };
  }
  return { decision: 'call' };
}

export function decideCall(file: CallsFile, watch: CallWatch, nowS: number, where?: () => Whereabouts): CallDecision {
  return callVerdict(file, watch, nowS, where).decision;
}

/** The call request's body text (EVENTS.md): the reason, else how the titled job ended. */
export function callBody(watch: CallWatch, kind: CallRequest['kind']): string {
  if (kind === 'approval') return watch.reason ? `Hermes needs your OK: ${watch.reason}` : 'Hermes needs your OK.';
  if (kind === 'question') {
    return watch.reason ? `Hermes has a question for you: ${watch.reason}` : 'Hermes has a question for you.';
  }
  if (kind === 'failed' && watch.origin === 'alert') return 'Hermes ran into a problem with your request.';
  if (watch.reason) return watch.reason;
  const subject = watch.title ? `\u201c${watch.title}\u201d` : 'Your job';
  if (kind === 'failed') return `${subject} failed.`;
  if (kind === 'stopped') return `${subject} stopped before finishing.`;
  return `${subject} finished.`;
}

/** The watch an alert call is made from (never stored: it rings at once or not at all). */
function alertWatch(
  id: string,
  sessionId: string,
  kind: CallRequest['kind'],
  reason: string | null,
  nowS: number,
): CallWatch {
  return {
    id,
    session_ids: [sessionId],
    title: null,
    created_at: nowS,
    expires_at: nowS,
    hold_until: null,
    pending: kind === 'failed' || kind === 'done' || kind === 'stopped' ? kind : null,
    origin: 'alert',
    reason: reason ? clean(reason, 200) || null : null,
    asked: false,
  };
}

/** A session id as Hermes makes them; a call naming one that is not carries no job details. */
const CALL_SESSION_ID = /^[A-Za-z0-9_.:-]{1,180}$/;

function ago(seconds: number): string {
  const minutes = Math.round(seconds / 60);
  if (minutes < 1) return 'just now';
  if (minutes < 90) return `${minutes} minute${minutes === 1 ? '' : 's'} ago`;
  const hours = Math.round(minutes / 60);
  return `${hours} hour${hours === 1 ? '' : 's'} ago`;
}

/** "Conduit: the user declined the phone call you placed 12 minutes ago (about “Build”)." */
export function outcomeNote(outcome: CallOutcomeRecord, nowS: number): string {
  const what = outcome.outcome === 'declined' ? 'declined' : 'missed';
  const about = outcome.title ? ` (about \u201c${outcome.title}\u201d)` : '';
  return `Conduit: the user ${what} the phone call you placed ${ago(nowS - outcome.at)}${about}.`;
}

export interface CallDispatchPorts {
  clock: Clock;
  log: Logger;
  pluginVersion: string;
  /** The Hermes root home: the sweep looks for conduit-calls.json in it and in each profile. */
  hermesHome: string;
  /** One attempt to post an event to the profile's relay (redacted and sealed at send time). */
  send(profile: ProfileScope, event: NotificationEvent): Promise<SendOutcome>;
  /** The usual push, through the delivery queue. */
  enqueue(profile: ProfileScope, event: NotificationEvent): boolean;
  sleep(ms: number): Promise<void>;
  /** Alert calls wait on these (a minute). */
  timers: Timers;
  /**
   * Where the user is, for avoided places (location answers it; app.ts wires it); absent when this host
   * has no location, and then the place is unknown.
   */
  whereIs?: WhereIs;
}

/** An approval or question still unanswered this long rings, when alerts are on (EVENTS.md). */
export const ALERT_DELAY_MS = 60_000;

export type AlertKind = 'approval' | 'question';

/** An alert call's id: `sha256("\0".join([kind, *ids, seed]))[:24]`, so a replayed alert is the same call. */
export function alertCallId(kind: string, sessionIds: readonly string[], seed: string): string {
  return createHash('sha256')
    .update([kind, ...sessionIds, seed].join('\0'), 'utf8')
    .digest('hex')
    .slice(0, 24);
}

/** How often holds that ran out are looked for, beside every turn end. */
export const CALL_SWEEP_MS = 15_000;

/** Waits between the three attempts at a call request (EVENTS.md: delays 0, 2 and 4 seconds). */
export const CALL_RETRY_DELAYS_MS = [0, 2_000, 4_000] as const;

/**
 * Turns the end of a watched job's turn into a call (`call.requested` through the relay), or into the
 * usual push when the settings, presence or limits hold it back or the relay will not ring. A watch
 * is consumed under the state file's lock, so a replayed hook (or a second process) finds nothing
 * left and a job calls at most once.
 */
export class CallDispatcher {
  private readonly states = new Map<string, CallsState>();
  /** Calls being delivered now; tests and shutdown wait on them. */
  private readonly inFlight = new Set<Promise<void>>();
  /** Alert calls waiting for their minute, by profile home, session and kind: the function cancels one. */
  private readonly alerts = new Map<string, { home: string; sessionId: string; kind: AlertKind; cancel: () => void }>();

  constructor(private readonly ports: CallDispatchPorts) {}

  /** The profile's calls state, one object per home (the MCP tools change it too). */
  stateOf(home: string): CallsState {
    let state = this.states.get(home);
    if (!state) this.states.set(home, (state = new CallsState(home)));
    return state;
  }

  private nowS(): number {
    return this.ports.clock.now() / 1000;
  }

  /**
   * The profile's whereabouts, asked at most once per decision and only if the settings need it. An
   * unreadable location store reads as unknown: the call then rings unless the user holds calls when
   * the place is unknown.
   */
  private whereOf(home: string): () => Whereabouts {
    let known: Whereabouts | null = null;
    return () => {
      if (known) return known;
      const whereIs = this.ports.whereIs;
      try {
        known = whereIs ? whereIs(home) : { placeId: null, known: false };
      } catch (error) {
        this.ports.log.warn('location unreadable for calls', { error: error instanceof Error ? error.name : 'error' });
        known = { placeId: null, known: false };
      }
      return known;
    };
  }

  /**
   * A turn of `sessionId` ended. `usual` is the push it would send otherwise (its reply or failure
   * notice; null when it sends none). Returns once the state is written; a call goes out in the
   * background, with `usual` as its fallback.
   */
  async turnEnded(
    profile: ProfileScope,
    sessionId: string,
    outcome: TurnOutcome,
    usual: NotificationEvent | null,
  ): Promise<void> {
    // The turn ended: nothing it waited on can still need the user.
    this.alertSettled(profile, sessionId);
    const now = this.nowS();
    const where = this.whereOf(profile.home);
    let action: { call: CallWatch | null; usual: boolean };
    try {
      action = await this.stateOf(profile.home).update<{ call: CallWatch | null; usual: boolean }>(now, (current) => {
        let file = withTurnEnd(current, sessionId, outcome, now);
        const watch = file.watches.find((candidate) => candidate.session_ids.includes(sessionId));
        if (!watch) {
          // With alerts on, a failed turn calls in place of its "Turn failed" push.
          if (outcome !== 'failed' || !usual || !settingsOf(file).alerts)
            return { file, result: { call: null, usual: true } };
          const alert = alertWatch(alertCallId('failed', [sessionId], usual.event_id), sessionId, 'failed', null, now);
          if (decideCall(file, alert, now, where) !== 'call') return { file, result: { call: null, usual: true } };
          return { file: { ...file, history: [...file.history, now] }, result: { call: alert, usual: false } };
        }
        if (watch.hold_until !== null && watch.hold_until > now) {
          // Held while the call goes on: the job keeps its outcome and gets its usual push.
          if (watch.pending === null) {
            file = { ...file, watches: file.watches.map((w) => (w === watch ? { ...w, pending: outcome } : w)) };
          }
          return { file, result: { call: null, usual: true } };
        }
        file = { ...file, watches: file.watches.filter((w) => w !== watch) };
        const consumed = { ...watch, pending: watch.pending ?? outcome };
        const { decision, reason } = callVerdict(file, consumed, now, where);
        if (decision !== 'call') {
          this.ports.log.info('call held back; sending the usual push', { decision, ...(reason ? { reason } : {}) });
          return { file, result: { call: null, usual: true } };
        }
        return { file: { ...file, history: [...file.history, now] }, result: { call: consumed, usual: false } };
      });
    } catch (error) {
      // An unreadable conduit-calls.json must not cost the user the push itself.
      this.ports.log.warn('calls state unreadable; sending the usual push', {
        error: error instanceof Error ? error.name : 'error',
      });
      action = { call: null, usual: true };
    }
    if (action.call) this.track(this.deliver(profile, action.call, usual));
    else if (action.usual && usual) this.ports.enqueue(profile, usual);
  }

  /**
   * Holds that ran out: a job that ended during the hold calls now (its usual push went out when it
   * ended); a job still running keeps its watch, unheld, for its next turn end. Runs on a timer and
   * at every turn end, so a restart in the middle of a hold never loses the call.
   */
  /**
   * Calls the holds that ran out: every profile with calls state (the timer), or only `only` (a turn end
   * of that profile, which must not lock every other profile's file on each turn).
   */
  async sweep(only?: ProfileScope): Promise<void> {
    try {
      await this.sweepOnce(only);
    } catch (error) {
      this.ports.log.warn('calls sweep failed', { error: error instanceof Error ? error.name : 'error' });
    }
  }

  private async sweepOnce(only?: ProfileScope): Promise<void> {
    for (const profile of only ? [only] : await this.profilesWithState()) {
      const now = this.nowS();
      const where = this.whereOf(profile.home);
      let calls: CallWatch[] = [];
      try {
        // Read first: the lock is taken only when a hold has run out (most sweeps find none).
        const seen = await this.stateOf(profile.home).read(now);
        if (!seen.watches.some((watch) => watch.hold_until !== null && watch.hold_until <= now)) continue;
        calls = await this.stateOf(profile.home).update(now, (current) => {
          let file = current;
          const due: CallWatch[] = [];
          for (const watch of current.watches) {
            if (watch.hold_until === null || watch.hold_until > now) continue;
            if (watch.pending === null) {
              file = {
                ...file,
                watches: file.watches.map((w) => (w.id === watch.id ? { ...w, hold_until: null } : w)),
              };
              continue;
            }
            file = { ...file, watches: file.watches.filter((w) => w.id !== watch.id) };
            if (decideCall(file, watch, now, where) === 'call') {
              file = { ...file, history: [...file.history, now] };
              due.push(watch);
            }
          }
          return { file, result: due };
        });
      } catch (error) {
        this.ports.log.warn('calls state unreadable; sweep skipped', {
          error: error instanceof Error ? error.name : 'error',
        });
      }
      for (const watch of calls) this.track(this.deliver(profile, watch, null));
    }
  }

  /**
   * An approval or a clarify question is waiting on the user in `sessionId`: with alerts on, it rings
   * if nobody answers it within a minute (kind approval / question, its text as the reason). Answering
   * it anywhere, or the turn ending, cancels the call (alertSettled).
   */
  alertRaised(profile: ProfileScope, sessionId: string, kind: AlertKind, reason: string, seed: string): void {
    if (!sessionId) return;
    const key = `${profile.home}\0${sessionId}\0${kind}`;
    this.alerts.get(key)?.cancel();
    const cancel = this.ports.timers.after(ALERT_DELAY_MS, () => {
      this.alerts.delete(key);
      this.track(this.fireAlert(profile, sessionId, kind, reason, seed));
    });
    this.alerts.set(key, { home: profile.home, sessionId, kind, cancel });
  }

  /** Answered (or the turn ended): cancels the session's waiting alert calls, of one kind or all. */
  alertSettled(profile: ProfileScope, sessionId: string | undefined, kind?: AlertKind): void {
    for (const [key, alert] of this.alerts) {
      if (alert.home !== profile.home) continue;
      if (sessionId && alert.sessionId !== sessionId) continue;
      if (kind && alert.kind !== kind) continue;
      alert.cancel();
      this.alerts.delete(key);
    }
  }

  /** Alert calls waiting for their minute (tests, the control API). */
  get waitingAlerts(): number {
    return this.alerts.size;
  }

  private async fireAlert(
    profile: ProfileScope,
    sessionId: string,
    kind: AlertKind,
    reason: string,
    seed: string,
  ): Promise<void> {
    const now = this.nowS();
    const alert = alertWatch(alertCallId(kind, [sessionId], seed), sessionId, kind, reason, now);
    const where = this.whereOf(profile.home);
    let call = false;
    try {
      call = await this.stateOf(profile.home).update(now, (file) => {
        if (decideCall(file, alert, now, where) !== 'call') return { file, result: false };
        return { file: { ...file, history: [...file.history, now] }, result: true };
      });
    } catch (error) {
      this.ports.log.warn('calls state unreadable; alert call skipped', {
        error: error instanceof Error ? error.name : 'error',
      });
    }
    // Its answerable notification already went out: an alert that does not ring needs no other push.
    if (call) await this.deliver(profile, alert, null, kind);
  }

  /**
   * The one-line note for the next turn of a session whose call the user declined or missed (the
   * pre_llm_call hook adds it to the turn's context). Taken once: the call id moves to `told`, so a
   * late retry of the report is not told again.
   */
  async takeNote(profile: ProfileScope, sessionId: string): Promise<string | null> {
    const now = this.nowS();
    const waiting = await this.stateOf(profile.home).read(now);
    if (!waiting.outcomes.some((outcome) => outcome.session_ids.includes(sessionId))) return null;
    const taken = await this.stateOf(profile.home).update(now, (file) => {
      const mine = file.outcomes.filter((outcome) => outcome.session_ids.includes(sessionId));
      return {
        file: {
          ...file,
          outcomes: file.outcomes.filter((outcome) => !mine.includes(outcome)),
          told: [...file.told, ...mine.map((outcome) => outcome.call_id)],
        },
        result: mine,
      };
    });
    if (taken.length === 0) return null;
    return taken.map((outcome) => outcomeNote(outcome, now)).join('\n');
  }

  /** Resolves when every call started so far has been delivered or fallen back. */
  async settled(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
  }

  /** A turn end's sweep of its own profile, in the background (settled() waits for it too). */
  sweepAfterTurn(profile: ProfileScope): void {
    this.track(this.sweep(profile));
  }

  private track(delivery: Promise<void>): void {
    const tracked = delivery.finally(() => this.inFlight.delete(tracked));
    this.inFlight.add(tracked);
  }

  private async profilesWithState(): Promise<ProfileScope[]> {
    const homes: ProfileScope[] = [{ name: 'default', home: this.ports.hermesHome }];
    const profilesDir = path.join(this.ports.hermesHome, 'profiles');
    const names = await readdir(profilesDir).catch(() => [] as string[]);
    for (const name of names) homes.push({ name, home: path.join(profilesDir, name) });
    const withFile: ProfileScope[] = [];
    for (const profile of homes) {
      const entries = await readdir(profile.home).catch(() => [] as string[]);
      if (entries.includes(CALLS_FILE)) withFile.push(profile);
    }
    return withFile;
  }

  /**
   * The `call.requested` event of a consumed watch. One malformed session id drops the job details
   * (the `call` object) as the relay would; the event still names the chat to open.
   */
  callEvent(
    profile: ProfileScope,
    watch: CallWatch,
    kind: CallRequest['kind'] = watch.pending ?? 'done',
  ): NotificationEvent {
    const ids = watch.session_ids.slice(0, 4);
    const event = buildEvent({
      eventId: eventId('call', watch.id, kind),
      type: 'call.requested',
      pluginVersion: this.ports.pluginVersion,
      profile: profile.name,
      sessionId: ids[0],
      title: watch.title ?? undefined,
      body: callBody(watch, kind),
    });
    if (!ids.every((id) => CALL_SESSION_ID.test(id))) return event;
    const call: CallRequest = { id: watch.id, kind, session_ids: ids };
    if (watch.title) call.title = watch.title;
    if (watch.reason) call.reason = watch.reason;
    return { ...event, call };
  }

  /**
   * Up to three attempts, 0, 2 and 4 seconds apart with the same event id: transport errors and relay
   * 5xx are retried; a refusal (4xx such as `call_limit`), APNs failing, or a retry the relay reports
   * as a duplicate (taken but never sent) stops. A call that never went out sends `usual` instead.
   */
  private async deliver(
    profile: ProfileScope,
    watch: CallWatch,
    usual: NotificationEvent | null,
    kind: CallRequest['kind'] = watch.pending ?? 'done',
  ): Promise<void> {
    const event = this.callEvent(profile, watch, kind);
    let outcome: SendOutcome = { kind: 'retry', reason: 'not_sent' };
    for (const [attempt, delay] of CALL_RETRY_DELAYS_MS.entries()) {
      if (delay > 0) await this.ports.sleep(delay);
      outcome = await this.ports.send(profile, event).catch((error: unknown): SendOutcome => ({
        kind: 'retry',
        reason: error instanceof Error ? error.name : 'error',
      }));
      if (outcome.kind === 'unpaired') return;
      if (outcome.kind === 'accepted') {
        if (outcome.duplicate && attempt > 0) break; // taken after a 5xx, but never sent
        this.ports.log.info('call requested', { kind: event.call?.kind ?? 'done' });
        return;
      }
      if (outcome.kind === 'failed') break;
    }
    this.ports.log.warn('call request did not go out; sending the usual push', {
      outcome: outcome.kind,
      reason: outcome.kind === 'failed' ? outcome.error : outcome.kind === 'retry' ? outcome.reason : undefined,
    });
    if (usual) this.ports.enqueue(profile, usual);
  }
}
