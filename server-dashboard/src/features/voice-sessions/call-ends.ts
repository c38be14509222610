import type { Logger } from '../../log.js';
import type { Timers } from '../../kernel/timers.js';
import type { VoiceEngine } from './voice-requests.js';

/**
 * Ending a saved call in Hermes (the seed: "a save that stores new turns ends that call's session, the
 * same way Hermes ends a Desktop chat"), off the request path, one call at a time:
 * 1. `on_session_end` (platform `desktop`, reason `voice_call_ended`, `model` = the engine);
 * 2. the memory provider: started for the session, `sync_turn` per user→assistant exchange,
 *    `on_session_end` with the call's turns, shut down;
 * 3. `on_session_finalize` through Hermes' `finalize_session`.
 * A call kept with a chat runs only the memory step under the chat's session: the chat goes on.
 *
 * The steps are Hermes' in-process Python APIs (plugin hooks, `MemoryManager`, `hermes_cli.lifecycle`),
 * so hermes-call-end.ts runs them with Hermes' own code on Hermes' Python. On a machine without Hermes'
 * Python there are no steps and each end is logged as not run; the queue's bounds below hold either way.
 */

export interface CallEndTurn {
  role: 'user' | 'assistant';
  text: string;
}

/** One saved call to end: only the turns this save stored (earlier turns ended with their own call). */
export interface CallEnd {
  /** `session`: a saved voice-call session; `chat`: a call kept with a chat (memory only). */
  kind: 'session' | 'chat';
  profile: string;
  /** The profile's Hermes home. */
  home: string;
  /** The saved session, or the chat's session for a chat call. */
  sessionId: string;
  title: string | null;
  engine: VoiceEngine;
  turns: CallEndTurn[];
}

export interface CallEndStep {
  /** Named in the log (`on_session_end`, `memory`, `on_session_finalize`). */
  name: string;
  /** Whether a call kept with a chat runs it: only memory does, since no session ended. */
  forChatCalls: boolean;
  /** Runs the step; `signal` aborts when the queue stops waiting for this end. */
  run(call: CallEnd, signal: AbortSignal): Promise<void>;
}

/** How one end finished, reported for each end (the log says it too). */
export type CallEndOutcome =
  | 'ended'
  /** Ran with at least one failed step (each logged; the rest still ran). */
  | 'ended_with_failures'
  /** Took longer than 120 s: left to finish on its own while the next call ends. */
  | 'abandoned'
  /** An abandoned end finally finished: its profile counts one stuck end fewer. */
  | 'finished_late'
  /** Three ends of its profile are still stuck: ended without the steps. */
  | 'skipped_stuck'
  /** 20 ends were already waiting: ended without the steps. */
  | 'skipped_full'
  /** This host has no step to run: nothing of Hermes' end ran. */
  | 'unsupported';

export interface CallEndReport {
  call: CallEnd;
  outcome: CallEndOutcome;
}

export const CALL_END_BOUNDS = {
  /** A memory provider (a network service) can hang; past this the end is left to finish on its own. */
  timeoutMs: 120_000,
  /** Ends waiting their turn; past it a call ends without the steps rather than piling up behind a slow provider. */
  maxWaiting: 20,
  /**
   * Ends of one profile left running past their timeout. Each holds whatever the provider holds; past
   * this, that profile's calls end without the steps until one finishes (other profiles go on).
   */
  maxAbandonedPerProfile: 3,
} as const;

export interface CallEndQueueOptions {
  steps: readonly CallEndStep[];
  timers: Timers;
  log: Logger;
  /** Told how each end finished (tests wait on it instead of sleeping). */
  onReport?: (report: CallEndReport) => void;
}

/** Runs saved calls' ends in the background, one at a time, within CALL_END_BOUNDS. */
export class CallEndQueue {
  private readonly waiting: CallEnd[] = [];
  private readonly abandoned = new Map<string, number>();
  /** Profiles already told that no end runs here: once per profile, not once per save. */
  private readonly toldUnsupported = new Set<string>();
  private running = false;

  constructor(private readonly options: CallEndQueueOptions) {}

  /** Queues a call's end; never waits and never throws (a save is not held up by its end). */
  enqueue(call: CallEnd): void {
    if (this.options.steps.length === 0) {
      if (!this.toldUnsupported.has(call.profile)) {
        this.toldUnsupported.add(call.profile);
        this.options.log.warn(
          "saved voice calls end without Hermes' session-end hooks and memory: no Hermes Python found (set CONDUIT_HERMES_PYTHON)",
          { profile: call.profile },
        );
      }
      this.report(call, 'unsupported');
      return;
    }
    if (this.waiting.length >= CALL_END_BOUNDS.maxWaiting) {
      this.options.log.warn('voice call ended without its Hermes steps: too many ends waiting', {
        profile: call.profile,
        session_id: call.sessionId,
        waiting: this.waiting.length,
      });
      this.report(call, 'skipped_full');
      return;
    }
    this.waiting.push(call);
    if (!this.running) void this.drain();
  }

  private report(call: CallEnd, outcome: CallEndOutcome): void {
    this.options.onReport?.({ call, outcome });
  }

  private async drain(): Promise<void> {
    this.running = true;
    try {
      for (let call = this.waiting.shift(); call !== undefined; call = this.waiting.shift()) {
        await this.end(call);
      }
    } finally {
      this.running = false;
    }
  }

  private async end(call: CallEnd): Promise<void> {
    const stuck = this.abandoned.get(call.profile) ?? 0;
    if (stuck >= CALL_END_BOUNDS.maxAbandonedPerProfile) {
      this.options.log.warn('voice call ended without its Hermes steps: earlier ends of this profile are stuck', {
        profile: call.profile,
        session_id: call.sessionId,
        stuck,
      });
      this.report(call, 'skipped_stuck');
      return;
    }
    const abort = new AbortController();
    const steps = this.runSteps(call, abort.signal);
    const finished = await new Promise<boolean>((resolve) => {
      const cancel = this.options.timers.after(CALL_END_BOUNDS.timeoutMs, () => resolve(false));
      void steps.then(() => {
        cancel();
        resolve(true);
      });
    });
    if (finished) {
      this.report(call, (await steps) ? 'ended' : 'ended_with_failures');
      return;
    }
    // Left to finish on its own: counted against its profile until it does.
    abort.abort();
    this.abandoned.set(call.profile, stuck + 1);
    void steps.then(() => {
      const left = (this.abandoned.get(call.profile) ?? 1) - 1;
      if (left > 0) this.abandoned.set(call.profile, left);
      else this.abandoned.delete(call.profile);
      this.options.log.info('voice call end finished after being left to run', {
        profile: call.profile,
        session_id: call.sessionId,
      });
      this.report(call, 'finished_late');
    });
    this.options.log.warn('voice call end still running after 120 s; the next call ends meanwhile', {
      profile: call.profile,
      session_id: call.sessionId,
    });
    this.report(call, 'abandoned');
  }

  /** Every step that applies, in order; a failed one is logged and the rest still run. True when all succeeded. */
  private async runSteps(call: CallEnd, signal: AbortSignal): Promise<boolean> {
    let clean = true;
    for (const step of this.options.steps) {
      if (call.kind === 'chat' && !step.forChatCalls) continue;
      try {
        await step.run(call, signal);
      } catch (error) {
        clean = false;
        this.options.log.warn('voice call end step failed', {
          profile: call.profile,
          session_id: call.sessionId,
          step: step.name,
          error: error instanceof Error ? error.name : typeof error,
        });
      }
    }
    return clean;
  }
}
