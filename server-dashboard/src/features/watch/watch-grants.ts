import { watchGrantIdPattern } from '@conduit/contracts/dashboard/watch-tools';
import type { Clock } from '../../clock.js';
import type { HostActivity } from '../../kernel/activity.js';
import type { Timers } from '../../kernel/timers.js';
import type { Logger } from '../../log.js';
import type { ProfileScope } from '../../notifier/notifier.js';
import { answerOfFailure, refusal, type AnswerDelivery, type WatchAnswer, type WatchArgs } from './watch-answer.js';
import type { CallJobSettings, JobGrant } from './watch-jobs.js';
import { WATCH_LIMITS } from './watch-limits.js';
import type { WatchRelay, WatchRelayTarget } from './watch-relay.js';

/** What the book asks of the relay once a grant is open. */
export type WatchGrantRelay = Pick<WatchRelay, 'poll' | 'postResult' | 'closeGrant'>;
import {
  openWatchMessage,
  sealWatchMessage,
  watchPlaintext,
  type SealedWatchMessage,
  type WatchKeys,
} from './watch-seal.js';

/** Why this host closed a grant (logged; the relay learns only that the host closed it). */
export type GrantCloseReason = 'revoked' | 'expired' | 'replaced' | 'relay' | 'shutdown';

/** One open grant: whose it is, where its relay is, its keys and what it allows. */
export interface WatchGrant extends JobGrant {
  readonly id: string;
  readonly profile: ProfileScope;
  /** The profile's rate-limit key (the lookups count the Watch's calls with the phone's). */
  readonly limiterKey: string;
  readonly target: WatchRelayTarget;
  readonly keys: WatchKeys;
  readonly tools: ReadonlySet<string>;
  readonly openedAtMs: number;
  /** On this host's clock: past it, the grant's calls are no longer answered. */
  readonly expiresAtMs: number;
  settings: CallJobSettings;
}

interface GrantState {
  grant: WatchGrant;
  /** rids already taken, so a call the relay hands over twice is run once. */
  seenRids: Set<string>;
  /** Ends the held poll and any wait between polls. */
  stop: AbortController;
  cancelExpiry: () => void;
}

export interface WatchGrantBookOptions {
  relay: WatchGrantRelay;
  clock: Clock;
  timers: Timers;
  log: Logger;
  activity: HostActivity;
  random: (size: number) => Uint8Array;
  /** Runs one opened call of a grant (the tool is one the grant allows); `delivery` tells what became of its answer. */
  runTool(grant: WatchGrant, tool: string, args: WatchArgs, delivery: AnswerDelivery): Promise<WatchAnswer>;
  /** Told after a grant closed here, for whatever rides on it (jobs). */
  released(grant: WatchGrant): void;
}

/** Only string and integer argument values are kept (CRYPTO.md §3); anything else is as if left out. */
function callArgs(raw: unknown): WatchArgs {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return {};
  const args: Record<string, string | number> = {};
  for (const [name, value] of Object.entries(raw)) {
    if (typeof value === 'string' || (typeof value === 'number' && Number.isSafeInteger(value))) args[name] = value;
  }
  return args;
}

/**
 * The open Watch tool grants of this host, and the long poll each one runs: a grant is added once the
 * relay opened it, polled until it closes (revoked, expired, replaced by a profile's third grant, gone
 * at the relay, or the service stopping), and each sealed call it receives is opened, run, sealed and
 * posted back. The host opens no inbound route of its own.
 */
export class WatchGrantBook {
  private readonly open = new Map<string, GrantState>();
  private readonly closing = new Set<Promise<void>>();
  private shutDown = false;

  constructor(private readonly options: WatchGrantBookOptions) {}

  /**
   * Starts serving a grant the relay opened. A profile keeps at most two: the oldest others close
   * first, since a third grant means the oldest call is over.
   */
  add(grant: WatchGrant): void {
    const same = [...this.open.values()]
      .filter((state) => state.grant.profile.home === grant.profile.home)
      .sort((a, b) => a.grant.openedAtMs - b.grant.openedAtMs);
    for (const state of same.slice(0, Math.max(0, same.length - WATCH_LIMITS.liveGrantsPerProfile + 1))) {
      this.close(state.grant, 'replaced');
    }
    const stop = new AbortController();
    const cancelExpiry = this.options.timers.after(Math.max(0, grant.expiresAtMs - this.options.clock.now()), () =>
      this.close(grant, 'expired'),
    );
    this.open.set(grant.id, { grant, seenRids: new Set(), stop, cancelExpiry });
    if (this.shutDown) {
      this.close(grant, 'shutdown');
      return;
    }
    void this.pollLoop(grant, stop.signal);
  }

  /** The profile's open grant with this id; a grant past its expiry is closed on the way. */
  openOf(profile: ProfileScope, grantId: string): WatchGrant | undefined {
    const grant = this.open.get(grantId)?.grant;
    if (!grant || grant.profile.home !== profile.home) return undefined;
    if (this.options.clock.now() >= grant.expiresAtMs) {
      this.close(grant, 'expired');
      return undefined;
    }
    return grant;
  }

  /** How many grants are open (for tests and metrics). */
  get size(): number {
    return this.open.size;
  }

  /**
   * Closes a grant here at once (its poll ends, its calls are no longer answered) and tells the relay
   * in the background, unless the relay is the one that said it is gone. Idempotent.
   */
  close(grant: WatchGrant, reason: GrantCloseReason): void {
    const state = this.open.get(grant.id);
    if (!state || state.grant !== grant) return;
    this.open.delete(grant.id);
    state.stop.abort();
    state.cancelExpiry();
    this.options.log.info('watch grant closed', { profile: grant.profile.name, reason });
    this.options.released(grant);
    if (reason === 'relay') return;
    const told = this.options.relay.closeGrant(grant.target, grant.id).finally(() => this.closing.delete(told));
    this.closing.add(told);
  }

  /** The service is stopping: every grant closes and the relay is told before this resolves. */
  async closeAll(): Promise<void> {
    this.shutDown = true;
    for (const state of [...this.open.values()]) this.close(state.grant, 'shutdown');
    await Promise.all([...this.closing]);
  }

  private async pollLoop(grant: WatchGrant, stopped: AbortSignal): Promise<void> {
    let failures = 0;
    while (!stopped.aborted) {
      if (this.options.clock.now() >= grant.expiresAtMs) {
        this.close(grant, 'expired');
        return;
      }
      const answer = await this.options.relay.poll(grant.target, grant.id, stopped);
      if (stopped.aborted) return;
      if (answer.kind === 'gone') {
        this.options.log.info('watch grant gone at the relay', { profile: grant.profile.name, status: answer.status });
        this.close(grant, 'relay');
        return;
      }
      if (answer.kind === 'failed') {
        failures += 1;
        this.options.log.warn('watch grant poll failed', { profile: grant.profile.name, status: answer.status });
        // Doubling waits: a relay restarting or rate limiting us is ridden out without hammering it.
        const waitMs = Math.min(WATCH_LIMITS.pollRetryMaxMs, WATCH_LIMITS.pollRetryBaseMs * 2 ** (failures - 1));
        await this.pause(waitMs, stopped);
        continue;
      }
      failures = 0;
      // Calls run beside the poll: the next poll goes out at once, so a second call is never held up.
      for (const call of answer.calls) void this.answerCall(grant, call);
    }
  }

  private pause(ms: number, stopped: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const cancel = this.options.timers.after(ms, resolve);
      stopped.addEventListener(
        'abort',
        () => {
          cancel();
          resolve();
        },
        { once: true },
      );
    });
  }

  private async answerCall(grant: WatchGrant, call: { rid: string; n: string; ct: string }): Promise<void> {
    const state = this.open.get(grant.id);
    // A rid of another shape cannot be answered (the relay's result route refuses it), and one seen
    // before was already run: a repeat must not search or start anything twice.
    if (!state || state.grant !== grant || !watchGrantIdPattern.test(call.rid) || state.seenRids.has(call.rid)) return;
    if (state.seenRids.size >= WATCH_LIMITS.ridsRemembered) {
      const oldest = state.seenRids.values().next().value;
      if (oldest !== undefined) state.seenRids.delete(oldest);
    }
    state.seenRids.add(call.rid);
    if (this.options.clock.now() >= grant.expiresAtMs) {
      // Past its half hour on this host's clock: closing it answers the waiting Watch 410 at the relay.
      this.close(grant, 'expired');
      return;
    }
    const done = this.options.activity.begin('watch tool call');
    const settled = new CallDelivery();
    let delivered = false;
    try {
      const answer = await this.answerOf(grant, call, settled);
      if (!this.open.has(grant.id)) return;
      const sealed = this.seal(grant, call.rid, answer);
      delivered = await this.options.relay.postResult(grant.target, grant.id, call.rid, sealed.message);
      if (!delivered) this.options.log.warn('watch answer not delivered', { profile: grant.profile.name });
      // An answer swapped for the too-large refusal reached the Watch, but not as the tool made it.
      delivered &&= sealed.whole;
    } finally {
      settled.settle(delivered);
      done();
    }
  }

  /** The call opened and run, or why not — every refusal answered sealed, so the Watch hears it at once. */
  private async answerOf(
    grant: WatchGrant,
    call: SealedWatchMessage & { rid: string },
    delivery: AnswerDelivery,
  ): Promise<WatchAnswer> {
    const opened = openWatchMessage(grant.keys.call, 'call', grant.id, call.rid, call, WATCH_LIMITS.maxCallBytes);
    if (!opened.ok) {
      this.options.log.warn('watch call refused', { profile: grant.profile.name, why: opened.why });
      if (opened.why === 'too large') return refusal(413, 'The Watch call is too large');
      return refusal(
        400,
        opened.why === 'did not verify' ? 'The Watch call did not verify' : 'The Watch call is not readable',
      );
    }
    const tool = opened.payload.tool;
    if (typeof tool !== 'string' || tool === '') return refusal(400, 'The Watch call names no tool');
    if (!grant.tools.has(tool)) return refusal(403, `This grant doesn't allow ${tool.slice(0, 40)}`);
    try {
      return await this.options.runTool(grant, tool, callArgs(opened.payload.args), delivery);
    } catch (error) {
      // A tool that throws instead of answering still gets the Watch an answer, by the error's type only.
      return answerOfFailure(tool.slice(0, 40), error);
    }
  }

  /**
   * Seals an answer with the result key; one too large for the relay becomes a sealed refusal instead
   * (`whole` false).
   */
  private seal(grant: WatchGrant, rid: string, answer: WatchAnswer): { message: SealedWatchMessage; whole: boolean } {
    const sealed = sealWatchMessage(
      grant.keys.result,
      'result',
      grant.id,
      rid,
      watchPlaintext(answer),
      this.options.random(12),
    );
    if (sealed.ct.length <= WATCH_LIMITS.maxResultCtChars) return { message: sealed, whole: true };
    const tooLarge = refusal(502, 'The answer is too large for the Watch');
    const message = sealWatchMessage(
      grant.keys.result,
      'result',
      grant.id,
      rid,
      watchPlaintext(tooLarge),
      this.options.random(12),
    );
    return { message, whole: false };
  }
}

/** One call's delivery: listeners hear once, when the book knows whether the relay took the answer. */
class CallDelivery implements AnswerDelivery {
  private readonly listeners: ((delivered: boolean) => void)[] = [];
  private outcome: boolean | undefined;

  onSettled(listener: (delivered: boolean) => void): void {
    if (this.outcome === undefined) this.listeners.push(listener);
    else listener(this.outcome);
  }

  settle(delivered: boolean): void {
    if (this.outcome !== undefined) return;
    this.outcome = delivered;
    for (const listener of this.listeners.splice(0)) listener(delivered);
  }
}
