import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import { hookArg, hookBool, hookString, type HookPayload } from '../bridge/hook-payload.js';
import type { AppSource } from './app-submissions.js';
import { cronJobId } from './cron-run.js';
import { readDesktopSelection, watchedOnDesktop } from './desktop-watch.js';
import { eventId } from './event-id.js';
import { approvalDecision, buildEvent, clarificationText, type NotificationEvent } from './events.js';
import { replySourceOf, type ReplySource } from './reply-source.js';
import { isCronSilent, isSilentReply } from './silence.js';
import { plainText } from './text.js';
import { notificationTitle, type NotificationType } from './titles.js';
import { voicePersonaNote } from './voice-note.js';
import { setBounded } from '../bounded-map.js';
import { TOOL_CONTEXT_ARG } from '../mcp/tool-context.js';

/** A Hermes profile the hook came from: its name and its home folder. */
export interface ProfileScope {
  name: string;
  home: string;
}

/** What the hook command prints back to Hermes; null prints nothing. */
export type HookAnswer =
  | { context: string }
  | { action: 'block'; message: string }
  /** pre_tool_call: the tool runs with these arguments instead. */
  | { action: 'modify'; args: Record<string, unknown> }
  | null;

export interface NotifierPorts {
  clock: Clock;
  log: Logger;
  pluginVersion: string;
  /** How long a finished reply waits for its turn's end before it is sent anyway (Hermes without on_session_end). */
  replyHoldMs: number;
  enqueue(profile: ProfileScope, event: NotificationEvent): boolean;
  isCronMuted(profile: ProfileScope, jobId: string): Promise<boolean>;
  isReplySourceOn(profile: ProfileScope, source: ReplySource): Promise<boolean>;
  sessionTitle(profile: ProfileScope, sessionId: string): Promise<string | null>;
  /**
   * The chats Hermes Desktop has selected on this host now (null: unknown, push as before). Defaults
   * to `<profile home>/conduit-desktop-selected.json`.
   */
  desktopSelection?(profile: ProfileScope): Promise<ReadonlySet<string> | null>;
  /**
   * The app (Conduit, Desktop) that sent the message that started a turn, matched by its text among
   * the prompts the dashboard proxy saw before `startedAt`; null when none matches.
   */
  appTurnSource?(profile: ProfileScope, userMessage: string, startedAt: number): AppSource | null;
  approvals: {
    /** Takes over delivery of an approval's notification (with an answerable card when it has one). */
    raised(profile: ProfileScope, payload: HookPayload, event: NotificationEvent): Promise<void> | void;
    /** Answered natively (post_approval_response): the card is retired. */
    answered(profile: ProfileScope, sessionKey: string): void;
  };
  /**
   * Calls from Hermes (features/calls): a turn end of a watched job calls instead of its usual push,
   * and a declined or missed call is told to the next turn of its sessions. Absent: the usual push.
   */
  calls?: {
    turnEnded(
      profile: ProfileScope,
      sessionId: string,
      outcome: 'done' | 'failed' | 'stopped',
      usual: NotificationEvent | null,
    ): Promise<void>;
    takeNote(profile: ProfileScope, sessionId: string): Promise<string | null>;
    /** An approval or question waits on the user; with alerts on it rings after a minute unanswered. */
    alertRaised(
      profile: ProfileScope,
      sessionId: string,
      kind: 'approval' | 'question',
      reason: string,
      seed: string,
    ): void;
    /** It was answered (natively or on the phone): no call. */
    alertSettled(profile: ProfileScope, sessionId: string | undefined, kind: 'approval' | 'question'): void;
  };
  /**
   * The "Conduit first" line of a main conversation's turn: what the phone shares with the profile and
   * which Conduit tool reads it (kernel/phone-data/conduit-first.ts); absent or null: no line.
   */
  conduitFirst?: (profile: ProfileScope) => string | null;
  /** Lock Screen progress of the turns (features/live-activities); absent: none reported. */
  progress?: {
    thinking(profile: ProfileScope, sessionId: string): void;
    toolStarted(profile: ProfileScope, sessionId: string, toolName: string): void;
    waiting(profile: ProfileScope, sessionId: string, phase: 'approval' | 'input'): void;
    resumed(profile: ProfileScope, sessionId: string): void;
    responding(profile: ProfileScope, sessionId: string): void;
    ended(profile: ProfileScope, sessionId: string, phase: 'done' | 'failed' | 'stopped'): void;
    /** A model request starts or answered (pre_/post_api_request): its context use. */
    modelRequest?(profile: ProfileScope, sessionId: string, payload: HookPayload): void;
  };
  /**
   * The Conduit MCP tools that need their calling turn (Hermes' names for them) and the signed context
   * added to their arguments (mcp/tool-context.ts). Absent: their calls pass unchanged.
   */
  toolContext?: {
    tools: readonly string[];
    /** `cronJob`: the job whose run this turn is (a call watch's run reports instead of calling). */
    mint(
      profile: ProfileScope,
      sessionId: string,
      turnId: string | undefined,
      isChild: boolean,
      cronJob: string | null,
    ): string;
  };
  clarify: {
    /** Holds a clarify call for an answer from the phone; null lets Hermes' native clarify run. */
    ask(profile: ProfileScope, payload: HookPayload, isChild: boolean): Promise<HookAnswer>;
    settledNatively(profile: ProfileScope, payload: HookPayload): void;
  };
}

interface HeldReply {
  profile: ProfileScope;
  event: NotificationEvent;
  sendAt: number;
}

/** A turn in flight: when its first pre_llm_call came, and its turn id when Hermes named one. */
interface RunningTurn {
  startedAt: number;
  turnId: string | undefined;
}

/** Per-profile memory of the turns in flight: which sessions are subagents, which turns run. */
interface ProfileState {
  children: Set<string>;
  runningTurns: Map<string, RunningTurn>;
  heldReplies: Map<string, HeldReply>;
}

const DEFAULT_APPROVAL_BODY = 'Hermes is waiting for your approval.';
/**
 * Per-profile memory is bounded: a Hermes that dies mid-turn never sends the end hooks, and a
 * long-running service must not grow with every session it ever saw. Oldest entries go first.
 */
const MAX_TRACKED = 10_000;

function remember<K, V>(map: Map<K, V>, key: K, value: V): void {
  setBounded(map, key, value, MAX_TRACKED);
}

/**
 * Turns Hermes hook events into notifications, by the seed's rules:
 * - replies wait for their turn's end, so a failed turn sends only its failure notice;
 * - subagents (child sessions) send nothing of their own, and a delegated task that ends while its
 *   parent's turn still runs is part of that turn's reply;
 * - silent replies and muted cron jobs send nothing; reply sources the user turned off send no reply.
 * Hooks only enqueue: nothing here waits on the network, except a held clarify call.
 */
export class Notifier {
  private readonly profiles = new Map<string, ProfileState>();

  constructor(private readonly ports: NotifierPorts) {}

  private state(profile: ProfileScope): ProfileState {
    let state = this.profiles.get(profile.home);
    if (!state) {
      state = { children: new Set(), runningTurns: new Map(), heldReplies: new Map() };
      this.profiles.set(profile.home, state);
    }
    return state;
  }

  async handle(profile: ProfileScope, payload: HookPayload): Promise<HookAnswer> {
    const state = this.state(profile);
    const sessionId = hookString(payload, 'session_id') ?? '';
    switch (payload.hook_event_name) {
      case 'pre_llm_call': {
        if (sessionId) this.turnStarted(state, sessionId, hookString(payload, 'turn_id'));
        if (sessionId && !state.children.has(sessionId)) this.ports.progress?.thinking(profile, sessionId);
        const voice = voicePersonaNote(hookArg(payload, 'conversation_history'), hookArg(payload, 'user_message'));
        const call =
          sessionId && !state.children.has(sessionId) && this.ports.calls
            ? await this.ports.calls.takeNote(profile, sessionId).catch(() => null)
            : null;
        const first = sessionId && !state.children.has(sessionId) ? (this.ports.conduitFirst?.(profile) ?? null) : null;
        const notes = [first, call, voice].filter((note): note is string => Boolean(note));
        return notes.length > 0 ? { context: notes.join('\n\n') } : null;
      }
      case 'post_llm_call':
        if (sessionId && !state.children.has(sessionId)) this.ports.progress?.responding(profile, sessionId);
        await this.onReply(profile, state, payload, sessionId);
        return null;
      case 'on_session_end':
        await this.onTurnEnd(profile, state, payload, sessionId);
        return null;
      case 'pre_approval_request':
        await this.onApproval(profile, payload);
        return null;
      case 'post_approval_response': {
        const key = hookString(payload, 'session_key');
        if (key) this.ports.approvals.answered(profile, key);
        this.ports.calls?.alertSettled(profile, sessionId || undefined, 'approval');
        if (sessionId) this.ports.progress?.resumed(profile, sessionId);
        return null;
      }
      case 'subagent_start': {
        const child = hookString(payload, 'child_session_id');
        if (child) {
          state.children.add(child);
          while (state.children.size > MAX_TRACKED)
            state.children.delete(state.children.values().next().value as string);
        }
        return null;
      }
      case 'subagent_stop':
        await this.onSubagentStop(profile, state, payload);
        return null;
      case 'pre_tool_call': {
        if (sessionId && payload.tool_name && !state.children.has(sessionId)) {
          if (payload.tool_name === 'clarify') this.ports.progress?.waiting(profile, sessionId, 'input');
          else this.ports.progress?.toolStarted(profile, sessionId, payload.tool_name);
        }
        const signer = this.ports.toolContext;
        if (signer && sessionId && payload.tool_name && signer.tools.includes(payload.tool_name)) {
          const args = typeof payload.tool_input === 'object' && payload.tool_input !== null ? payload.tool_input : {};
          const context = signer.mint(
            profile,
            sessionId,
            hookString(payload, 'turn_id'),
            state.children.has(sessionId),
            cronJobId(hookString(payload, 'task_id'), sessionId),
          );
          return { action: 'modify', args: { ...args, [TOOL_CONTEXT_ARG]: context } };
        }
        if (payload.tool_name !== 'clarify') return null;
        const isChild = state.children.has(sessionId);
        if (!isChild) {
          const seed = hookString(payload, 'tool_call_id') ?? hookString(payload, 'turn_id') ?? '';
          this.ports.calls?.alertRaised(profile, sessionId, 'question', clarificationText(payload.tool_input), seed);
        }
        const answer = await this.ports.clarify.ask(profile, payload, isChild);
        // Answered on the phone (the hook carries the answer back): no call. Otherwise Hermes asks natively.
        if (answer !== null) this.ports.calls?.alertSettled(profile, sessionId, 'question');
        return answer;
      }
      // Hermes versions without these hooks never send them; the rest of the progress still works.
      case 'pre_api_request':
      case 'post_api_request':
        if (sessionId && !state.children.has(sessionId))
          this.ports.progress?.modelRequest?.(profile, sessionId, payload);
        return null;
      case 'post_tool_call':
        if (payload.tool_name === 'clarify') {
          this.ports.clarify.settledNatively(profile, payload);
          this.ports.calls?.alertSettled(profile, sessionId, 'question');
        }
        return null;
      default:
        return null;
    }
  }

  /**
   * A turn starts at its first pre_llm_call; a repeated one for the same turn id keeps that start, so
   * the Desktop rule measures the whole turn and not its last model call.
   */
  private turnStarted(state: ProfileState, sessionId: string, turnId: string | undefined): void {
    const current = state.runningTurns.get(sessionId);
    if (current && turnId !== undefined && current.turnId === turnId) return;
    remember(state.runningTurns, sessionId, { startedAt: this.ports.clock.now(), turnId });
  }

  /**
   * Where the message that started the turn came from. A turn on a messaging platform or the terminal
   * is placed by its platform; any other (an app's, or one Hermes does not name) by the app socket that
   * sent its text, when the proxy saw it. Null: not placed, push as before.
   */
  private replySource(
    profile: ProfileScope,
    state: ProfileState,
    payload: HookPayload,
    sessionId: string,
  ): ReplySource | null {
    const byPlatform = replySourceOf(hookString(payload, 'platform'));
    if (byPlatform) return byPlatform;
    const startedAt = state.runningTurns.get(sessionId)?.startedAt;
    const userMessage = hookString(payload, 'user_message');
    if (startedAt === undefined || !userMessage || !this.ports.appTurnSource) return null;
    return this.ports.appTurnSource(profile, userMessage, startedAt);
  }

  /** The seed's two-minute rule: a quick reply in a chat selected on Desktop was watched there. */
  private async watchedOnDesktop(profile: ProfileScope, state: ProfileState, sessionId: string): Promise<boolean> {
    const started = state.runningTurns.get(sessionId)?.startedAt;
    if (started === undefined) return false; // no start time: push as before (and no file read)
    const now = this.ports.clock.now();
    const read = this.ports.desktopSelection ?? ((p: ProfileScope) => readDesktopSelection(p.home, now));
    const selection = await read(profile).catch(() => null);
    return watchedOnDesktop(sessionId, started, now, selection);
  }

  /** Sends replies whose turn never reported its end within the hold. Called by a timer. */
  flushDueReplies(): void {
    const now = this.ports.clock.now();
    for (const state of this.profiles.values()) {
      for (const [sessionId, held] of state.heldReplies) {
        if (held.sendAt > now) continue;
        state.heldReplies.delete(sessionId);
        this.ports.enqueue(held.profile, held.event);
      }
    }
  }

  private async titled(profile: ProfileScope, type: NotificationType, sessionId: string): Promise<string | undefined> {
    if (!sessionId) return undefined;
    let title: string | null = null;
    try {
      title = await this.ports.sessionTitle(profile, sessionId);
    } catch {
      title = null; // an unreadable session store leaves the generic copy
    }
    return notificationTitle(type, title, profile.name);
  }

  private event(
    profile: ProfileScope,
    type: NotificationType,
    id: string,
    fields: { sessionId?: string; title?: string | undefined; body?: string; decision?: NotificationEvent['decision'] },
  ): NotificationEvent {
    return buildEvent({
      eventId: id,
      type,
      pluginVersion: this.ports.pluginVersion,
      profile: profile.name,
      sessionId: fields.sessionId,
      title: fields.title,
      body: fields.body,
      decision: fields.decision,
    });
  }

  private async cronMuted(profile: ProfileScope, payload: HookPayload, sessionId: string): Promise<boolean> {
    const job = cronJobId(hookString(payload, 'task_id'), sessionId);
    return job !== null && (await this.ports.isCronMuted(profile, job));
  }

  private async onReply(profile: ProfileScope, state: ProfileState, payload: HookPayload, sessionId: string) {
    if (!sessionId || state.children.has(sessionId)) return;
    const reply = hookString(payload, 'assistant_response') ?? '';
    const job = cronJobId(hookString(payload, 'task_id'), sessionId);
    if (!reply.trim() || isSilentReply(reply)) return;
    if (job !== null && (isCronSilent(reply) || (await this.ports.isCronMuted(profile, job)))) return;
    if (job === null) {
      const source = this.replySource(profile, state, payload, sessionId);
      if (source && !(await this.ports.isReplySourceOn(profile, source))) return;
      if (await this.watchedOnDesktop(profile, state, sessionId)) return;
    }
    const turnId = hookString(payload, 'turn_id');
    const event = this.event(profile, 'response.ready', eventId('response', turnId, sessionId), {
      sessionId,
      title: await this.titled(profile, 'response.ready', sessionId),
      body: plainText(reply),
    });
    // The turn may still fail after its last model call; the reply goes out only once it ends well.
    remember(state.heldReplies, sessionId, { profile, event, sendAt: this.ports.clock.now() + this.ports.replyHoldMs });
  }

  private async onTurnEnd(profile: ProfileScope, state: ProfileState, payload: HookPayload, sessionId: string) {
    if (!sessionId) return;
    state.runningTurns.delete(sessionId);
    const held = state.heldReplies.get(sessionId);
    state.heldReplies.delete(sessionId);
    if (state.children.has(sessionId)) return;
    const { outcome, usual } = await this.turnEndPush(profile, payload, sessionId, held);
    this.ports.progress?.ended(profile, sessionId, outcome);
    if (this.ports.calls) await this.ports.calls.turnEnded(profile, sessionId, outcome, usual);
    else if (usual) this.ports.enqueue(profile, usual);
  }

  /** How a turn ended, and the push it sends: its reply, its failure notice, or none. */
  private async turnEndPush(
    profile: ProfileScope,
    payload: HookPayload,
    sessionId: string,
    held: HeldReply | undefined,
  ): Promise<{ outcome: 'done' | 'failed' | 'stopped'; usual: NotificationEvent | null }> {
    if (hookBool(payload, 'completed')) return { outcome: 'done', usual: held?.event ?? null };
    // The user stopped it: no reply, no failure notice.
    if (hookBool(payload, 'interrupted')) return { outcome: 'stopped', usual: null };
    if (await this.cronMuted(profile, payload, sessionId)) return { outcome: 'failed', usual: null };
    const turnId = hookString(payload, 'turn_id');
    const usual = this.event(profile, 'turn.failed', eventId('failure', turnId, sessionId), {
      sessionId,
      title: await this.titled(profile, 'turn.failed', sessionId),
    });
    return { outcome: 'failed', usual };
  }

  private async onApproval(profile: ProfileScope, payload: HookPayload) {
    if (hookString(payload, 'surface') === 'smart') return; // Hermes' smart approval decides itself
    const sessionKey = hookString(payload, 'session_key') ?? '';
    const description = hookString(payload, 'description') ?? '';
    const turnId = hookString(payload, 'turn_id') || crypto.randomUUID().replace(/-/g, '');
    const id = eventId(
      'approval',
      sessionKey,
      turnId,
      hookString(payload, 'pattern_key'),
      hookString(payload, 'command'),
    );
    const sessionId = sessionKey || (hookString(payload, 'session_id') ?? '');
    const event = this.event(profile, 'approval.needed', id, {
      sessionId,
      title: await this.titled(profile, 'approval.needed', hookString(payload, 'session_id') ?? sessionId),
      body: description.trim() || DEFAULT_APPROVAL_BODY,
      decision: approvalDecision(sessionKey, description),
    });
    await this.ports.approvals.raised(profile, payload, event);
    const turnSession = hookString(payload, 'session_id') ?? '';
    if (turnSession) {
      this.ports.calls?.alertRaised(profile, turnSession, 'approval', description, id);
      this.ports.progress?.waiting(profile, turnSession, 'approval');
    }
  }

  private async onSubagentStop(profile: ProfileScope, state: ProfileState, payload: HookPayload) {
    const child = hookString(payload, 'child_session_id') ?? '';
    state.children.delete(child);
    const parent = hookString(payload, 'parent_session_id') ?? '';
    if (!parent || state.children.has(parent)) return;
    // Still inside the parent's turn: the result is part of that turn's reply.
    if (state.runningTurns.has(parent)) return;
    const status = hookString(payload, 'child_status')?.trim() || 'finished';
    const summary = hookString(payload, 'child_summary') ?? '';
    this.ports.enqueue(
      profile,
      this.event(
        profile,
        'background_task.finished',
        eventId('subagent', hookString(payload, 'parent_turn_id'), child, status),
        {
          sessionId: parent,
          title: await this.titled(profile, 'background_task.finished', parent),
          body: summary.trim() ? plainText(summary) : `A delegated task ${status}.`,
        },
      ),
    );
  }
}

export { clarificationText };
