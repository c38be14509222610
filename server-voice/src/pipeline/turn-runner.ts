import type { SessionTool, ToolChoice } from '@conduit/contracts/voice/events';
import {
  AgentError,
  CommandError,
  type AgentBackend,
  type AgentEvent,
  type TurnImage,
} from '../agent/agent-backend.js';
import type { SlashCommand } from '../agent/slash-command.js';
import type { OutboundAudio } from '../media/paced-output.js';
import { realTimer, type RealtimeProtocol, type SetTimer } from '../protocol/realtime-protocol.js';
import type { TextToSpeech } from '../providers/types.js';
import { ReplySpeaker } from './reply-speaker.js';
import { ClauseSplitter, prepareSpeechText } from './speech-text.js';

/** After playout drains, capture stays paused this long so the tail of our own speech is not heard as the user. */
export const ECHO_GUARD_MS = 750;

export interface TurnRunnerOptions {
  protocol: RealtimeProtocol;
  agent: AgentBackend;
  tts: TextToSpeech;
  output: OutboundAudio;
  /** The agent conversation of this call. */
  sessionKey: string;
  trimLeadingSilence: boolean;
  /** The gateway starts/stops speaking (capture pauses while it speaks unless barge-in is on). */
  onSpeaking: (speaking: boolean) => void;
  /** Waits `ms` (injected so tests do not sleep). */
  delay: (ms: number) => Promise<void>;
  /** Capture stays paused this long after playout drained (direct 750 ms; LiveKit 300 ms after its playout wait). */
  echoGuardMs?: number;
  log: (event: string, fields: Record<string, unknown>) => void;
  /**
   * Latency tracing: called with `agent_first_text`, `first_clause`, `tts_first_chunk` and `first_frame_queued`
   * as a turn's reply reaches each stage (the first time per response).
   */
  mark?: (stage: TurnStage) => void;
  /**
   * Captions as deltas while the reply is written (default), or only the final `.done` transcript
   * (VoiceConfig.streamCaptions, the profile's `display.platforms.realtime.streaming`).
   */
  streamCaptions?: boolean;
  /**
   * A response not finished (agent done and its speech synthesized) this long after it started is stopped and
   * ends with a `response_timeout` error (VoiceConfig.replyCompletionTimeoutMs; default 120 s).
   */
  replyCompletionTimeoutMs?: number;
  /** Timers (injected so tests fire the completion timeout by hand). */
  setTimer?: SetTimer;
  /**
   * Tools the transport offers besides the session's client tools (Conference remote tools, called by native
   * RPC inside the same response). They follow the session's `tool_choice` like the client tools.
   */
  transportTools?: TransportTools;
}

/** Tools a transport runs itself (no function-call items go to the client). */
export interface TransportTools {
  list(): SessionTool[];
  has(name: string): boolean;
  call(name: string, args: string, signal: AbortSignal): Promise<string>;
}

/** The reply completion timeout when none is given: Hermes' `tts.streaming.completion_timeout` default. */
const DEFAULT_REPLY_COMPLETION_TIMEOUT_MS = 120_000;

/** What a turn answers: the user's words, or a native Hermes command. */
type TurnInput = { text: string; images?: readonly TurnImage[] } | { command: SlashCommand };

export type TurnStage = 'agent_first_text' | 'first_clause' | 'tts_first_chunk' | 'first_frame_queued';

interface ActiveTurn {
  controller: AbortController;
  speaker: ReplySpeaker;
  /** The current response's completion timeout (armCompletionTimeout). */
  deadline: { cancel: () => void };
}

const NO_DEADLINE = { cancel: () => undefined };

/** The client tools a turn may use under the session's `tool_choice`. */
export function toolsForChoice(tools: readonly SessionTool[], choice: ToolChoice): SessionTool[] {
  if (choice === 'none') return [];
  if (typeof choice === 'object') return tools.filter((tool) => tool.name === choice.name);
  return [...tools];
}

/**
 * Runs one turn at a time for a call: streams the agent's reply into captions and clause-by-clause speech,
 * routes client function calls through the protocol, applies the speech fallback rules, and completes the
 * response. `cancel()` (response.cancel, barge-in, a newer turn, hang-up) stops the agent and the speech at
 * once and drops queued audio.
 */
export class TurnRunner {
  private active: ActiveTurn | null = null;

  constructor(private readonly options: TurnRunnerOptions) {}

  get busy(): boolean {
    return this.active !== null;
  }

  /** Starts a turn for an already opened response. Never throws; failures become `response.done` failed. */
  start(responseId: string, text: string, images?: readonly TurnImage[]): void {
    this.begin(responseId, images && images.length > 0 ? { text, images } : { text });
  }

  /**
   * Starts a turn that runs a native Hermes command; Hermes' answer is the reply, captioned and spoken like any
   * other. An agent that has no commands (not Hermes) refuses it with a `command_unavailable` error: the
   * command is never sent as chat text.
   */
  startCommand(responseId: string, command: SlashCommand): void {
    const { agent, protocol, log } = this.options;
    if (!agent.runCommand) {
      this.cancel();
      log('command_refused', { responseId, command: command.name, agent: agent.label });
      protocol.failResponseWithError(
        responseId,
        'command_unavailable',
        `/${command.name} is a Hermes command, and this gateway's agent (${agent.label}) is not Hermes, so it was not sent.`,
      );
      return;
    }
    this.begin(responseId, { command });
  }

  private begin(responseId: string, input: TurnInput): void {
    this.cancel();
    const controller = new AbortController();
    const turn: ActiveTurn = { controller, speaker: this.newSpeaker(responseId), deadline: NO_DEADLINE };
    this.active = turn;
    void this.run(turn, responseId, input).finally(() => {
      if (this.active === turn) this.active = null;
    });
  }

  /** Stops the current turn's agent and speech now and drops queued audio. The protocol reports the cancellation. */
  cancel(): void {
    const turn = this.active;
    if (!turn) return;
    this.active = null;
    turn.deadline.cancel();
    turn.controller.abort();
    turn.speaker.abort();
    this.options.output.clear();
    this.options.onSpeaking(false);
  }

  private newSpeaker(responseId: string): ReplySpeaker {
    return new ReplySpeaker({
      tts: this.options.tts,
      output: this.options.output,
      trimLeadingSilence: this.options.trimLeadingSilence,
      onFirstChunk: () => this.options.mark?.('tts_first_chunk'),
      onFirstAudio: () => {
        this.options.mark?.('first_frame_queued');
        this.options.onSpeaking(true);
        this.options.protocol.audioStarted(responseId);
      },
    });
  }

  /** Hermes' answer to a command, as a reply stream of one piece. */
  private async *commandReply(command: SlashCommand, signal: AbortSignal): AsyncGenerator<AgentEvent, string, void> {
    const { agent } = this.options;
    const answer = (await agent.runCommand?.({ sessionKey: this.options.sessionKey, command, signal })) ?? '';
    if (answer) yield { type: 'delta', text: answer };
    return answer;
  }

  /**
   * Arms the reply completion timeout for `responseId`: when it fires with the turn still running, the turn
   * stops (agent, speech, queued audio) and the response ends with a `response_timeout` error, so a stalled
   * run never leaves the caller in silence.
   */
  private armCompletionTimeout(turn: ActiveTurn, responseId: string): void {
    const ms = this.options.replyCompletionTimeoutMs ?? DEFAULT_REPLY_COMPLETION_TIMEOUT_MS;
    const setTimer = this.options.setTimer ?? realTimer;
    turn.deadline.cancel();
    turn.deadline = setTimer(() => {
      if (this.active !== turn || turn.controller.signal.aborted) return;
      this.options.log('reply_timeout', { responseId, timeout_ms: ms });
      this.cancel();
      this.options.protocol.failResponseWithError(
        responseId,
        'response_timeout',
        `The reply did not finish within ${Math.round(ms / 100) / 10} s (tts.streaming.completion_timeout), so it was stopped.`,
      );
    }, ms);
  }

  private async run(turn: ActiveTurn, firstResponseId: string, input: TurnInput): Promise<void> {
    const { protocol, agent, log } = this.options;
    const streamCaptions = this.options.streamCaptions ?? true;
    const signal = turn.controller.signal;
    let responseId = firstResponseId;
    this.armCompletionTimeout(turn, responseId);
    /** Everything the agent wrote this turn; the current response shows what came after the last tool call. */
    let agentText = '';
    let boundary = 0;
    let caption = '';
    /** What has been handed to speech, so a snapshot that extends it speaks only the new part. */
    let spokenSource = '';
    const splitter = new ClauseSplitter();
    const mark = this.options.mark;
    let clauseMarked = false;
    const speak = (clause: string) => {
      const spoken = prepareSpeechText(clause);
      if (!spoken) return;
      if (!clauseMarked) {
        clauseMarked = true;
        mark?.('first_clause');
      }
      turn.speaker.say(spoken);
    };
    const say = (delta: string) => {
      spokenSource += delta;
      for (const clause of splitter.push(delta)) speak(clause);
    };
    const transportTools = this.options.transportTools;
    const callTool = async (name: string, args: string): Promise<string> => {
      if (transportTools?.has(name)) {
        const offered = toolsForChoice(transportTools.list(), protocol.currentToolChoice).some((t) => t.name === name);
        if (!offered) return JSON.stringify({ error: `tool ${name} is not available in this session` });
        return transportTools.call(name, args, signal);
      }
      const allowed = toolsForChoice(protocol.sessionTools, protocol.currentToolChoice).some((t) => t.name === name);
      if (!allowed) return JSON.stringify({ error: `tool ${name} is not available in this session` });
      // The spoken part before the call finishes first; the call then completes this response.
      for (const clause of splitter.flush()) speak(clause);
      await this.settleSpeech(turn, responseId);
      // Final-only captions: what was said before the call is that message's final text.
      if (!streamCaptions && caption) protocol.caption(responseId, caption);
      // The wait for the client has its own bound (the tool timeout); the resumed response gets a full one.
      turn.deadline.cancel();
      const result = await protocol.requestClientTool(responseId, name, args);
      if (signal.aborted) throw new Error('cancelled');
      responseId = result.responseId;
      this.armCompletionTimeout(turn, responseId);
      boundary = agentText.length;
      caption = '';
      spokenSource = '';
      turn.speaker = this.newSpeaker(responseId);
      return result.output;
    };
    try {
      const reply =
        'command' in input
          ? this.commandReply(input.command, signal)
          : agent.respond({
              sessionKey: this.options.sessionKey,
              text: input.text,
              instructions: protocol.currentInstructions,
              tools: toolsForChoice(
                [...protocol.sessionTools, ...(transportTools?.list() ?? [])],
                protocol.currentToolChoice,
              ),
              toolChoice: protocol.currentToolChoice,
              signal,
              callTool,
              ...(input.images ? { images: input.images } : {}),
            });
      let finalText: string;
      for (;;) {
        const step = await reply.next();
        if (signal.aborted) return;
        if (agentText === '' && !step.done) mark?.('agent_first_text');
        if (step.done) {
          // The final text of this response is what follows the last tool boundary.
          finalText = step.value.startsWith(agentText.slice(0, boundary)) ? step.value.slice(boundary) : step.value;
          break;
        }
        if (step.value.type === 'delta') {
          agentText += step.value.text;
          caption += step.value.text;
          say(step.value.text);
        } else {
          agentText = step.value.text;
          caption = agentText.slice(boundary);
          if (caption.startsWith(spokenSource)) say(caption.slice(spokenSource.length));
          else {
            // Revised text: what was spoken stays spoken; the revision is shown, and only new text is read.
            splitter.reset();
            spokenSource = caption;
          }
        }
        if (streamCaptions) protocol.caption(responseId, caption);
      }
      if (finalText.startsWith(spokenSource)) say(finalText.slice(spokenSource.length));
      for (const clause of splitter.flush()) speak(clause);
      let outcome = await turn.speaker.finish();
      if (signal.aborted) return;
      if (outcome.status === 'failed_before_audio') {
        // Nothing was heard yet, so the whole reply may be synthesized again in one piece.
        log('tts_fallback_whole_reply', { responseId });
        turn.speaker = this.newSpeaker(responseId);
        const whole = prepareSpeechText(finalText);
        if (whole) turn.speaker.say(whole);
        outcome = await turn.speaker.finish();
        if (signal.aborted) return;
      }
      if (outcome.status === 'failed_before_audio') {
        log('tts_failed', { responseId });
        protocol.failResponse(responseId);
        return;
      }
      if (outcome.status === 'failed_after_audio') log('tts_failed_after_audio', { responseId });
      turn.deadline.cancel();
      protocol.completeResponse(responseId, finalText);
      await this.finishPlayout(turn, responseId);
    } catch (error) {
      if (signal.aborted) return;
      log('turn_failed', { responseId, error: error instanceof Error ? error.name : 'unknown' });
      turn.speaker.abort();
      // A command Hermes did not run, or an agent setting the user can fix, says why; other failures end the
      // response as the contract has it.
      if (error instanceof CommandError) protocol.failResponseWithError(responseId, error.code, error.message);
      else if (error instanceof AgentError && error.callerError)
        protocol.failResponseWithError(responseId, error.callerError.code, error.callerError.message);
      else protocol.failResponse(responseId);
      await this.finishPlayout(turn, responseId);
    } finally {
      turn.deadline.cancel();
    }
  }

  /** Before a tool call: let already queued speech play out, then report the buffer stopped. */
  private async settleSpeech(turn: ActiveTurn, responseId: string): Promise<void> {
    await turn.speaker.finish();
    await this.finishPlayout(turn, responseId);
  }

  private async finishPlayout(turn: ActiveTurn, responseId: string): Promise<void> {
    if (!turn.speaker.audible || turn.controller.signal.aborted) return;
    await this.options.output.drained();
    if (turn.controller.signal.aborted) return;
    this.options.protocol.audioStopped(responseId);
    await this.options.delay(this.options.echoGuardMs ?? ECHO_GUARD_MS);
    if (!turn.controller.signal.aborted) this.options.onSpeaking(false);
  }
}
