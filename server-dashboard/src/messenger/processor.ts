/**
 * The inbox processor: takes pending rows in arrival order, decides at intake whether a row becomes
 * a Hermes turn (PROTOCOL.md §5, §7), runs turns one at a time per chat, sends the replies with
 * Idempotency-Keys derived from the inbound event (§8), and settles a row only when the turn that
 * consumed it ended successfully. A failure returns the row to pending one second later.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { messageEvent, reactionEvent, type MessageEvent } from '@conduit/contracts/messenger/envelope';
import {
  AgentRunFailedError,
  AgentTurnError,
  type AgentBackend,
  type ApprovalChoice,
  type TurnImage,
} from './agent-backend.js';
import { APPROVAL_REFUSAL_TEXT, mayAnswerApproval, type PendingApproval } from './approvals.js';
import type { ReactionSpec } from './components.js';
import type { ChatIndex } from './chat-index.js';
import {
  chatSessionId,
  COMMAND_TEXT,
  isConnectorCommand,
  mayRunCommand,
  slashCommand,
  type ConnectorCommand,
} from './commands.js';
import type { Clock, Logger } from './clock.js';
import type { BusyInputMode, GroupChatPolicy, ReplyToMode } from './config.js';
import type { Inbox, InboxRow } from './inbox.js';
import {
  approvalChoice,
  composeInboundText,
  mentionsAgent,
  reactionDataLine,
  reactionEventName,
  reactionValue,
  senderOf,
} from './inbound-text.js';
import { planReply } from './outbound.js';
import { RELAY_PLATFORM_HINT } from './platform-hint.js';
import { RelayApiError, type MessageContent, type RelayApi, type SentReaction } from './relay-api.js';
import { TypingIndicator } from './typing.js';

export const RETRY_DELAY_MS = 1_000;
/** Rows taken but not settled at once (turns waiting for their chat count too). */
export const MAX_ROWS_IN_HAND = 64;
/** Held reactions one turn carries at most (older ones first; the rest wait for the next turn). */
export const MAX_REACTIONS_PER_TURN = 20;
/** The largest inbound image handed to a turn (the reference streams at most 25 MiB). */
export const MAX_INBOUND_IMAGE_BYTES = 25 * 1024 * 1024;

/** An inbound media part as the contract's MediaPartResponse describes it (the fields we need). */
const inboundMedia = z.looseObject({
  type: z.literal('media'),
  id: z.uuid(),
  mime_type: z.string(),
  size_bytes: z.number().int().nonnegative().optional(),
});

export interface ProcessorOptions {
  inbox: Inbox;
  api: RelayApi;
  agent: AgentBackend;
  index: ChatIndex;
  clock: Clock;
  log: Logger;
  allowedContacts: ReadonlySet<string>;
  /** Who besides the requester may answer a pending approval in a group chat (approvals.ts). */
  groupApprovalAdmins: ReadonlySet<string>;
  /** Who may run which slash command (commands.ts); absent: anyone, every command. */
  commands?: { admins: ReadonlySet<string>; userAllowed: ReadonlySet<string> };
  /** What a message arriving mid-turn does (config.ts); absent: queued behind the turn. */
  busyInputMode?: BusyInputMode;
  groupChatPolicy: GroupChatPolicy;
  replyToMode: ReplyToMode;
  /** Called when the processor must stop for good (e.g. the state binding no longer holds). */
  onFatal?: (err: Error) => void;
  /** Directory a `MEDIA:` path in an answer must be inside (unset: media lines are sent as text). */
  mediaRoot?: string | null;
}

/** A chat's turn while its run goes on. */
interface RunningTurn {
  runId: string;
  /** `/stop` (or an interrupting message) asked Hermes to stop it. */
  stopped: boolean;
  /** Stopped by a newer message (busy_input_mode interrupt), not by `/stop`. */
  interrupted: boolean;
  /** Rows whose words were steered into this run: settled with it. */
  steered: string[];
  /**
   * How the run ended, once it has: a steer Hermes accepted just before the end learns here whether its
   * words were delivered (`pending_steer` says they were not).
   */
  ended?: { pendingSteer: boolean };
}

/** Per-turn send context: one Idempotency ordinal per POST, reset for every turn. */
interface TurnContext {
  eventId: string;
  inboundMessageId: string;
  ordinal: number;
  paymentOrdinal: number;
}

type Intake =
  | { kind: 'ignore'; reason: string }
  | { kind: 'approval'; chatId: string; pending: PendingApproval; choice: ApprovalChoice }
  | { kind: 'approval-refused'; event: MessageEvent }
  | { kind: 'command'; event: MessageEvent; name: ConnectorCommand }
  | { kind: 'command-refused'; event: MessageEvent; name: string }
  | { kind: 'turn'; event: MessageEvent; input: string };

const MEDIA_LINE = /^MEDIA:(\S.*)$/gm;

const CONTENT_TYPES: Record<string, string> = {
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.pdf': 'application/pdf',
  '.mp3': 'audio/mpeg',
  '.m4a': 'audio/mp4',
  '.ogg': 'audio/ogg',
  '.mp4': 'video/mp4',
  '.txt': 'text/plain',
};

export class InboxProcessor {
  private readonly o: ProcessorOptions;
  private readonly typing: TypingIndicator;
  private readonly chatChains = new Map<string, Promise<void>>();
  private readonly approvals = new Map<string, PendingApproval>();
  /** The run each chat's turn is on while it runs, and whether `/stop` asked Hermes to stop it. */
  private readonly runningTurns = new Map<string, RunningTurn>();
  /**
   * A turn whose run Hermes is still creating: a message arriving then is as busy as one arriving
   * mid-run, so it waits for the run id (undefined when the start failed) instead of starting a run of
   * its own beside it.
   */
  private readonly startingTurns = new Map<string, Promise<RunningTurn | undefined>>();
  /**
   * Rows of turns a newer message interrupted: Hermes holds their words in the session, so they are
   * settled with the next turn of the chat that ends well (a crash before then replays them).
   */
  private readonly carried = new Map<string, string[]>();
  private inHand = 0;
  private running = false;
  private pumping = false;
  private wakeAgain = false;
  private readonly inFlight = new Set<Promise<void>>();
  private idleWaiters: (() => void)[] = [];
  /** Rows settled since start (diagnostics, benchmarks). */
  settled = 0;

  constructor(options: ProcessorOptions) {
    this.o = options;
    this.typing = new TypingIndicator(options.api, options.clock);
  }

  start(): void {
    this.running = true;
    this.wake();
  }

  /**
   * Stops taking rows and waits for turns in hand, at most `graceMs`: a turn still running after
   * that stays processing/dispatched and replays on the next start, which is the safe side.
   */
  async stop(graceMs = 5_000): Promise<void> {
    this.running = false;
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, graceMs);
      timer.unref();
    });
    await Promise.race([Promise.allSettled([...this.inFlight]), grace]);
    clearTimeout(timer);
    this.typing.stopAll();
  }

  /** Takes pending rows while there is room. Re-entrant calls coalesce. */
  wake(): void {
    if (!this.running) return;
    if (this.pumping) {
      this.wakeAgain = true;
      return;
    }
    this.pumping = true;
    try {
      do {
        this.wakeAgain = false;
        // Checked once per pass: a replaced directory or a rebound database stops all intake.
        if (this.inHand < MAX_ROWS_IN_HAND) this.o.inbox.assertBound();
        while (this.running && this.inHand < MAX_ROWS_IN_HAND) {
          const row = this.o.inbox.nextPending();
          if (row === null) break;
          this.inHand += 1;
          const p = this.handle(row).finally(() => {
            this.inHand -= 1;
            this.inFlight.delete(p);
            this.wake();
            if (this.inFlight.size === 0) for (const w of this.idleWaiters.splice(0)) w();
          });
          this.inFlight.add(p);
        }
      } while (this.wakeAgain && this.running);
    } catch (err) {
      this.o.log.error('relay inbox processor stopped', { error: (err as Error).message });
      this.running = false;
      this.o.onFatal?.(err as Error);
    } finally {
      this.pumping = false;
    }
  }

  /** Resolves when no row is in hand (tests). */
  whenIdle(): Promise<void> {
    if (this.inFlight.size === 0) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  private async handle(row: InboxRow): Promise<void> {
    try {
      await this.process(row);
    } catch (err) {
      const reason = (err as Error).message;
      if (!this.running) {
        // Shutdown outlasted this turn (its grace ran out, the inbox may be closed): the row is still
        // processing or dispatched and replays on the next start, under the same Idempotency-Keys.
        this.o.log.info('relay event interrupted by shutdown; it replays on the next start', { event_id: row.eventId });
        return;
      }
      this.o.log.warn('relay event will be retried', {
        event_id: row.eventId,
        attempt: row.attemptCount,
        error: reason,
      });
      // The row stays in hand for a second so it is not retaken at once; a crash meanwhile requeues it anyway.
      await new Promise<void>((resolve) => this.o.clock.setTimeout(resolve, RETRY_DELAY_MS));
      // After stop() the inbox may be closed; the row is requeued when the inbox next opens.
      if (!this.running) return;
      this.o.inbox.retry(row.eventId, reason, err instanceof AgentRunFailedError);
    }
  }

  private async process(row: InboxRow): Promise<void> {
    const env = row.envelope;
    switch (env.event_type) {
      case 'message.received':
        return this.processMessage(row);
      case 'message.failed':
        this.o.log.warn('relay message failed', { event_id: row.eventId, data: env.data });
        this.o.inbox.ignore(row.eventId, 'message.failed (logged)');
        return;
      case 'reaction.added':
      case 'reaction.removed':
        return this.processReaction(row);
      default:
        this.o.inbox.ignore(row.eventId, `not message.received (${env.event_type})`);
    }
  }

  private async processReaction(row: InboxRow): Promise<void> {
    const parsed = reactionEvent.safeParse(row.envelope.data);
    if (!parsed.success) return this.o.inbox.ignore(row.eventId, 'invalid reaction payload');
    const r = parsed.data;
    if (r.is_from_me) return this.o.inbox.ignore(row.eventId, 'own reaction');
    if (this.o.allowedContacts.size > 0 && !this.o.allowedContacts.has(r.from_handle.id)) {
      return this.o.inbox.ignore(row.eventId, 'reaction from a contact that is not allowed');
    }
    const handler = this.o.agent.onReaction;
    if (handler === undefined) {
      // No reaction surface (the Hermes API server has none): the reaction waits, durably, for the
      // next turn in its chat, which carries it to Hermes as a data line and then settles it.
      // Synchronous on purpose: it is held before any later message of the chat is taken.
      return this.o.inbox.hold(row.eventId);
    }
    await handler({
      platform: 'relayapp',
      event_name: reactionEventName(row.envelope.event_type),
      reaction: reactionValue(r),
      user_id: r.from_handle.id,
      item_user_id: null,
      item_type: 'message',
      channel_id: r.chat_id,
      message_ts: r.message_id,
      team_id: '',
      event_ts: r.reacted_at,
      raw_event: row.envelope.data,
    });
    this.o.inbox.complete([row.eventId]);
  }

  /** Reactions held for this turn, as data lines after the words, and the rows they settle. */
  private heldReactions(row: InboxRow, chatId: string): { lines: string[]; eventIds: string[] } {
    const lines: string[] = [];
    const eventIds: string[] = [];
    for (const held of this.o.inbox.heldReactionsBefore(row.rowid, chatId, MAX_REACTIONS_PER_TURN)) {
      const r = reactionEvent.safeParse(held.envelope.data);
      const type = held.envelope.event_type;
      eventIds.push(held.eventId);
      if (r.success && (type === 'reaction.added' || type === 'reaction.removed')) {
        lines.push(reactionDataLine(type, r.data));
      }
    }
    return { lines, eventIds };
  }

  /** Intake decisions, in the reference order: payload, direction, allowlist, group addressing, content. */
  private async intake(row: InboxRow): Promise<Intake> {
    const parsed = messageEvent.safeParse(row.envelope.data);
    if (!parsed.success) return { kind: 'ignore', reason: 'invalid message.received payload' };
    const event = parsed.data;
    if (event.direction !== 'inbound') return { kind: 'ignore', reason: 'not inbound' };
    const sender = senderOf(event);
    if (this.o.allowedContacts.size > 0 && !this.o.allowedContacts.has(sender.id)) {
      return { kind: 'ignore', reason: 'sender is not in RELAY_ALLOWED_CONTACTS' };
    }
    const chatId = event.chat.id;
    this.o.index.noteChat(chatId, event.chat.is_group);
    const isGroup = event.chat.is_group === true || this.o.index.groups.has(chatId);
    if (
      isGroup &&
      this.o.groupChatPolicy === 'mentions' &&
      !mentionsAgent(event) &&
      !(await this.repliesToOwnMessage(event))
    ) {
      return { kind: 'ignore', reason: 'group message does not address this agent' };
    }
    const input = composeInboundText(event);
    if (input.trim() === '') return { kind: 'ignore', reason: 'no readable content' };
    this.o.index.noteInbound(chatId, event.id, event.sent_at ?? row.envelope.created_at);
    // Read is explicit and happens here, once the message is accepted for Hermes; a WebSocket ACK
    // never marks Read. Fire-and-forget: a failed Read must not hold up the turn.
    this.o.api.markRead(chatId).catch((err: unknown) => {
      this.o.log.warn('relay mark read failed', { chat_id: chatId, error: (err as Error).message });
    });
    const choice = approvalChoice(input);
    const pending = this.approvals.get(chatId);
    if (choice !== null && pending !== undefined) {
      // Decided here, before anything acts: a group member who is neither the requester nor an
      // admin never reaches Hermes, and the approval stays pending for the one who may answer.
      if (!mayAnswerApproval(pending, { senderId: sender.id, inGroup: isGroup }, this.o.groupApprovalAdmins)) {
        return { kind: 'approval-refused', event };
      }
      return { kind: 'approval', chatId, pending, choice };
    }
    const command = choice === null ? slashCommand(input) : null;
    if (command !== null) {
      const rules = this.o.commands ?? { admins: new Set<string>(), userAllowed: new Set<string>() };
      if (!mayRunCommand(command.name, sender.id, rules)) return { kind: 'command-refused', event, name: command.name };
      // The connector's own commands; any other goes to Hermes as the turn's words.
      if (isConnectorCommand(command.name)) return { kind: 'command', event, name: command.name };
    }
    return { kind: 'turn', event, input };
  }

  private async repliesToOwnMessage(event: MessageEvent): Promise<boolean> {
    const target = event.reply_to?.message_id;
    if (target === undefined) return false;
    try {
      const m = await this.o.api.getMessage(target);
      return m.chat_id === event.chat.id && m.is_from_me && !m.is_system_message;
    } catch {
      return false;
    }
  }

  private async processMessage(row: InboxRow): Promise<void> {
    const intake = await this.intake(row);
    if (intake.kind === 'ignore') {
      this.o.inbox.ignore(row.eventId, intake.reason);
      return;
    }
    if (intake.kind === 'approval') {
      // Still the same approval? Another answer taken meanwhile (or the turn ending) removed it.
      if (this.approvals.get(intake.chatId) === intake.pending) {
        this.approvals.delete(intake.chatId);
        this.o.inbox.markDispatched(row.eventId);
        await this.o.agent.approve(intake.pending.runId, intake.choice, intake.pending.requestId);
      }
      this.o.inbox.complete([row.eventId]);
      return;
    }
    if (intake.kind === 'approval-refused') return this.refuseApproval(row, intake.event);
    if (intake.kind === 'command-refused') {
      return this.answer(row, intake.event, COMMAND_TEXT.refused(intake.name), {
        ignoredAs: `/${intake.name} from a Contact allow_admin_from does not name`,
      });
    }
    // /stop and /status answer at once, beside the chat's running turn; /new waits its turn.
    if (intake.kind === 'command' && intake.name !== 'new' && intake.name !== 'reset') {
      return this.runCommand(row, intake.event, intake.name);
    }
    const chatId = intake.event.chat.id;
    if (intake.kind === 'turn' && (await this.foldedIntoRunningTurn(row, chatId, intake.input))) return;
    // One turn at a time per chat, in arrival order; other chats run beside it.
    const previous = this.chatChains.get(chatId) ?? Promise.resolve();
    const turn = previous.then(() =>
      intake.kind === 'command'
        ? this.runCommand(row, intake.event, intake.name)
        : this.runTurn(row, intake.event, intake.input),
    );
    const tail = turn.catch(() => {});
    this.chatChains.set(chatId, tail);
    void tail.then(() => {
      if (this.chatChains.get(chatId) === tail) this.chatChains.delete(chatId);
    });
    await turn;
  }

  /**
   * An answer from a group member who may not give it: the sender is told so (under the row's own
   * Idempotency-Key, so a replay does not tell them twice) and the row is settled with the reason.
   * A failed send retries the row like a turn; the approval itself is left untouched.
   */
  private async refuseApproval(row: InboxRow, event: MessageEvent): Promise<void> {
    const chatId = event.chat.id;
    this.o.log.warn('relay approval answer refused: only the requester or an admin may answer in a group', {
      chat_id: chatId,
      sender_id: senderOf(event).id,
    });
    await this.answer(row, event, APPROVAL_REFUSAL_TEXT, {
      ignoredAs: 'approval answer from a group member who is neither the requester nor an admin',
    });
  }

  /**
   * A message that arrives while the chat's turn runs, as `busy_input_mode` says (Hermes' own gateway
   * rules): `steer` folds it into the running turn (true: the row now rides on that run); `interrupt`
   * stops the run and lets this message's turn follow at once; `queue` (and a steer the run did not
   * take) leaves it to wait its turn.
   */
  private async foldedIntoRunningTurn(row: InboxRow, chatId: string, input: string): Promise<boolean> {
    const running = this.runningTurns.get(chatId) ?? (await this.startingTurns.get(chatId));
    if (running === undefined || running.stopped) return false;
    const mode = this.o.busyInputMode ?? 'queue';
    if (mode === 'steer' && this.o.agent.steer) {
      this.o.inbox.markDispatched(row.eventId);
      let taken = false;
      try {
        taken = await this.o.agent.steer(running.runId, input);
      } catch (err) {
        this.o.log.warn('relay steer failed; the message waits its turn', {
          chat_id: chatId,
          error: (err as Error).message,
        });
      }
      if (!taken) return false;
      if (this.runningTurns.get(chatId) === running) {
        running.steered.push(row.eventId);
        return true;
      }
      // The run ended while the steer was on its way: it took the words, and its end says whether it
      // delivered them (settled) or left them pending (replayed as a turn of their own).
      if (running.ended === undefined) return false;
      if (running.ended.pendingSteer) this.o.inbox.retry(row.eventId, 'steer not delivered');
      else this.o.inbox.complete([row.eventId]);
      return true;
    }
    if (mode === 'interrupt') {
      running.stopped = true;
      running.interrupted = true;
      try {
        await this.o.agent.stop(running.runId);
      } catch (err) {
        this.o.log.warn('relay interrupt: Hermes did not take the stop', {
          chat_id: chatId,
          error: (err as Error).message,
        });
      }
    }
    return false;
  }

  /** A reply to one inbound row, sent under the row's own Idempotency-Key, then the row settled. */
  private async answer(
    row: InboxRow,
    event: MessageEvent,
    text: string,
    settle: { ignoredAs?: string } = {},
  ): Promise<void> {
    const ctx: TurnContext = { eventId: row.eventId, inboundMessageId: event.id, ordinal: 0, paymentOrdinal: 0 };
    const content: MessageContent = { parts: [{ type: 'text', value: text }] };
    const replyTo = this.replyTarget(event);
    if (replyTo !== undefined) content.reply_to = replyTo;
    await this.send(event.chat.id, content, ctx);
    if (settle.ignoredAs !== undefined) this.o.inbox.ignore(row.eventId, settle.ignoredAs);
    else this.o.inbox.complete([row.eventId]);
  }

  private async runCommand(row: InboxRow, event: MessageEvent, name: ConnectorCommand): Promise<void> {
    const chatId = event.chat.id;
    switch (name) {
      case 'stop': {
        const running = this.runningTurns.get(chatId);
        if (running === undefined) return this.answer(row, event, COMMAND_TEXT.nothingRunning);
        running.stopped = true;
        try {
          await this.o.agent.stop(running.runId);
        } catch (err) {
          this.o.log.warn('relay /stop: Hermes did not take the stop', {
            chat_id: chatId,
            error: (err as Error).message,
          });
          return this.answer(row, event, COMMAND_TEXT.stopFailed);
        }
        return this.answer(row, event, COMMAND_TEXT.stopping);
      }
      case 'new':
      case 'reset':
        this.o.inbox.startNewSession(chatId);
        return this.answer(row, event, COMMAND_TEXT.newSession);
      case 'status': {
        const running = this.runningTurns.get(chatId);
        const lines = [
          `Session: ${chatSessionId(chatId, this.o.inbox.sessionGeneration(chatId))}`,
          `Turn: ${running === undefined ? 'idle' : running.stopped ? 'stopping' : 'running'}`,
          ...(this.approvals.has(chatId) ? ['Waiting for your approval (/approve or /deny).'] : []),
        ];
        return this.answer(row, event, lines.join('\n'));
      }
    }
  }

  private async runTurn(row: InboxRow, event: MessageEvent, input: string): Promise<void> {
    const chatId = event.chat.id;
    const ctx: TurnContext = { eventId: row.eventId, inboundMessageId: event.id, ordinal: 0, paymentOrdinal: 0 };
    // Dispatched is recorded BEFORE Hermes sees the event, so a crash after hand-off is visible.
    this.o.inbox.markDispatched(row.eventId);
    this.typing.start(chatId);
    try {
      const images = await this.inboundImages(event);
      const reactions = this.heldReactions(row, chatId);
      let announce: (running: RunningTurn | undefined) => void = () => undefined;
      this.startingTurns.set(chatId, new Promise((resolve) => (announce = resolve)));
      let turn: Awaited<ReturnType<AgentBackend['startTurn']>>;
      try {
        turn = await this.o.agent.startTurn({
          // A crash replay re-attaches to the same run; a run Hermes failed is retried as a new one.
          idempotencyKey:
            row.failedTurns === 0 ? `relay-turn-${row.eventId}` : `relay-turn-${row.eventId}-retry-${row.failedTurns}`,
          sessionId: chatSessionId(chatId, this.o.inbox.sessionGeneration(chatId)),
          input: [input, ...reactions.lines].join('\n'),
          instructions: RELAY_PLATFORM_HINT,
          ...(images.length > 0 ? { images } : {}),
        });
      } catch (err) {
        this.startingTurns.delete(chatId);
        announce(undefined);
        throw err;
      }
      const running: RunningTurn = { runId: turn.runId, stopped: false, interrupted: false, steered: [] };
      this.runningTurns.set(chatId, running);
      this.startingTurns.delete(chatId);
      announce(running);
      const carried = this.carried.get(chatId) ?? [];
      for await (const ev of turn.events) {
        if (ev.kind === 'approval') {
          this.approvals.set(chatId, { runId: turn.runId, requestId: ev.requestId, requesterId: senderOf(event).id });
          const text = [
            'Hermes asks for approval to run:',
            ev.command,
            ev.description,
            'Reply /approve, /approve session, /approve always, or /deny.',
          ]
            .filter((l) => l.trim() !== '')
            .join('\n');
          await this.send(chatId, { parts: [{ type: 'text', value: text.slice(0, 10_000) }] }, ctx);
        } else if (ev.kind === 'completed') {
          this.approvals.delete(chatId);
          this.runningTurns.delete(chatId);
          running.ended = { pendingSteer: Boolean(ev.pendingSteer) };
          await this.deliver(chatId, event, ev.output, ctx);
          // Steered words the run never delivered are replayed: their rows go back to wait a turn.
          const steered = ev.pendingSteer ? [] : running.steered;
          for (const id of ev.pendingSteer ? running.steered : []) this.o.inbox.retry(id, 'steer not delivered');
          this.o.inbox.complete([row.eventId, ...reactions.eventIds, ...steered, ...carried]);
          this.carried.delete(chatId);
          this.settled += 1;
          return;
        } else if (running.stopped) {
          this.approvals.delete(chatId);
          this.runningTurns.delete(chatId);
          if (running.interrupted) {
            // A newer message interrupted it: its words are in the session, and its rows settle with
            // the next turn that ends well.
            this.carried.set(chatId, [...carried, row.eventId, ...reactions.eventIds, ...running.steered]);
          } else {
            // Stopped with /stop: the turn is over as asked, not a failure to retry.
            this.o.inbox.complete([row.eventId, ...reactions.eventIds, ...running.steered]);
          }
          this.settled += 1;
          return;
        } else if (ev.kind === 'failed') {
          throw new AgentRunFailedError(`Hermes run failed: ${ev.error}`);
        } else {
          throw new AgentRunFailedError('Hermes run was cancelled');
        }
      }
      throw new AgentTurnError('Hermes run ended without an outcome');
    } finally {
      this.runningTurns.delete(chatId);
      this.typing.stop(chatId);
    }
  }

  private async send(chatId: string, message: MessageContent, ctx: TurnContext): Promise<void> {
    const key = `reply-${ctx.eventId}-${ctx.ordinal}`;
    ctx.ordinal += 1;
    try {
      await this.o.api.sendMessage(chatId, message, key);
    } catch (err) {
      // A refused Message (4xx other than auth) will be refused again: log it and go on so the
      // rest of the answer still arrives. Auth, rate limits and outages retry the turn.
      if (err instanceof RelayApiError && (err.kind === 'rejected' || err.kind === 'conflict')) {
        this.o.log.error('relay refused a reply message', { chat_id: chatId, key, error: err.message });
        return;
      }
      throw err;
    }
  }

  /** reply_to for the first Message of an answer (PROTOCOL.md §7). */
  private replyTarget(event: MessageEvent): MessageContent['reply_to'] | undefined {
    const sender = senderOf(event);
    const first = event.parts[0]?.type;
    const opensWithComponent = first === 'buttons' || first === 'selection';
    if (sender.kind === 'agent' && !opensWithComponent) return { message_id: event.id };
    const mode = this.o.replyToMode;
    if (mode === 'off') return undefined;
    if (mode === 'first' || mode === 'all') return { message_id: event.id };
    const isGroup = event.chat.is_group === true || this.o.index.groups.has(event.chat.id);
    if (isGroup) return { message_id: event.id };
    // Direct chat, auto: this message started the turn, so the answer reads as a plain reply.
    return undefined;
  }

  private async deliver(chatId: string, event: MessageEvent, output: string, ctx: TurnContext): Promise<void> {
    const mediaPaths: string[] = [];
    let text = output;
    if (this.o.mediaRoot) {
      text = output.replace(MEDIA_LINE, (_m, p: string) => {
        mediaPaths.push(p.trim());
        return '';
      });
    }
    const plan = planReply(text);
    for (const reason of plan.refusals)
      this.o.log.warn('relay component stayed in the words', { chat_id: chatId, reason });
    // A reaction is the quickest answer, so it goes first; an answer may be nothing but one.
    if (plan.reaction !== null) await this.react(chatId, event.id, plan.reaction);
    const replyTo = this.replyTarget(event);
    let first = true;
    for (const m of plan.messages) {
      const content: MessageContent = { parts: m.parts };
      // Only the first batch names the message it answers.
      if (first && replyTo !== undefined) content.reply_to = replyTo;
      first = false;
      await this.send(chatId, content, ctx);
    }
    for (const p of mediaPaths) await this.sendMedia(chatId, p, ctx);
    if (plan.invoice !== null) {
      // The locked contract (b1e534c0) has no invoice part; the invoice goes out as its Stripe
      // checkout link, alone and last, so the card's words and link are never lost.
      await this.send(chatId, { parts: [{ type: 'link', value: plan.invoice.url }] }, ctx);
    }
    if (plan.payment !== null) {
      const key = `payment-request-${ctx.inboundMessageId}-${ctx.paymentOrdinal}`;
      ctx.paymentOrdinal += 1;
      let checkoutUrl: string;
      try {
        checkoutUrl = await this.o.api.createPaymentRequest(plan.payment, key);
      } catch (err) {
        if (err instanceof RelayApiError && err.kind !== 'retryable') {
          this.o.log.warn('relay refused the payment request; the words stand', {
            chat_id: chatId,
            error: err.message,
          });
          return;
        }
        throw err;
      }
      await this.send(chatId, { parts: [{ type: 'payment', checkout_url: checkoutUrl }] }, ctx);
    }
  }

  /**
   * The agent's reaction to the message it answers, through POST /v1/messages/{id}/reactions. A
   * replayed turn sends it again, which leaves the same one reaction (Relay keeps one per reactor
   * and part). A refusal is logged and the words still go out.
   */
  private async react(chatId: string, messageId: string, spec: ReactionSpec): Promise<void> {
    const body: SentReaction = { operation: 'add', ...spec };
    try {
      await this.o.api.react(messageId, body);
    } catch (err) {
      if (err instanceof RelayApiError && (err.kind === 'rejected' || err.kind === 'conflict')) {
        this.o.log.warn('relay refused a reaction', { chat_id: chatId, error: err.message });
        return;
      }
      throw err;
    }
  }

  /**
   * Images the person sent, downloaded through GET /v1/attachments/{id} for the turn to see. An
   * image Relay will never serve (gone, too large, failed upload) leaves its attachment note in the
   * words and is logged; an outage fails the turn, which is retried.
   */
  private async inboundImages(event: MessageEvent): Promise<TurnImage[]> {
    const images: TurnImage[] = [];
    for (const part of event.parts) {
      const media = inboundMedia.safeParse(part);
      if (!media.success || !media.data.mime_type.toLowerCase().startsWith('image/')) continue;
      try {
        const file = await this.o.api.downloadAttachment(media.data.id, MAX_INBOUND_IMAGE_BYTES);
        images.push({ contentType: file.contentType, filename: file.filename, bytes: file.bytes });
      } catch (err) {
        if (err instanceof RelayApiError && (err.kind === 'rejected' || err.kind === 'conflict')) {
          this.o.log.warn('relay image not handed to the turn', { chat_id: event.chat.id, error: err.message });
          continue;
        }
        throw err;
      }
    }
    return images;
  }

  private async sendMedia(chatId: string, file: string, ctx: TurnContext): Promise<void> {
    const root = path.resolve(this.o.mediaRoot ?? '/');
    const resolved = path.resolve(file);
    if (!resolved.startsWith(`${root}${path.sep}`)) {
      this.o.log.warn('relay media path outside the media root is not sent', { chat_id: chatId });
      return;
    }
    const bytes = await fs.readFile(resolved);
    const contentType = CONTENT_TYPES[path.extname(resolved).toLowerCase()] ?? 'application/octet-stream';
    const attachmentId = await this.o.api.uploadAttachment({ filename: path.basename(resolved), contentType, bytes });
    await this.send(chatId, { parts: [{ type: 'media', attachment_id: attachmentId }] }, ctx);
  }
}
