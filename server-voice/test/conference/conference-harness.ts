import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  AudioFrame,
  AudioSource,
  AudioStream,
  LocalAudioTrack,
  LocalVideoTrack,
  Room,
  RoomEvent,
  TrackKind,
  TrackPublishOptions,
  TrackSource,
  VideoBufferType,
  VideoFrame,
  VideoSource,
  type LocalParticipant,
  type RemoteParticipant,
  type RemoteTrack,
} from '@livekit/rtc-node';
import { AccessToken } from 'livekit-server-sdk';
import type { AgentBackend } from '../../src/agent/agent-backend.js';
import { EnergyDetectorFactory } from '../../src/audio/energy-detector.js';
import { parseAudioSettings } from '../../src/audio/settings.js';
import {
  ConferenceGateway,
  roomServicePresence,
  type ConferenceState,
} from '../../src/conference/conference-gateway.js';
import type { ConferenceConfig } from '../../src/conference/conference-config.js';
import { EVENTS_TOPIC, EXTENSIONS_TOPIC } from '../../src/conference/conference-session.js';
import { TOOLS_TOPIC } from '../../src/conference/remote-tools.js';
import { createLogger, type Logger } from '../../src/log.js';
import { ScriptedSpeechToText, ScriptedTextToSpeech } from '../../src/providers/scripted.js';
import type { SpeechToText, TextToSpeech } from '../../src/providers/types.js';
import type { SetTimer } from '../../src/protocol/realtime-protocol.js';
import { startLiveKitTestServer, type LiveKitTestServer } from '../livekit-server/livekit-test-server.js';

export const API_KEY = 'conduit-conference-key';
export const API_SECRET = 'conduit-conference-secret-that-is-long-enough';
/** One generous bound per awaited event: a shared 2-core machine can stall for seconds; a broken path never arrives. */
export const EVENT_DEADLINE_MS = 20_000;
const RATE_HZ = 48_000;
const FRAME_SAMPLES = RATE_HZ / 100;

/**
 * Resolves with the first value `listen` reports, or rejects after the deadline naming what never came.
 * `listen` subscribes and returns its unsubscribe.
 */
export function within<T>(
  what: string,
  listen: (report: (value: T) => void) => () => void,
  deadlineMs = EVENT_DEADLINE_MS,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    let unsubscribe: () => void = () => undefined;
    const timer = setTimeout(() => {
      if (settled) return;
      settled = true;
      unsubscribe();
      reject(new Error(`timed out waiting for ${what}`));
    }, deadlineMs);
    unsubscribe = listen((value) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      queueMicrotask(() => unsubscribe());
      resolve(value);
    });
  });
}

/** A profile config.yaml enabling the `hermes-livekit-tools` toolset for the livekit platform. */
export const TOOLSET_ENABLED_YAML = 'platform_toolsets:\n  livekit:\n    - hermes-livekit-tools\n';

/** Writes a Hermes profile home (0700) with this config.yaml (0600); returns the file's path. */
export function profileConfigFile(yaml: string): string {
  const home = mkdtempSync(path.join(tmpdir(), 'conference-profile-'));
  const file = path.join(home, 'config.yaml');
  writeFileSync(file, yaml, { mode: 0o600 });
  return file;
}

let toolsetEnabledFile: string | null = null;

export function conferenceConfig(serverUrl: string, overrides: Partial<ConferenceConfig> = {}): ConferenceConfig {
  return {
    url: serverUrl,
    apiKey: API_KEY,
    apiSecret: API_SECRET,
    room: `room-${randomBytes(4).toString('hex')}`,
    agentName: 'Hermes',
    agentAvatar: null,
    homeChannel: 'hermes',
    allowedUsers: new Set(['alice', 'bob']),
    allowAllUsers: false,
    // Short, so a join follows a participant's arrival promptly; tests wait for the join itself.
    presencePollMs: 100,
    toolTimeoutMs: 5_000,
    remoteToolPolicy: null,
    // The operator enabled hermes-livekit-tools unless a test says otherwise.
    profileConfigFile: (toolsetEnabledFile ??= profileConfigFile(TOOLSET_ENABLED_YAML)),
    ...overrides,
  };
}

export interface GatewayUnderTest {
  gateway: ConferenceGateway;
  logger: Logger & { lines: string[] };
  /** Resolves with the first log entry (parsed) matching `match`, logged before or after the call. */
  logged(what: string, match: (entry: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>;
  /** Resolves when the gateway next reaches `state` (at once if it is there). */
  reaches(state: ConferenceState): Promise<void>;
  /** Every delay the session asked for (the echo guard), in milliseconds. */
  delays: number[];
  /** Resolves with the identities the next completed presence poll found. */
  nextPoll(): Promise<string[]>;
}

export interface GatewayOptions {
  silenceSeconds?: number;
  bargeIn?: boolean;
  emptyGraceMs?: number;
  nowSeconds?: () => number;
  /** Presence from this instead of the server's RoomService. */
  listParticipants?: (room: string) => Promise<string[]>;
  maxReconnectAttempts?: number;
  drainLimitMs?: number;
  /** The timer bounding the name question (fired by hand). */
  nameTimer?: SetTimer;
}

export function startGateway(
  config: ConferenceConfig,
  providers: { agent: AgentBackend; stt: SpeechToText; tts: TextToSpeech },
  options: GatewayOptions = {},
): GatewayUnderTest {
  const lines: string[] = [];
  const lineListeners = new Set<() => void>();
  const logger = {
    ...createLogger({
      debug: false,
      write: (line) => {
        lines.push(line);
        for (const listener of [...lineListeners]) listener();
      },
    }),
    lines,
  };
  const listeners = new Set<(state: ConferenceState) => void>();
  const audio = parseAudioSettings({ vad_backend: 'rms', silence_duration: options.silenceSeconds ?? 0.5 });
  const pollListeners = new Set<(identities: string[]) => void>();
  const delays: number[] = [];
  const presence = options.listParticipants ?? roomServicePresence(config);
  const gateway = new ConferenceGateway({
    config,
    listParticipants: async (room) => {
      const identities = await presence(room);
      for (const listener of [...pollListeners]) listener(identities);
      return identities;
    },
    services: {
      ...providers,
      detectorFactory: new EnergyDetectorFactory(),
      endpointSettings: audio.endpoint,
      trimLeadingSilence: false,
      bargeIn: options.bargeIn ?? false,
      streamCaptions: true,
      replyCompletionTimeoutMs: 60_000,
      vadThreshold: 0.5,
      logger,
      randomHex: (bytes) => randomBytes(bytes).toString('hex'),
      // The echo guard after playout: recorded, not waited for, between a test's turns.
      delay: (ms) => {
        delays.push(ms);
        return Promise.resolve();
      },
      nowMs: () => performance.now(),
    },
    emptyGraceMs: options.emptyGraceMs ?? 0,
    ...(options.nowSeconds ? { nowSeconds: options.nowSeconds } : {}),
    reconnectDelaysMs: [50],
    ...(options.maxReconnectAttempts === undefined ? {} : { maxReconnectAttempts: options.maxReconnectAttempts }),
    ...(options.drainLimitMs === undefined ? {} : { drainLimitMs: options.drainLimitMs }),
    ...(options.nameTimer ? { nameTimer: options.nameTimer } : {}),
    onState: (state) => {
      for (const listener of [...listeners]) listener(state);
    },
  });
  gateway.start();
  return {
    gateway,
    logger,
    delays,
    logged: (what, match) =>
      within(what, (report) => {
        const check = (): void => {
          const found = lines.map((line) => JSON.parse(line) as Record<string, unknown>).find(match);
          if (found) report(found);
        };
        lineListeners.add(check);
        check();
        return () => lineListeners.delete(check);
      }),
    reaches: (state) =>
      within(`the gateway to be ${state}`, (report) => {
        if (gateway.state === state) report(undefined);
        const listener = (now: ConferenceState): void => {
          if (now === state) report(undefined);
        };
        listeners.add(listener);
        return () => listeners.delete(listener);
      }),
    nextPoll: () =>
      within('a presence poll', (report) => {
        pollListeners.add(report);
        return () => pollListeners.delete(report);
      }),
  };
}

export type JsonEvent = Record<string, unknown> & { type: string };

/** A test participant: a real @livekit/rtc-node room member that records what it receives and can speak. */
export class TestParticipant {
  readonly events: JsonEvent[] = [];
  /** `performance.now()` at the arrival of each entry of `events` (the benchmark's clock). */
  readonly eventTimes: number[] = [];
  readonly extensions: JsonEvent[] = [];
  /** What the agent sent on `conference.tools` (registration answers, byte-stream ready / cancel). */
  readonly toolMessages: JsonEvent[] = [];
  private readonly listeners = new Set<() => void>();
  private source: AudioSource | null = null;

  private constructor(
    readonly identity: string,
    readonly room: Room,
  ) {
    room.on(RoomEvent.DataReceived, (payload, _participant, _kind, topic) => {
      let value: unknown;
      try {
        value = JSON.parse(new TextDecoder().decode(payload));
      } catch {
        return;
      }
      if (typeof value !== 'object' || value === null || typeof (value as JsonEvent).type !== 'string') return;
      if (topic === EVENTS_TOPIC) {
        this.events.push(value as JsonEvent);
        this.eventTimes.push(performance.now());
      } else if (topic === EXTENSIONS_TOPIC) this.extensions.push(value as JsonEvent);
      else if (topic === TOOLS_TOPIC) this.toolMessages.push(value as JsonEvent);
      else return;
      for (const listener of [...this.listeners]) listener();
    });
  }

  static async join(
    server: Pick<LiveKitTestServer, 'url'>,
    identity: string,
    roomName: string,
    keys: { apiKey: string; apiSecret: string } = { apiKey: API_KEY, apiSecret: API_SECRET },
  ): Promise<TestParticipant> {
    const token = new AccessToken(keys.apiKey, keys.apiSecret, { identity, name: identity, ttl: '10m' });
    token.addGrant({ room: roomName, roomJoin: true, canPublish: true, canSubscribe: true, canPublishData: true });
    const room = new Room();
    await room.connect(server.url, await token.toJwt(), { autoSubscribe: true, dynacast: false });
    return new TestParticipant(identity, room);
  }

  get local(): LocalParticipant {
    const participant = this.room.localParticipant;
    if (!participant) throw new Error(`${this.identity} is not connected`);
    return participant;
  }

  types(from = 0): string[] {
    return this.events.slice(from).map((event) => event.type);
  }

  /** The first event on `conference.events` (from index `from`) matching `match`. */
  waitForEvent(what: string, match: (event: JsonEvent) => boolean, from = 0): Promise<JsonEvent> {
    return this.waitIn(this.events, what, match, from);
  }

  waitForType(type: string, from = 0): Promise<JsonEvent> {
    return this.waitForEvent(`${this.identity} to receive ${type}`, (event) => event.type === type, from);
  }

  /** The next message on `conference.tools` from index `from`, of `type` (any type when null). */
  waitForToolMessage(type: string | null, from = 0): Promise<JsonEvent> {
    return this.waitIn(
      this.toolMessages,
      `${this.identity} to receive ${type ?? 'a tools message'}`,
      (event) => type === null || event.type === type,
      from,
    );
  }

  waitForExtension(type: string, from = 0): Promise<JsonEvent> {
    return this.waitIn(this.extensions, `${this.identity} to receive ${type}`, (event) => event.type === type, from);
  }

  private waitIn(list: JsonEvent[], what: string, match: (event: JsonEvent) => boolean, from: number) {
    return within<JsonEvent>(what, (report) => {
      const check = (): void => {
        const found = list.slice(from).find(match);
        if (found) report(found);
      };
      this.listeners.add(check);
      check();
      return () => this.listeners.delete(check);
    });
  }

  async send(topic: string, body: unknown): Promise<void> {
    await this.local.publishData(new TextEncoder().encode(JSON.stringify(body)), { reliable: true, topic });
  }

  /** Publishes a microphone track (once). */
  async publishMicrophone(): Promise<void> {
    if (this.source) return;
    this.source = new AudioSource(RATE_HZ, 1, 200);
    const track = LocalAudioTrack.createAudioTrack('microphone', this.source);
    await this.local.publishTrack(track, new TrackPublishOptions({ source: TrackSource.SOURCE_MICROPHONE }));
  }

  /**
   * Publishes a camera (VP8, no simulcast) showing one solid RGB colour, fed a frame every 40 ms until the
   * returned stop is called.
   */
  async publishCamera(width: number, height: number, rgb: [number, number, number]): Promise<() => Promise<void>> {
    const source = new VideoSource(width, height);
    const track = LocalVideoTrack.createVideoTrack('camera', source);
    await this.local.publishTrack(
      track,
      new TrackPublishOptions({ source: TrackSource.SOURCE_CAMERA, simulcast: false }),
    );
    const pixels = new Uint8Array(width * height * 4);
    for (let i = 0; i < pixels.length; i += 4) pixels.set([...rgb, 255], i);
    const feed = setInterval(() => {
      source.captureFrame(new VideoFrame(pixels, width, height, VideoBufferType.RGBA));
    }, 40);
    return async () => {
      clearInterval(feed);
      await source.close().catch(() => undefined);
    };
  }

  /** Captures `pcm` (48 kHz mono) in 10 ms frames; the source's queue paces it at real time. */
  async speak(pcm: Int16Array): Promise<void> {
    await this.publishMicrophone();
    const source = this.source;
    if (!source) throw new Error('no microphone');
    for (let start = 0; start + FRAME_SAMPLES <= pcm.length; start += FRAME_SAMPLES) {
      await source.captureFrame(new AudioFrame(pcm.slice(start, start + FRAME_SAMPLES), RATE_HZ, 1, FRAME_SAMPLES));
    }
    await source.waitForPlayout();
  }

  /** Resolves once the agent's `hermes-voice` track is subscribed and carries audio louder than `peak`. */
  hearsAgent(agentIdentity: string, peak = 2_000): Promise<void> {
    return within(`${this.identity} to hear the agent`, (report) => {
      let stop = false;
      const listen = (track: RemoteTrack): void => {
        const stream = new AudioStream(track, { sampleRate: RATE_HZ, numChannels: 1 });
        void (async () => {
          const reader = stream.getReader();
          try {
            for (;;) {
              const next = await reader.read();
              if (next.done || stop) return;
              if (next.value.data.some((sample) => Math.abs(sample) > peak)) {
                report(undefined);
                return;
              }
            }
          } finally {
            await reader.cancel().catch(() => undefined);
          }
        })();
      };
      const onSubscribed = (track: RemoteTrack, _publication: unknown, participant: RemoteParticipant): void => {
        if (participant.identity === agentIdentity && track.kind === TrackKind.KIND_AUDIO) listen(track);
      };
      const present = this.room.remoteParticipants.get(agentIdentity);
      for (const publication of present?.trackPublications.values() ?? [])
        if (publication.track && publication.kind === TrackKind.KIND_AUDIO) listen(publication.track as RemoteTrack);
      this.room.on(RoomEvent.TrackSubscribed, onSubscribed);
      return () => {
        stop = true;
        this.room.off(RoomEvent.TrackSubscribed, onSubscribed);
      };
    });
  }

  /** Resolves when `identity` is in the room (at once if it is). */
  sees(identity: string, deadlineMs = EVENT_DEADLINE_MS): Promise<void> {
    return within(
      `${this.identity} to see ${identity}`,
      (report) => {
        if (this.room.remoteParticipants.has(identity)) report(undefined);
        const listener = (participant: RemoteParticipant): void => {
          if (participant.identity === identity) report(undefined);
        };
        this.room.on(RoomEvent.ParticipantConnected, listener);
        return () => this.room.off(RoomEvent.ParticipantConnected, listener);
      },
      deadlineMs,
    );
  }

  /** Resolves when `identity` leaves the room. */
  seesLeave(identity: string): Promise<void> {
    return within(`${this.identity} to see ${identity} leave`, (report) => {
      const listener = (participant: RemoteParticipant): void => {
        if (participant.identity === identity) report(undefined);
      };
      this.room.on(RoomEvent.ParticipantDisconnected, listener);
      return () => this.room.off(RoomEvent.ParticipantDisconnected, listener);
    });
  }

  async leave(): Promise<void> {
    await this.source?.close().catch(() => undefined);
    this.source = null;
    await this.room.disconnect().catch(() => undefined);
  }
}

/** A LiveKit test server with a gateway in a room of its own, alice there and greeted. */
export interface ConferenceRoom {
  server: LiveKitTestServer;
  config: ConferenceConfig;
  under: GatewayUnderTest;
  alice: TestParticipant;
  /** Joins `identity` to the room, resolving once it is greeted with session.created; it leaves at close. */
  join(identity: string): Promise<TestParticipant>;
  /** Stops the gateway, then everyone who joined leaves, then the server closes. */
  close(): Promise<void>;
}

/**
 * Starts a LiveKit test server and a gateway on `conferenceConfig` (with `config`'s overrides) and joins
 * alice, resolving once the gateway has joined and greeted her with session.created. Speech providers
 * default to scripted ones nothing is said to. A start that fails half way closes what it started.
 */
export async function openConferenceRoom(
  providers: { agent: AgentBackend; stt?: SpeechToText; tts?: TextToSpeech },
  options: { config?: Partial<ConferenceConfig>; gateway?: GatewayOptions } = {},
): Promise<ConferenceRoom> {
  const server = await startLiveKitTestServer({ apiKey: API_KEY, apiSecret: API_SECRET });
  const config = conferenceConfig(server.url, options.config);
  const participants: TestParticipant[] = [];
  let under: GatewayUnderTest | null = null;
  const close = async (): Promise<void> => {
    await under?.gateway.stop();
    await Promise.allSettled(participants.map((participant) => participant.leave()));
    await server.close();
  };
  const join = async (identity: string): Promise<TestParticipant> => {
    const participant = await TestParticipant.join(server, identity, config.room);
    participants.push(participant);
    return participant;
  };
  try {
    const started = startGateway(
      config,
      {
        agent: providers.agent,
        stt: providers.stt ?? new ScriptedSpeechToText(['unused']),
        tts: providers.tts ?? new ScriptedTextToSpeech(),
      },
      options.gateway,
    );
    under = started;
    const alice = await join('alice');
    await started.reaches('joined');
    await alice.waitForType('session.created');
    return {
      server,
      config,
      under: started,
      alice,
      join: async (identity) => {
        const participant = await join(identity);
        await participant.waitForType('session.created');
        return participant;
      },
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/** A tone shaped like speech (48 kHz), with leading and trailing silence. */
export function speech(seconds: number, leadSilence = 0.5, tailSilence = 1.0): Int16Array {
  const lead = Math.round(RATE_HZ * leadSilence);
  const body = Math.round(RATE_HZ * seconds);
  const pcm = new Int16Array(lead + body + Math.round(RATE_HZ * tailSilence));
  for (let i = 0; i < body; i += 1)
    pcm[lead + i] = Math.round(7000 * Math.sin((2 * Math.PI * 300 * i) / RATE_HZ) * (0.6 + 0.4 * Math.sin(i / 2400)));
  return pcm;
}
