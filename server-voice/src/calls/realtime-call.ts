import type { ServerEvent, SessionTool, ToolChoice } from '@conduit/contracts/voice/events';
import type { RTCDataChannel } from 'werift';
import type { AgentBackend } from '../agent/agent-backend.js';
import { spokenCommand, typedCommand, type SlashCommand } from '../agent/slash-command.js';
import { EarlyTranscription } from '../audio/prefetch.js';
import type { EndpointEvent, EndpointSettings, VoiceDetectorFactory } from '../audio/types.js';
import { SAMPLE_RATE_HZ } from '../audio/types.js';
import type { Logger } from '../log.js';
import { CallPeer } from '../media/call-peer.js';
import type { FrameClock } from '../media/frame-clock.js';
import { OpusDecoder, OpusEncoder, outboundRateFor } from '../media/opus-codec.js';
import type { MediaSender, RemoteOutput } from '../media/media-sender.js';
import { PacedOutput } from '../media/paced-output.js';
import { TurnRunner, type TurnStage } from '../pipeline/turn-runner.js';
import { VoiceInput } from '../pipeline/voice-input.js';
import { RealtimeProtocol, type Recipient } from '../protocol/realtime-protocol.js';
import type { SpeechToText, TextToSpeech } from '../providers/types.js';
import type { IceServer } from '../signalling/ice-servers.js';

/** What every call of a gateway shares: providers, the pacing clock, the logger, injected time and randomness. */
export interface CallServices {
  agent: AgentBackend;
  stt: SpeechToText;
  tts: TextToSpeech;
  detectorFactory: VoiceDetectorFactory;
  endpointSettings: EndpointSettings;
  trimLeadingSilence: boolean;
  bargeIn: boolean;
  /** Captions as deltas while the reply is written, or final-only (VoiceConfig.streamCaptions). */
  streamCaptions: boolean;
  /** VoiceConfig.replyCompletionTimeoutMs: a reply not finished by then ends with an error event. */
  replyCompletionTimeoutMs: number;
  iceServers: IceServer[];
  /** Silero's speech probability threshold (reported in the session's turn detection). */
  vadThreshold: number;
  clock: FrameClock;
  /** The media sender process that paces outbound audio, or null to pace it on this event loop. */
  mediaSender: MediaSender | null;
  logger: Logger;
  randomHex: (bytes: number) => string;
  delay: (ms: number) => Promise<void>;
  /** How long a client function call may wait for its output (the protocol's 30 s when absent). */
  toolTimeoutMs?: number;
}

export interface CallSession {
  instructions: string;
  tools: SessionTool[];
  toolChoice: ToolChoice;
}

const TURN_STAGES: readonly TurnStage[] = ['agent_first_text', 'first_clause', 'tts_first_chunk', 'first_frame_queued'];

/** Events published before the channel opens wait here (bounded: a client that never opens it cannot grow it). */
const MAX_EARLY_EVENTS = 256;

/**
 * One direct WebRTC call: its peer, its events channel and protocol, its paced Opus output, its capture
 * path and its turn runner. Everything it owns is released by `close()`, which is idempotent and is
 * reached from hang-up, a failed connection, the lifetime cap and gateway shutdown.
 */
export class RealtimeCall {
  readonly peer: CallPeer;
  readonly protocol: RealtimeProtocol;
  readonly output: PacedOutput | RemoteOutput;
  private readonly runner: TurnRunner;
  private readonly input: VoiceInput;
  private readonly encoder: OpusEncoder;
  private readonly decoder = new OpusDecoder();
  private channel: RTCDataChannel | null = null;
  private readonly earlyEvents: string[] = [];
  private lastInputItem: string | null = null;
  private transcriptions: Promise<void> = Promise.resolve();
  private readonly sttController = new AbortController();
  private readonly early: EarlyTranscription;
  private closing: Promise<void> | null = null;
  private lastSequence: number | null = null;
  private connected = false;
  /** Clock time (ms) of the last endpoint decision, for the endpoint → first reply RTP figure. */
  private lastEndpointAtMs: number | null = null;
  /** Clock times (ms) at which the current turn reached each stage, for the latency breakdown in the log. */
  private stages = new Map<string, number>();
  /** The response whose first speech frame has not been sent yet. */
  private awaitingFirstFrame: string | null = null;
  /** Inbound packets that failed to decode (a corrupt payload is dropped, never fatal). */
  badPackets = 0;
  private markClosed: () => void = () => undefined;
  /** Resolves once the call is closed and released. */
  readonly closed = new Promise<void>((resolve) => (this.markClosed = resolve));

  constructor(
    readonly id: string,
    readonly identity: string,
    session: CallSession,
    private readonly services: CallServices,
    private readonly onClosed: (call: RealtimeCall, reason: string) => void,
  ) {
    const { clock, logger } = services;
    this.protocol = new RealtimeProtocol({
      sessionId: id,
      publish: (event, recipient) => this.publish(event, recipient),
      callbacks: {
        onTextInput: (text, _identity, responseId) => {
          this.lastEndpointAtMs = null;
          // Typed text starting with `/name` is a Hermes command, not words for the agent.
          const command = typedCommand(text);
          if (command) this.startCommandTurn(responseId, command, 'typed');
          else this.startTurn(responseId, text);
        },
        onResponseRequested: (_identity, responseId) =>
          this.startTurn(responseId, 'Follow the session instructions and respond now.'),
        onResponseCancelled: () => this.runner.cancel(),
        onInputAudioState: (muted) => (muted ? this.input.mute() : this.input.unmute()),
        onInputAudioCommit: (identity, eventId) =>
          this.input.commit(() => this.protocol.inputAudioCommitEmpty(identity, eventId)),
        onInputAudioClear: () => this.input.clear(),
        // The reply completed but its speech is still playing: it stops now (the output queue is dropped).
        onOutputAudioClear: () => this.runner.cancel(),
        onClosed: (reason) => void this.close(reason),
      },
      turnDetection: {
        type: 'server_vad',
        threshold: services.vadThreshold,
        prefix_padding_ms: 500,
        silence_duration_ms: Math.round(services.endpointSettings.silenceDurationUs / 1000),
        create_response: true,
        interrupt_response: services.bargeIn,
      },
      instructions: session.instructions,
      tools: session.tools,
      toolChoice: session.toolChoice,
      nowMs: clock.now,
      randomHex: services.randomHex,
      ...(services.toolTimeoutMs === undefined ? {} : { toolTimeoutMs: services.toolTimeoutMs }),
    });
    // Replies are framed and encoded at the speech provider's rate when libopus takes it (no resampling).
    this.encoder = new OpusEncoder({ sampleRateHz: outboundRateFor(services.tts.sampleRateHz) });
    this.output = services.mediaSender
      ? services.mediaSender.output(id, this.encoder, {
          onSpeechSent: (sentAgoMs) => {
            if (this.awaitingFirstFrame) this.firstReplyFrameSent(this.awaitingFirstFrame, sentAgoMs);
          },
          onLost: (reason) => void this.close(reason),
        })
      : new PacedOutput(
          clock,
          (frame, info) => {
            this.peer.sendOpus(this.encoder.encode(frame));
            if (!info.silent && this.awaitingFirstFrame) this.firstReplyFrameSent(this.awaitingFirstFrame, 0);
          },
          this.encoder.frameSamples,
        );
    this.runner = new TurnRunner({
      protocol: this.protocol,
      agent: services.agent,
      tts: services.tts,
      output: this.output,
      sessionKey: id,
      trimLeadingSilence: services.trimLeadingSilence,
      streamCaptions: services.streamCaptions,
      replyCompletionTimeoutMs: services.replyCompletionTimeoutMs,
      onSpeaking: (speaking) => this.input.setPaused(speaking && !services.bargeIn),
      delay: services.delay,
      log: (event, fields) => logger.info(event, { call_id: id, ...fields }),
      mark: (stage) => this.mark(stage),
    });
    this.early = new EarlyTranscription(services.stt, SAMPLE_RATE_HZ);
    this.input = new VoiceInput(
      services.detectorFactory,
      services.endpointSettings,
      () => Math.round(clock.now() * 1000),
      (events) => this.onEndpoint(events),
      services.stt.uploadSampleRateHz ?? null,
    );
    this.peer = new CallPeer(
      { iceServers: services.iceServers, loopbackCandidate: true },
      {
        onEventsChannel: (channel) => this.openChannel(channel),
        onAudioPayload: (payload, sequence) => this.onAudio(payload, sequence),
        onConnectionState: (state) => {
          if (state === 'connected' && !this.connected) {
            this.connected = true;
            this.handOverOutput();
          }
          if (state === 'failed' || state === 'closed' || state === 'disconnected')
            void this.close(`connection ${state}`);
        },
      },
    );
  }

  /**
   * Applies the offer; the answer carries every host candidate (non-trickle). A peer that has not connected
   * within `connectDeadlineMs` after the answer is closed, so an abandoned setup cannot hold a call slot.
   */
  async answer(offerSdp: string, connectDeadlineMs: number): Promise<string> {
    const answer = await this.peer.answer(offerSdp);
    if (this.output instanceof PacedOutput) this.output.start();
    const timer = setTimeout(() => {
      if (!this.connected) void this.close('connection not established');
    }, connectDeadlineMs);
    timer.unref();
    void this.closed.then(() => clearTimeout(timer));
    return answer;
  }

  /** Connected: the media sender process takes over the outbound stream (or it is paced here, see attachLocal). */
  private handOverOutput(): void {
    const output = this.output;
    if (output instanceof PacedOutput) return;
    const route = this.peer.outboundRoute();
    if (!route) {
      this.services.logger.info('media_sender_local', { call_id: this.id, reason: 'route cannot be handed over' });
      output.attachLocal(this.services.clock, (packet) => this.peer.sendOpus(packet));
      return;
    }
    output.attach(route).catch((error: unknown) => {
      this.services.logger.warn('media_sender_attach_failed', {
        call_id: this.id,
        message: error instanceof Error ? error.message : String(error),
      });
      void this.close('media sender failed');
    });
  }

  private publish(event: ServerEvent, _recipient: Recipient): void {
    // One client per direct call: targeted and broadcast events both go to it.
    const text = JSON.stringify(event);
    if (event.type === 'error') this.services.logger.info('client_error', { call_id: this.id, code: event.error.code });
    const channel = this.channel;
    if (channel && channel.readyState === 'open') {
      try {
        channel.send(text);
      } catch {
        void this.close('events channel failed');
      }
    } else if (this.earlyEvents.length < MAX_EARLY_EVENTS) {
      this.earlyEvents.push(text);
    }
  }

  private openChannel(channel: RTCDataChannel): void {
    if (this.channel) return;
    this.channel = channel;
    channel.onMessage.subscribe((message) => this.protocol.handleClientMessage(message, this.identity));
    channel.stateChanged.subscribe((state) => {
      if (state === 'closed') void this.close('events channel closed');
    });
    for (const text of this.earlyEvents.splice(0)) channel.send(text);
    this.protocol.announce(this.identity);
  }

  private onAudio(payload: Buffer, sequence: number): void {
    // Late duplicates and reordered stragglers are dropped: the endpointer needs audio in capture order.
    if (this.lastSequence !== null) {
      const ahead = (sequence - this.lastSequence) & 0xffff;
      if (ahead === 0 || ahead > 0x8000) return;
    }
    this.lastSequence = sequence;
    let pcm: Int16Array;
    try {
      pcm = this.decoder.decode(payload);
    } catch {
      this.badPackets += 1;
      return;
    }
    this.input.push(pcm);
  }

  private onEndpoint(events: EndpointEvent[]): void {
    for (const event of events) {
      switch (event.type) {
        case 'calibrated':
          this.services.logger.info('vad_calibrated', { call_id: this.id, noise_rms: Math.round(event.noiseRms) });
          break;
        case 'speech_started': {
          const active = this.protocol.activeResponseId;
          if (active && this.services.bargeIn) {
            // Barge-in: the user talks over the reply, so it stops now.
            this.runner.cancel();
            this.protocol.cancelResponse(active);
          }
          this.protocol.speechStarted(event.audioStartUs / 1000);
          break;
        }
        case 'speech_stopped':
          this.lastEndpointAtMs = this.services.clock.now();
          this.stages.clear();
          this.lastInputItem = this.protocol.speechStopped(event.atUs / 1000);
          // Timings and levels only (never audio): what a room's silence target is tuned from (AUDIO.md §4).
          this.services.logger.info('endpoint', {
            call_id: this.id,
            at_ms: Math.round(event.atUs / 1000),
            backend: this.services.detectorFactory.backend,
            observed_silence_ms: Math.round(event.observedSilenceUs / 1000),
            silence_duration_ms: Math.round(this.services.endpointSettings.silenceDurationUs / 1000),
            noise_rms: event.noiseRms === null ? null : Math.round(event.noiseRms * 10) / 10,
          });
          break;
        case 'utterance': {
          const itemId = this.lastInputItem;
          if (itemId) {
            this.protocol.inputCommitted(itemId);
            this.transcribe(itemId, event);
          }
          break;
        }
        case 'prefetch':
          // Speculative transcription during a pause; reused at the endpoint only if nothing audible followed.
          this.early.start(event.pcm, event.markerUs);
          break;
        case 'prefetch_discarded':
          this.early.discard();
          break;
        case 'input_audio_too_long':
          this.protocol.inputAudioOverflow(this.identity);
          break;
        default:
          break;
      }
    }
  }

  /** Transcriptions run one after another so turns start in speaking order. */
  private transcribe(itemId: string, utterance: Extract<EndpointEvent, { type: 'utterance' }>): void {
    this.transcriptions = this.transcriptions.then(async () => {
      let transcript = '';
      let reusedPrefetch = false;
      const started = this.services.clock.now();
      try {
        const result = await this.early.transcribeFinal(
          utterance.pcm,
          utterance.lastSpeechAtUs,
          utterance.quietThresholdRms,
          this.sttController.signal,
          utterance.converted,
        );
        transcript = result.text;
        reusedPrefetch = result.reusedPrefetch;
      } catch (error) {
        if (this.closing) return;
        this.services.logger.warn('transcription_failed', {
          call_id: this.id,
          error: error instanceof Error ? error.name : 'unknown',
        });
      }
      if (this.closing) return;
      this.mark('transcribed');
      this.services.logger.info('transcribed', {
        call_id: this.id,
        item_id: itemId,
        ms: Math.round(this.services.clock.now() - started),
        chars: transcript.length,
        reused_prefetch: reusedPrefetch,
      });
      this.services.logger.debugText('transcript', { call_id: this.id, item_id: itemId, transcript });
      this.protocol.userTranscript(itemId, transcript);
      if (!transcript) return;
      const active = this.protocol.activeResponseId;
      if (active) {
        // A new spoken turn supersedes a reply still in progress.
        this.runner.cancel();
        this.protocol.cancelResponse(active);
      }
      const responseId = this.protocol.openResponse(this.identity);
      // "Slash reasoning low" said as a command (slash-command.ts) is one; anything else is words.
      const command = spokenCommand(transcript);
      if (command) this.startCommandTurn(responseId, command, 'spoken');
      else this.startTurn(responseId, transcript);
    });
  }

  private mark(stage: string): void {
    if (!this.stages.has(stage)) this.stages.set(stage, this.services.clock.now());
  }

  /** The reply's first frame went out `sentAgoMs` ago (the media sender process reports after sending). */
  private firstReplyFrameSent(responseId: string, sentAgoMs: number): void {
    this.awaitingFirstFrame = null;
    const fields: Record<string, unknown> = { call_id: this.id, response_id: responseId };
    const endpointAt = this.lastEndpointAtMs;
    const tenths = (ms: number) => Math.round(ms * 10) / 10;
    if (endpointAt !== null) {
      fields.endpoint_to_first_rtp_ms = tenths(this.services.clock.now() - sentAgoMs - endpointAt);
      // Where the time went: each stage's time after the endpoint decision.
      fields.stages_ms = Object.fromEntries([...this.stages].map(([stage, at]) => [stage, tenths(at - endpointAt)]));
    }
    this.lastEndpointAtMs = null;
    this.stages.clear();
    this.services.logger.info('reply_audio_sent', fields);
  }

  private startTurn(responseId: string, text: string): void {
    this.awaitingFirstFrame = responseId;
    // Stages a superseded turn reached do not belong to this one.
    for (const stage of TURN_STAGES) this.stages.delete(stage);
    this.services.logger.debugText('turn_text', { call_id: this.id, response_id: responseId, text });
    this.runner.start(responseId, text);
  }

  private startCommandTurn(responseId: string, command: SlashCommand, source: 'typed' | 'spoken'): void {
    this.awaitingFirstFrame = responseId;
    for (const stage of TURN_STAGES) this.stages.delete(stage);
    // The command's name only: its arguments are the caller's words (debug logging shows them with the rest).
    this.services.logger.info('command', { call_id: this.id, response_id: responseId, command: command.name, source });
    this.services.logger.debugText('command_text', { call_id: this.id, response_id: responseId, text: command.text });
    this.runner.startCommand(responseId, command);
  }

  /** True once `close()` ran (the call may still be releasing). */
  get isClosing(): boolean {
    return this.closing !== null;
  }

  /** Releases everything the call owns. Safe to call any number of times. */
  close(reason: string): Promise<void> {
    this.closing ??= (async () => {
      this.services.logger.info('call_closed', { call_id: this.id, reason });
      this.runner.cancel();
      this.protocol.close();
      this.sttController.abort();
      this.input.close();
      this.output.stop();
      this.services.agent.endSession(this.id);
      try {
        await this.peer.close();
      } catch {
        // Already closed by the remote side.
      }
      this.encoder.close();
      this.decoder.close();
      this.onClosed(this, reason);
      this.markClosed();
    })();
    return this.closing;
  }
}
