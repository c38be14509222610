import type { z } from 'zod';
import type {
  liveActivityPhase,
  liveActivityProgress,
  liveActivityToolCategory,
} from '@conduit/contracts/relay/live-activities';
import type { HookPayload } from '../../bridge/hook-payload.js';
import type { Clock } from '../../clock.js';
import type { Timers } from '../../kernel/timers.js';
import type { Logger } from '../../log.js';
import type { ProfileScope } from '../../notifier/notifier.js';
import { contextPercent, contextUseOf } from './context-use.js';

export type Phase = z.infer<typeof liveActivityPhase>;
export type ToolCategory = z.infer<typeof liveActivityToolCategory>;
export type ProgressReport = z.infer<typeof liveActivityProgress>;

/** Where a profile's reports go, read from its pairing at send time. */
export interface ProgressTarget {
  relayUrl: string;
  /** The gateway credential (Bearer); never logged. */
  credential: string;
  /** Redact on: the tool category is left out. */
  redact: boolean;
}

/**
 * How the relay answered a report: someone watches the session (keep reporting), nobody does (ask
 * again in 15 s), the relay has no such route (a relay before Live Activities: off for 30 minutes),
 * or it failed (try again at the next change).
 */
export type ProgressAnswer = 'watching' | 'unwatched' | 'absent' | 'error';

export interface ReporterPorts {
  clock: Clock;
  timers: Timers;
  log: Logger;
  target(profile: ProfileScope): Promise<ProgressTarget | null>;
  post(target: ProgressTarget, report: ProgressReport): Promise<ProgressAnswer>;
}

/** The seed's pacing (Lock Screen progress). */
export const LIVE_ACTIVITY_PACING = {
  /** At most one report every 5 s per watched turn; the end goes at once. */
  coalesceMs: 5_000,
  /** A turn nobody watches is asked about again only this often. */
  unwatchedAskMs: 15_000,
  /** A relay without the route is left alone this long. */
  absentBackoffMs: 30 * 60_000,
  /** A relay that took a report is taken to still take them this long (GET /capabilities). */
  acceptedForMs: 10 * 60_000,
  /** A relay that could not be asked (down, 5xx) is asked again only after this. */
  probeRetryMs: 60_000,
} as const;

/**
 * The session of the report that asks a relay whether it takes reports: no phone registers it, so the
 * relay answers `watching: false` and pushes nothing.
 */
export const PROBE_SESSION_ID = 'conduit-capability-probe';

interface TurnProgress {
  profile: ProfileScope;
  sessionId: string;
  startedAt: number;
  phase: Phase;
  category: ToolCategory | undefined;
  toolCount: number;
  /** How full the model's context is (0–100), once a model request said so. */
  contextPct: number | undefined;
  /** When the last report went (ms), or null before the first. */
  lastSent: number | null;
  /** Nobody watched at the last report: no report before this (ms). */
  quietUntil: number;
  /** A report scheduled for later; cancels it. */
  scheduled: (() => void) | null;
  sending: boolean;
  /** A change arrived while a report was on its way: send again after it. */
  dirty: boolean;
}

const CATEGORY_WORDS: [ToolCategory, readonly string[]][] = [
  ['terminal', ['terminal', 'shell', 'process', 'execute', 'bash', 'command', 'exec']],
  ['files', ['file', 'files', 'patch', 'read', 'write', 'edit', 'ls', 'glob', 'grep', 'directory']],
  ['memory', ['memory', 'memories', 'recall', 'session', 'skill', 'skills']],
  ['web', ['web', 'fetch', 'search', 'extract', 'crawl', 'http', 'url']],
  ['media', ['image', 'vision', 'audio', 'speech', 'tts', 'transcribe', 'video']],
  ['agent', ['delegate', 'agent', 'subagent', 'todo', 'clarify', 'cron', 'send', 'message']],
];

/** Hermes' tool names, by the coarse category the Lock Screen shows (never the name itself). */
export function toolCategory(toolName: string): ToolCategory {
  const name = toolName.toLowerCase();
  if (name.startsWith('mcp_')) return 'connector';
  if (name.startsWith('browser')) return 'browser';
  const words = name.split(/[^a-z0-9]+/).filter(Boolean);
  for (const [category, known] of CATEGORY_WORDS) {
    if (words.some((word) => known.includes(word))) return category;
  }
  return 'other';
}

/**
 * Keeps the Live Activity of a turn current through the relay (POST /v1/live-activities/progress):
 * phase changes, tool starts (the count and a coarse category), approvals and questions, each model
 * request's context use (Hermes with pre_/post_api_request), the end.
 * Reports are coalesced to one every 5 s per watched turn with the end at once; a turn the relay says
 * nobody watches is asked about again only every 15 s; a relay without the route is left alone for 30
 * minutes. Nothing here waits on the network for Hermes: the hooks only record, reports go out after.
 */
export class LiveActivityReporter {
  private readonly turns = new Map<string, TurnProgress>();
  /** Relay URLs without the route, until when (ms). */
  private readonly absent = new Map<string, number>();
  /** Relay URLs that took a report, until when (ms) that is taken as still true. */
  private readonly accepting = new Map<string, number>();
  /** Relay URLs that could not be asked, until when (ms) they are not asked again. */
  private readonly unasked = new Map<string, number>();
  private readonly probes = new Map<string, Promise<boolean>>();
  private readonly inFlight = new Set<Promise<void>>();
  /**
   * By session: the model's context window and the last percentage, kept across turns (a chat's context
   * carries over), so a turn reports its context from its start and a request that names no window is
   * measured against the one an earlier request named. Bounded like the turns.
   */
  private readonly contexts = new Map<string, { windowTokens: number | undefined; pct: number | undefined }>();

  constructor(private readonly ports: ReporterPorts) {}

  private key(profile: ProfileScope, sessionId: string): string {
    return `${profile.home}\0${sessionId}`;
  }

  /** A turn starts, or its model is asked again (thinking). */
  thinking(profile: ProfileScope, sessionId: string): void {
    const now = this.ports.clock.now();
    const key = this.key(profile, sessionId);
    if (!this.turns.has(key)) {
      this.turns.set(key, {
        profile,
        sessionId,
        startedAt: Math.floor(now / 1000),
        phase: 'thinking',
        category: undefined,
        toolCount: 0,
        contextPct: this.contexts.get(key)?.pct,
        lastSent: null,
        quietUntil: 0,
        scheduled: null,
        sending: false,
        dirty: false,
      });
      this.bound();
    }
    this.change(profile, sessionId, (turn) => {
      turn.phase = 'thinking';
      turn.category = undefined;
    });
  }

  toolStarted(profile: ProfileScope, sessionId: string, toolName: string): void {
    this.change(profile, sessionId, (turn) => {
      turn.phase = 'tool';
      turn.toolCount = Math.min(turn.toolCount + 1, 9_999);
      turn.category = toolCategory(toolName);
    });
  }

  waiting(profile: ProfileScope, sessionId: string, phase: 'approval' | 'input'): void {
    this.change(profile, sessionId, (turn) => {
      turn.phase = phase;
    });
  }

  /** An approval was answered: the tool that waited on it runs. */
  resumed(profile: ProfileScope, sessionId: string): void {
    this.change(profile, sessionId, (turn) => {
      if (turn.phase === 'approval' || turn.phase === 'input') turn.phase = 'tool';
    });
  }

  responding(profile: ProfileScope, sessionId: string): void {
    this.change(profile, sessionId, (turn) => {
      turn.phase = 'responding';
      turn.category = undefined;
    });
  }

  /**
   * A model request of the turn starts or answered (pre_/post_api_request): its context use. Only a
   * changed percentage makes a report, so a turn of many requests is not reported once per request.
   */
  modelRequest(profile: ProfileScope, sessionId: string, payload: HookPayload): void {
    const use = contextUseOf(payload);
    if (!use) return;
    const key = this.key(profile, sessionId);
    const known = this.contexts.get(key);
    const windowTokens = use.windowTokens ?? known?.windowTokens;
    const pct =
      use.usedTokens !== undefined && windowTokens !== undefined
        ? contextPercent(use.usedTokens, windowTokens)
        : known?.pct;
    this.contexts.delete(key);
    this.contexts.set(key, { windowTokens, pct });
    while (this.contexts.size > 1_000) this.contexts.delete(this.contexts.keys().next().value as string);
    const turn = this.turns.get(key);
    if (!turn || pct === undefined || turn.contextPct === pct) return;
    this.change(profile, sessionId, (changed) => {
      changed.contextPct = pct;
    });
  }

  /** The turn ended: its report goes at once, with `end`, and the turn is forgotten. */
  ended(profile: ProfileScope, sessionId: string, phase: 'done' | 'failed' | 'stopped'): void {
    const key = this.key(profile, sessionId);
    const turn = this.turns.get(key);
    if (!turn) return;
    this.turns.delete(key);
    turn.scheduled?.();
    turn.scheduled = null;
    turn.phase = phase;
    turn.category = undefined;
    this.track(this.send(turn, true));
  }

  /**
   * Whether the profile's reports reach a relay that takes them (`live-activities` in GET
   * /capabilities): known from the last answer the relay gave, else asked once with a report for a
   * session no phone registers. Not paired: false.
   */
  async reporting(profile: ProfileScope): Promise<boolean> {
    const target = await this.ports.target(profile).catch(() => null);
    if (!target) return false;
    const now = this.ports.clock.now();
    const url = target.relayUrl;
    if ((this.absent.get(url) ?? 0) > now || (this.unasked.get(url) ?? 0) > now) return false;
    if ((this.accepting.get(url) ?? 0) > now) return true;
    let probe = this.probes.get(url);
    if (!probe) {
      probe = this.probe(target).finally(() => this.probes.delete(url));
      this.probes.set(url, probe);
    }
    return probe;
  }

  private async probe(target: ProgressTarget): Promise<boolean> {
    const report: ProgressReport = {
      session_id: PROBE_SESSION_ID,
      phase: 'done',
      tool_count: 0,
      started_at: Math.floor(this.ports.clock.now() / 1000),
    };
    const answer = await this.ports.post(target, report).catch((): ProgressAnswer => 'error');
    this.remember(target.relayUrl, answer);
    if (answer === 'error')
      this.unasked.set(target.relayUrl, this.ports.clock.now() + LIVE_ACTIVITY_PACING.probeRetryMs);
    return answer === 'watching' || answer === 'unwatched';
  }

  /** What an answer says about the relay: it takes reports, or has no such route. */
  private remember(relayUrl: string, answer: ProgressAnswer): void {
    const now = this.ports.clock.now();
    if (answer === 'absent') {
      this.absent.set(relayUrl, now + LIVE_ACTIVITY_PACING.absentBackoffMs);
      this.accepting.delete(relayUrl);
    } else if (answer === 'watching' || answer === 'unwatched') {
      this.accepting.set(relayUrl, now + LIVE_ACTIVITY_PACING.acceptedForMs);
      this.unasked.delete(relayUrl);
    }
  }

  /** Resolves when every report started so far has been answered (tests, shutdown). */
  async settled(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
  }

  /** Turns followed now (tests). */
  get following(): number {
    return this.turns.size;
  }

  stop(): void {
    for (const turn of this.turns.values()) turn.scheduled?.();
    this.turns.clear();
  }

  /** A Hermes that dies mid-turn never ends it: the oldest turns go past 1,000. */
  private bound(): void {
    while (this.turns.size > 1_000) {
      const oldest = this.turns.keys().next().value as string;
      this.turns.get(oldest)?.scheduled?.();
      this.turns.delete(oldest);
    }
  }

  private change(profile: ProfileScope, sessionId: string, apply: (turn: TurnProgress) => void): void {
    const turn = this.turns.get(this.key(profile, sessionId));
    if (!turn) return; // not a turn this service saw start (a subagent, or before a restart)
    apply(turn);
    this.schedule(turn);
  }

  private schedule(turn: TurnProgress): void {
    if (turn.sending) {
      turn.dirty = true;
      return;
    }
    if (turn.scheduled) return; // the scheduled report will carry this change
    const now = this.ports.clock.now();
    const due = Math.max(
      turn.quietUntil,
      turn.lastSent === null ? now : turn.lastSent + LIVE_ACTIVITY_PACING.coalesceMs,
    );
    if (due <= now) {
      this.track(this.send(turn, false));
      return;
    }
    turn.scheduled = this.ports.timers.after(due - now, () => {
      turn.scheduled = null;
      if (this.turns.get(this.key(turn.profile, turn.sessionId)) === turn) this.track(this.send(turn, false));
    });
  }

  private track(work: Promise<void>): void {
    const tracked = work.finally(() => this.inFlight.delete(tracked));
    this.inFlight.add(tracked);
  }

  private async send(turn: TurnProgress, end: boolean): Promise<void> {
    const target = await this.ports.target(turn.profile).catch(() => null);
    if (!target) return; // not paired: nothing to report to
    const now = this.ports.clock.now();
    const absentUntil = this.absent.get(target.relayUrl);
    if (absentUntil !== undefined && absentUntil > now) return;
    const report: ProgressReport = {
      session_id: turn.sessionId,
      phase: turn.phase,
      tool_count: turn.toolCount,
      started_at: turn.startedAt,
      ...(turn.category && !target.redact ? { tool_category: turn.category } : {}),
      ...(turn.contextPct !== undefined ? { context_pct: turn.contextPct } : {}),
      ...(end ? { end: true } : {}),
    };
    turn.sending = true;
    turn.dirty = false;
    turn.lastSent = now;
    let answer: ProgressAnswer;
    try {
      answer = await this.ports.post(target, report);
    } catch {
      answer = 'error';
    }
    turn.sending = false;
    this.remember(target.relayUrl, answer);
    if (answer === 'absent') {
      this.ports.log.info('relay has no Live Activity route; reports off for 30 minutes');
      return;
    }
    if (answer === 'unwatched') turn.quietUntil = this.ports.clock.now() + LIVE_ACTIVITY_PACING.unwatchedAskMs;
    if (answer === 'watching') turn.quietUntil = 0;
    if (!end && turn.dirty && this.turns.get(this.key(turn.profile, turn.sessionId)) === turn) this.schedule(turn);
  }
}
