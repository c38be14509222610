import {
  AudioStream,
  LocalAudioTrack,
  RoomEvent,
  TrackKind,
  TrackPublishOptions,
  TrackSource,
  type RemoteParticipant,
  type RemoteTrack,
  type RemoteTrackPublication,
  type Room,
} from '@livekit/rtc-node';
import type { ServerEvent, SessionTool } from '@conduit/contracts/voice/events';
import { spokenCommand } from '../agent/slash-command.js';
import type { EndpointEvent } from '../audio/types.js';
import { CONFERENCE_POLL_INTERVAL_US } from '../audio/conference-endpointer.js';
import type { CallServices } from '../calls/realtime-call.js';
import { TurnRunner } from '../pipeline/turn-runner.js';
import { RealtimeProtocol, type Recipient } from '../protocol/realtime-protocol.js';
import { FrameGrabber, type CapturedFrame } from './frame-capture.js';
import { ParticipantInput } from './participant-input.js';
import { RemoteTools, TOOLS_TOPIC } from './remote-tools.js';
import type { ToolsetGate } from './toolset-gate.js';
import type { RemoteToolPolicy } from './tool-rules.js';
import { ROOM_AUDIO_RATE_HZ, RoomAudioOutput } from './room-audio-output.js';

/** Topics of the Conference wire contract (CONTRACT.md §4). */
export const EVENTS_TOPIC = 'conference.events';
export const EXTENSIONS_TOPIC = 'conference.extensions';
/** The agent's one published audio track. */
export const AGENT_TRACK_NAME = 'hermes-voice';
/** The text a `response.create` without typed input dispatches (as the direct transport does). */
const RESPOND_NOW = 'Follow the session instructions and respond now.';
/** Largest client JSON read on the extension topics (the events topic has the protocol's own 256 KiB bound). */
const MAX_EXTENSION_BYTES = 64 * 1024;
/** Typed text of one `conference.message` (as `input_text` on the events topic). */
const MAX_TYPED_TEXT_BYTES = 64 * 1024;
/** Capture stays paused this long after the room's playout finished (AUDIO.md §7: LiveKit 0.3 s). */
const ROOM_ECHO_GUARD_MS = 300;
/** Captured frames kept for the next user message (the oldest goes first). */
const MAX_PENDING_FRAMES = 4;

/** What a room session needs from the gateway: the same providers and settings a direct call uses. */
export type ConferenceServices = Pick<
  CallServices,
  | 'agent'
  | 'stt'
  | 'tts'
  | 'detectorFactory'
  | 'endpointSettings'
  | 'trimLeadingSilence'
  | 'bargeIn'
  | 'streamCaptions'
  | 'replyCompletionTimeoutMs'
  | 'vadThreshold'
  | 'logger'
  | 'randomHex'
  | 'delay'
> & {
  /** Milliseconds on a monotonic clock. */
  nowMs: () => number;
  /** Session instructions for the room's conversation. */
  instructions?: string;
};

/** The remote-tool settings of a room session (HERMES_LIVEKIT_REMOTE_TOOL_POLICY, _TOOL_TIMEOUT_SEC). */
export interface RemoteToolSettings {
  policy: RemoteToolPolicy;
  /**
   * The operator's `hermes-livekit-tools` switch: registered tools are offered to the model only while it is on
   * (absent: always offered).
   */
  toolset?: ToolsetGate;
  toolTimeoutMs: number;
  /** Unix seconds (tests move consent expiry past it). */
  nowSeconds?: () => number;
  /** How long a cancelled byte stream may take to end (5 s; tests shorten it). */
  drainLimitMs?: number;
  /** A cancelled byte stream never ended: the gateway abandons this room generation and joins again. */
  onStuckStream?: () => void;
}

interface Capture {
  input: ParticipantInput;
  /** The subscribed audio track being read, and how to stop reading it. */
  reading: { trackSid: string; stop: () => void } | null;
}

type Extension = Record<string, unknown> & { type: string };

function decodeJsonObject(payload: Uint8Array): Extension | null {
  if (payload.byteLength > MAX_EXTENSION_BYTES) return null;
  try {
    const value: unknown = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(payload));
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
    const record = value as Record<string, unknown>;
    return typeof record.type === 'string' ? (record as Extension) : null;
  } catch {
    return null;
  }
}

/**
 * One room's shared conversation (the agent is connected): one RealtimeProtocol (session id = room name)
 * whose events travel on `conference.events`, broadcast or to the one participant they target; one turn
 * runner speaking into the `hermes-voice` track; one polled capture per allowed participant; and the
 * `conference.extensions` controls. Everything is dropped by `close()`; data from participants who are
 * not allowed, or from a closed session, is ignored.
 */
export class ConferenceSession {
  readonly protocol: RealtimeProtocol;
  readonly output: RoomAudioOutput;
  readonly tools: RemoteTools;
  private readonly toolset: ToolsetGate | null;
  private readonly runner: TurnRunner;
  private readonly captures = new Map<string, Capture>();
  private readonly openItems = new Map<string, string>();
  private readonly frames = new FrameGrabber();
  /** Captured frames waiting for the next user message (voice or typed), oldest first, bounded. */
  private pendingFrames: CapturedFrame[] = [];
  private track: LocalAudioTrack | null = null;
  private sending: Promise<void> = Promise.resolve();
  private transcriptions: Promise<void> = Promise.resolve();
  private readonly sttController = new AbortController();
  private pollTimer: ReturnType<typeof setTimeout> | null = null;
  /** `conference.control pause`: the room's audio is not sampled until `resume`. */
  private clientPaused = false;
  /** The agent is speaking without barge-in: capture is paused (the reference pauses it during playout). */
  private agentSpeaking = false;
  private closed = false;
  private readonly detach: () => void;

  constructor(
    readonly room: Room,
    readonly roomName: string,
    private readonly services: ConferenceServices,
    private readonly isAllowed: (identity: string) => boolean,
    toolSettings: RemoteToolSettings,
  ) {
    const { logger } = services;
    this.toolset = toolSettings.toolset ?? null;
    this.tools = new RemoteTools({
      room,
      roomName,
      policy: toolSettings.policy,
      toolTimeoutMs: toolSettings.toolTimeoutMs,
      send: (topic, body, recipient) => this.send(topic, body, recipient),
      logger,
      ...(toolSettings.nowSeconds ? { nowSeconds: toolSettings.nowSeconds } : {}),
      ...(toolSettings.drainLimitMs === undefined ? {} : { drainLimitMs: toolSettings.drainLimitMs }),
      ...(toolSettings.onStuckStream ? { onStuckStream: toolSettings.onStuckStream } : {}),
    });
    this.protocol = new RealtimeProtocol({
      sessionId: roomName,
      publish: (event, recipient) => this.publish(event, recipient),
      inputAudioStateOnEvents: false,
      callbacks: {
        onTextInput: (text, _identity, responseId) => this.startTurn(responseId, text),
        onResponseRequested: (_identity, responseId) => this.startTurn(responseId, RESPOND_NOW),
        onResponseCancelled: () => this.runner.cancel(),
        onInputAudioCommit: (identity, eventId) => {
          const capture = this.captures.get(identity);
          if (capture?.input.speaking) capture.input.flushNow(this.nowUs());
          else this.protocol.inputAudioCommitEmpty(identity, eventId);
        },
        onOutputAudioClear: () => this.runner.cancel(),
        onClosed: (reason) => logger.warn('conference_protocol_closed', { room: roomName, reason }),
      },
      turnDetection: {
        type: 'server_vad',
        threshold: services.vadThreshold,
        prefix_padding_ms: 500,
        silence_duration_ms: Math.round(services.endpointSettings.silenceDurationUs / 1000),
        create_response: true,
        interrupt_response: services.bargeIn,
      },
      instructions: services.instructions ?? '',
      tools: [],
      toolChoice: 'auto',
      nowMs: services.nowMs,
      randomHex: services.randomHex,
    });
    this.output = new RoomAudioOutput();
    this.runner = new TurnRunner({
      protocol: this.protocol,
      agent: services.agent,
      tts: services.tts,
      output: this.output,
      sessionKey: `livekit:${roomName}`,
      trimLeadingSilence: services.trimLeadingSilence,
      streamCaptions: services.streamCaptions,
      replyCompletionTimeoutMs: services.replyCompletionTimeoutMs,
      onSpeaking: (speaking) => (this.agentSpeaking = speaking && !services.bargeIn),
      delay: services.delay,
      echoGuardMs: ROOM_ECHO_GUARD_MS,
      log: (event, fields) => logger.info(event, { room: roomName, ...fields }),
      // The registry stays whole; what a turn offers passes the toolset switch.
      transportTools: {
        list: () => this.offeredTools(),
        has: (name) => this.tools.has(name),
        call: (name, args, signal) => this.tools.call(name, args, signal),
      },
    });

    const onConnected = (participant: RemoteParticipant): void => this.participantJoined(participant);
    const onDisconnected = (participant: RemoteParticipant): void => this.participantLeft(participant.identity);
    const onSubscribed = (track: RemoteTrack, publication: RemoteTrackPublication, participant: RemoteParticipant) =>
      this.trackSubscribed(track, publication, participant);
    const onUnsubscribed = (_track: RemoteTrack, publication: RemoteTrackPublication, participant: RemoteParticipant) =>
      this.trackUnsubscribed(publication, participant);
    const onData = (payload: Uint8Array, participant?: RemoteParticipant, _kind?: unknown, topic?: string) =>
      this.dataReceived(payload, participant, topic);
    room.on(RoomEvent.ParticipantConnected, onConnected);
    room.on(RoomEvent.ParticipantDisconnected, onDisconnected);
    room.on(RoomEvent.TrackSubscribed, onSubscribed);
    room.on(RoomEvent.TrackUnsubscribed, onUnsubscribed);
    room.on(RoomEvent.DataReceived, onData);
    this.detach = () => {
      room.off(RoomEvent.ParticipantConnected, onConnected);
      room.off(RoomEvent.ParticipantDisconnected, onDisconnected);
      room.off(RoomEvent.TrackSubscribed, onSubscribed);
      room.off(RoomEvent.TrackUnsubscribed, onUnsubscribed);
      room.off(RoomEvent.DataReceived, onData);
    };
  }

  /** The remote tools a turn offers the model now (none while `hermes-livekit-tools` is not enabled). */
  offeredTools(): SessionTool[] {
    const tools = this.tools.list();
    return this.toolset ? this.toolset.offer(tools, this.roomName) : tools;
  }

  /** Identities whose audio is being captured (tests and logs). */
  get capturing(): string[] {
    return [...this.captures.keys()];
  }

  /** The room is connected: publishes `hermes-voice`, greets who is already there and starts polling capture. */
  async start(): Promise<void> {
    const local = this.room.localParticipant;
    if (!local) throw new Error('the room is not connected');
    const track = LocalAudioTrack.createAudioTrack(AGENT_TRACK_NAME, this.output.source);
    this.track = track;
    await local.publishTrack(track, new TrackPublishOptions({ source: TrackSource.SOURCE_MICROPHONE }));
    for (const participant of this.room.remoteParticipants.values()) {
      this.participantJoined(participant);
      for (const publication of participant.trackPublications.values()) {
        const remote = publication.track;
        if (remote) this.trackSubscribed(remote as RemoteTrack, publication, participant);
      }
    }
    this.schedulePoll();
  }

  private nowUs(): number {
    return Math.round(this.services.nowMs() * 1000);
  }

  // ------------------------------------------------------------------ outbound

  private send(topic: string, body: unknown, recipient: Recipient): void {
    if (this.closed) return;
    const local = this.room.localParticipant;
    if (!local) return;
    const bytes = new TextEncoder().encode(JSON.stringify(body));
    const options = { reliable: true, topic, ...(recipient ? { destination_identities: [recipient] } : {}) };
    // One after another: the contract's event order is the order the room delivers them in.
    this.sending = this.sending
      .then(() => local.publishData(bytes, options))
      .catch((error: unknown) => {
        if (!this.closed)
          this.services.logger.warn('conference_send_failed', {
            room: this.roomName,
            topic,
            message: error instanceof Error ? error.message : String(error),
          });
      });
  }

  private publish(event: ServerEvent, recipient: Recipient): void {
    if (event.type === 'error')
      this.services.logger.info('client_error', { room: this.roomName, code: event.error.code, to: recipient });
    this.send(EVENTS_TOPIC, event, recipient);
  }

  /** Resolves once every data packet queued so far was handed to the room (tests). */
  flushed(): Promise<void> {
    return this.sending;
  }

  // ------------------------------------------------------------------ participants and tracks

  private participantJoined(participant: RemoteParticipant): void {
    if (this.closed || !this.isAllowed(participant.identity)) return;
    this.protocol.announce(participant.identity);
  }

  private participantLeft(identity: string): void {
    this.tools.removeOwner(identity);
    this.frames.unwatch(identity);
    const capture = this.captures.get(identity);
    if (!capture) return;
    capture.reading?.stop();
    // Whatever they were saying when they left is still their turn.
    if (capture.input.speaking) capture.input.flushNow(this.nowUs());
    capture.input.close();
    this.captures.delete(identity);
  }

  private captureFor(identity: string): Capture {
    let capture = this.captures.get(identity);
    if (!capture) {
      const input = new ParticipantInput(
        identity,
        this.services.detectorFactory,
        this.services.endpointSettings,
        (who, events) => this.onEndpoint(who, events),
      );
      capture = { input, reading: null };
      this.captures.set(identity, capture);
    }
    return capture;
  }

  private trackSubscribed(track: RemoteTrack, publication: RemoteTrackPublication, participant: RemoteParticipant) {
    if (this.closed || !this.isAllowed(participant.identity)) return;
    if (track.kind === TrackKind.KIND_VIDEO) {
      this.frames.watch(participant.identity, publication.sid ?? '', track);
      return;
    }
    if (track.kind !== TrackKind.KIND_AUDIO) return;
    const capture = this.captureFor(participant.identity);
    const trackSid = publication.sid ?? '';
    if (capture.reading?.trackSid === trackSid) return;
    capture.reading?.stop();
    const stream = new AudioStream(track, { sampleRate: ROOM_AUDIO_RATE_HZ, numChannels: 1 });
    const reader = stream.getReader();
    let stopped = false;
    capture.reading = {
      trackSid,
      stop: () => {
        stopped = true;
        void reader.cancel().catch(() => undefined);
      },
    };
    void (async () => {
      for (;;) {
        let next: Awaited<ReturnType<typeof reader.read>>;
        try {
          next = await reader.read();
        } catch {
          return;
        }
        if (next.done || stopped || this.closed) return;
        // Capture is paused while the agent speaks (no barge-in) or the room asked for a pause.
        if (this.agentSpeaking || this.clientPaused) continue;
        capture.input.push(next.value.data, this.nowUs());
      }
    })();
  }

  private trackUnsubscribed(publication: RemoteTrackPublication, participant: RemoteParticipant): void {
    this.frames.unwatch(participant.identity, publication.sid ?? '');
    const capture = this.captures.get(participant.identity);
    if (!capture || capture.reading?.trackSid !== (publication.sid ?? '')) return;
    capture.reading.stop();
    capture.reading = null;
    if (capture.input.speaking) capture.input.flushNow(this.nowUs());
  }

  // ------------------------------------------------------------------ endpointing and turns

  private schedulePoll(): void {
    if (this.closed) return;
    this.pollTimer = setTimeout(() => void this.pollAll(), CONFERENCE_POLL_INTERVAL_US / 1000);
  }

  private async pollAll(): Promise<void> {
    for (const capture of [...this.captures.values()]) {
      if (this.closed) return;
      await capture.input.poll(this.nowUs());
    }
    this.schedulePoll();
  }

  private onEndpoint(identity: string, events: EndpointEvent[]): void {
    if (this.closed) return;
    for (const event of events) {
      switch (event.type) {
        case 'calibrated':
          this.services.logger.info('vad_calibrated', {
            room: this.roomName,
            participant: identity,
            noise_rms: Math.round(event.noiseRms),
          });
          break;
        case 'speech_started': {
          const active = this.protocol.activeResponseId;
          if (active && this.services.bargeIn) {
            // Barge-in: someone talks over the reply, so it stops now.
            this.runner.cancel();
            this.protocol.cancelResponse(active);
          }
          this.openItems.set(identity, this.protocol.speechStarted(event.audioStartUs / 1000));
          break;
        }
        case 'speech_stopped':
          // Too short to transcribe: the item closes without a transcript.
          this.protocol.speechStopped(event.atUs / 1000, this.takeOpenItem(identity));
          break;
        case 'utterance': {
          // The polled transport reports speech_stopped when processing starts (AUDIO.md §5). Each speaker
          // closes their own item, so overlapping speech is transcribed per participant.
          const itemId = this.protocol.speechStopped(event.atUs / 1000, this.takeOpenItem(identity));
          this.services.logger.info('endpoint', {
            room: this.roomName,
            participant: identity,
            at_ms: Math.round(event.atUs / 1000),
            backend: this.services.detectorFactory.backend,
            silence_duration_ms: Math.round(this.services.endpointSettings.silenceDurationUs / 1000),
          });
          if (itemId) {
            this.protocol.inputCommitted(itemId);
            this.transcribe(identity, itemId, event);
          }
          break;
        }
        case 'input_audio_too_long':
          this.protocol.inputAudioOverflow(identity, this.takeOpenItem(identity));
          this.send(
            EXTENSIONS_TOPIC,
            {
              type: 'error',
              error: {
                code: 'input_audio_too_long',
                message: 'Speech exceeded two minutes. Please pause and try again.',
              },
            },
            identity,
          );
          break;
        default:
          // Speculative transcription is a direct-transport optimisation; the room transcribes at the endpoint.
          break;
      }
    }
  }

  /** The speaker's open input item, now closed (null when none is open). */
  private takeOpenItem(identity: string): string | null {
    const item = this.openItems.get(identity) ?? null;
    this.openItems.delete(identity);
    return item;
  }

  /** Transcriptions run one after another, so turns start in the order people finished speaking. */
  private transcribe(identity: string, itemId: string, utterance: Extract<EndpointEvent, { type: 'utterance' }>) {
    this.transcriptions = this.transcriptions.then(async () => {
      let transcript = '';
      try {
        transcript = (
          await this.services.stt.transcribe(
            {
              pcm: utterance.pcm,
              sampleRateHz: ROOM_AUDIO_RATE_HZ,
              ...(utterance.converted ? { converted: utterance.converted } : {}),
            },
            { signal: this.sttController.signal },
          )
        ).trim();
      } catch (error) {
        if (this.closed) return;
        this.services.logger.warn('transcription_failed', {
          room: this.roomName,
          error: error instanceof Error ? error.name : 'unknown',
        });
      }
      if (this.closed) return;
      this.services.logger.debugText('transcript', { room: this.roomName, participant: identity, transcript });
      this.protocol.userTranscript(itemId, transcript);
      if (!transcript) return;
      const active = this.protocol.activeResponseId;
      if (active) {
        // A newer spoken turn supersedes a reply still in progress.
        this.runner.cancel();
        this.protocol.cancelResponse(active);
      }
      const responseId = this.protocol.openResponse(identity);
      const command = spokenCommand(transcript);
      if (command) this.runner.startCommand(responseId, command);
      else this.startTurn(responseId, transcript);
    });
  }

  /** Starts a user turn; captured frames waiting for a user message go with it. */
  private startTurn(responseId: string, text: string): void {
    this.services.logger.debugText('turn_text', { room: this.roomName, response_id: responseId, text });
    const images = this.pendingFrames.splice(0).map((frame) => ({ mimeType: 'image/jpeg' as const, data: frame.jpeg }));
    if (images.length > 0) this.services.logger.info('frames_attached', { room: this.roomName, count: images.length });
    this.runner.start(responseId, text, images);
  }

  /** `conference.capture_frame`: the sender's newest camera frame, as JPEG, for the next user message. */
  private async captureFrame(identity: string): Promise<void> {
    const result = await this.frames.capture(identity);
    if (this.closed) return;
    if ('failure' in result) {
      this.send(
        EXTENSIONS_TOPIC,
        { type: 'agent:frame-capture-failed', payload: { reason: result.failure, identity } },
        null,
      );
      return;
    }
    this.pendingFrames.push(result);
    if (this.pendingFrames.length > MAX_PENDING_FRAMES) this.pendingFrames.shift();
    this.send(
      EXTENSIONS_TOPIC,
      {
        type: 'agent:frame-captured',
        payload: {
          identity,
          width: result.width,
          height: result.height,
          bytes: result.jpeg.byteLength,
          timestamp: result.timestamp,
        },
      },
      null,
    );
  }

  // ------------------------------------------------------------------ data

  private dataReceived(payload: Uint8Array, participant: RemoteParticipant | undefined, topic: string | undefined) {
    // Server-originated packets and packets from participants who may not talk to the agent are dropped.
    if (this.closed || !participant || !this.isAllowed(participant.identity)) return;
    const identity = participant.identity;
    if (topic === EVENTS_TOPIC) {
      this.protocol.announce(identity);
      this.protocol.handleClientMessage(Buffer.from(payload), identity);
      return;
    }
    if (topic === EXTENSIONS_TOPIC) {
      const message = decodeJsonObject(payload);
      if (message) this.extension(message, identity);
      else this.services.logger.info('conference_undecodable', { room: this.roomName, topic });
      return;
    }
    if (topic === TOOLS_TOPIC) {
      const message = decodeJsonObject(payload);
      if (message?.type === 'conference.tools.register') {
        this.tools.register(identity, message, payload.byteLength);
        // Registered while the toolset is off: the operator is told (once) how to let the model see them.
        this.offeredTools();
      }
      // A catalog past the size bound is rejected (and the sender's tools cleared) like any invalid one.
      else if (payload.byteLength > MAX_EXTENSION_BYTES) this.tools.register(identity, {}, payload.byteLength);
      else if (!message) this.services.logger.info('conference_undecodable', { room: this.roomName, topic });
    }
    // Other topics are not this session's.
  }

  private extension(message: Extension, identity: string): void {
    switch (message.type) {
      case 'hermes.input_audio.state': {
        if (typeof message.muted !== 'boolean') {
          this.protocol.error(identity, 'invalid_input_audio_state', 'muted must be a boolean.', 'muted');
          return;
        }
        const capture = this.captureFor(identity);
        if (message.muted) capture.input.mute(this.nowUs());
        else capture.input.unmute();
        this.send(EXTENSIONS_TOPIC, { type: 'hermes.input_audio.state_updated', muted: message.muted }, identity);
        return;
      }
      case 'conference.control':
        switch (message.action) {
          case 'pause':
            this.clientPaused = true;
            return;
          case 'resume':
            this.clientPaused = false;
            return;
          case 'end-of-turn':
          case 'end_of_turn':
            this.captures.get(identity)?.input.flushNow(this.nowUs());
            return;
          default:
            return;
        }
      case 'conference.message': {
        // A typed turn: it supersedes a reply in progress, as a spoken one does.
        const text = typeof message.text === 'string' ? message.text.trim() : '';
        if (!text || Buffer.byteLength(text) > MAX_TYPED_TEXT_BYTES) return;
        const active = this.protocol.activeResponseId;
        if (active) {
          this.runner.cancel();
          this.protocol.cancelResponse(active);
        }
        this.startTurn(this.protocol.openResponse(identity), text);
        return;
      }
      case 'conference.capture_frame':
        void this.captureFrame(identity);
        return;
      default:
        // Unknown extension types are ignored.
        return;
    }
  }

  /** `conference.control pause` is in effect (tests). */
  get paused(): boolean {
    return this.clientPaused;
  }

  /** Stops everything the session owns; the gateway then leaves the room. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.detach();
    if (this.pollTimer) clearTimeout(this.pollTimer);
    this.runner.cancel();
    this.tools.close();
    this.protocol.close();
    this.sttController.abort();
    for (const identity of [...this.captures.keys()]) {
      const capture = this.captures.get(identity);
      capture?.reading?.stop();
      capture?.input.close();
    }
    this.captures.clear();
    this.frames.close();
    this.pendingFrames = [];
    await this.output.close();
    await this.track?.close(false).catch(() => undefined);
  }
}
