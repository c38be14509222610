import { DisconnectReason, Room, RoomEvent, type RemoteParticipant } from '@livekit/rtc-node';
import { AccessToken, RoomServiceClient, TwirpError } from 'livekit-server-sdk';
import { realTimer, type SetTimer } from '../protocol/realtime-protocol.js';
import { askAgentName, DEFAULT_AGENT_NAME } from './agent-name.js';
import { agentIdentity, apiOrigin, isAllowedParticipant, type ConferenceConfig } from './conference-config.js';
import { ConferenceSession, type ConferenceServices } from './conference-session.js';
import { ToolsetGate } from './toolset-gate.js';
import { loadRemoteToolPolicy, type RemoteToolPolicy } from './tool-rules.js';

/** Where the gateway is: watching presence from outside, joining, in the room, stopped, or given up. */
export type ConferenceState = 'watching' | 'joining' | 'joined' | 'stopped' | 'failed';

/** Lists the identities in a room (empty when the room does not exist). */
export type ListParticipants = (room: string) => Promise<string[]>;

export interface ConferenceGatewayOptions {
  config: ConferenceConfig;
  services: ConferenceServices;
  /** Presence source (default: RoomService ListParticipants with a short-lived admin token). */
  listParticipants?: ListParticipants;
  /** How long the room may be empty of allowed participants before the agent leaves (2 s). */
  emptyGraceMs?: number;
  /** Waits before each rejoin after a lost connection or a failed join ([2, 5, 10, 30, 60] s, last repeats). */
  reconnectDelaysMs?: readonly number[];
  /** Consecutive failed joins after which the gateway gives up (10). */
  maxReconnectAttempts?: number;
  /** Unix seconds for consent expiry (tests). */
  nowSeconds?: () => number;
  /** How long a cancelled tool-result byte stream may take to end before the room is rejoined (5 s). */
  drainLimitMs?: number;
  /** Called on every state change (tests and logs). */
  onState?: (state: ConferenceState) => void;
  /** How long the model may take to name the agent when LIVEKIT_AGENT_NAME is unset (10 s). */
  nameTimeoutMs?: number;
  /** The timer bounding that question (tests fire it by hand). */
  nameTimer?: SetTimer;
}

export const EMPTY_GRACE_MS = 2_000;
export const RECONNECT_DELAYS_MS = [2_000, 5_000, 10_000, 30_000, 60_000] as const;
export const MAX_RECONNECT_ATTEMPTS = 10;
/** Lifetime of the agent's join token and of each RoomService token. */
const TOKEN_TTL = '6h';

/** RoomService presence: identities in the room; LiveKit answers not_found for a room nobody is in. */
export function roomServicePresence(config: ConferenceConfig): ListParticipants {
  const client = new RoomServiceClient(apiOrigin(config.url), config.apiKey, config.apiSecret);
  return async (room) => {
    try {
      return (await client.listParticipants(room)).map((participant) => participant.identity);
    } catch (error) {
      if (error instanceof TwirpError && (error.status === 404 || error.code === 'not_found')) return [];
      throw error;
    }
  };
}

/**
 * The agent's access token: join this room, publish, subscribe, data, its own metadata (CONTRACT.md §4). The
 * identity and name are the token's, so the name is settled before the first join.
 */
export async function agentToken(config: ConferenceConfig, agentName: string): Promise<string> {
  const token = new AccessToken(config.apiKey, config.apiSecret, {
    identity: agentIdentity(agentName),
    name: agentName,
    ttl: TOKEN_TTL,
    ...(config.agentAvatar ? { metadata: JSON.stringify({ avatar: config.agentAvatar }) } : {}),
  });
  token.addGrant({
    room: config.room,
    roomJoin: true,
    canPublish: true,
    canSubscribe: true,
    canPublishData: true,
    canUpdateOwnMetadata: true,
  });
  return token.toJwt();
}

/**
 * Conference mode: Hermes as a participant of one LiveKit room. Out of the room it polls presence (30 s on
 * LiveKit Cloud, 5 s elsewhere) and joins as soon as an allowed participant is there; in the room it runs one
 * ConferenceSession and leaves once no allowed participant has been present for the grace period. A lost
 * connection (after the SDK's own resume and reconnect failed) or a failed join is retried with backoff; after
 * ten consecutive failures the gateway gives up and says so.
 */
export class ConferenceGateway {
  private stateNow: ConferenceState = 'stopped';
  private room: Room | null = null;
  private sessionNow: ConferenceSession | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private graceTimer: ReturnType<typeof setTimeout> | null = null;
  private failures = 0;
  private readonly listParticipants: ListParticipants;
  /** The display name: configured, else asked of the model once before the first join (null until then). */
  private name: string | null;
  private naming: Promise<string> | null = null;
  private joinAttempts = 0;
  /** HERMES_LIVEKIT_REMOTE_TOOL_POLICY, loaded once. */
  readonly policy: RemoteToolPolicy;
  /** `hermes-livekit-tools` in the profile's `platform_toolsets.livekit`: remote tools reach the model. */
  readonly toolset: ToolsetGate;

  constructor(private readonly options: ConferenceGatewayOptions) {
    this.listParticipants = options.listParticipants ?? roomServicePresence(options.config);
    this.name = options.config.agentName;
    this.policy = loadRemoteToolPolicy(options.config.remoteToolPolicy);
    this.toolset = new ToolsetGate(options.config.profileConfigFile, options.services.logger);
  }

  get state(): ConferenceState {
    return this.stateNow;
  }

  /** The room's conversation while the agent is in it. */
  get session(): ConferenceSession | null {
    return this.sessionNow;
  }

  /** The identity the agent joins (or joined) under. */
  get agentIdentity(): string {
    return agentIdentity(this.agentName);
  }

  /** The display name (`Hermes` until a name the model is asked for has arrived). */
  get agentName(): string {
    return this.name ?? DEFAULT_AGENT_NAME;
  }

  /**
   * The name to join under. Without LIVEKIT_AGENT_NAME the configured agent is asked once (bounded; any failure
   * gives `Hermes`), before the first join: the identity is part of the join token and cannot change after it.
   * Every later join (reconnects, rejoins) keeps that name.
   */
  private resolveName(): Promise<string> {
    if (this.name !== null) return Promise.resolve(this.name);
    const { services, config } = this.options;
    this.naming ??= askAgentName(services.agent, {
      sessionKey: `livekit-name:${config.room}`,
      setTimer: this.options.nameTimer ?? realTimer,
      ...(this.options.nameTimeoutMs === undefined ? {} : { timeoutMs: this.options.nameTimeoutMs }),
    }).then((answer) => {
      this.name = answer.name;
      services.logger.info('conference_agent_name', {
        room: config.room,
        name: answer.name,
        identity: agentIdentity(answer.name),
        source: answer.source,
        ...(answer.source === 'fallback'
          ? { reason: answer.reason, hint: 'set LIVEKIT_AGENT_NAME to choose the name yourself' }
          : {}),
      });
      return answer.name;
    });
    return this.naming;
  }

  start(): void {
    if (this.stateNow !== 'stopped') return;
    const { config, services } = this.options;
    if (!config.allowAllUsers && config.allowedUsers.size === 0)
      services.logger.warn('conference_nobody_allowed', {
        room: config.room,
        hint: 'set LIVEKIT_ALLOWED_USERS (or LIVEKIT_ALLOW_ALL_USERS=1 for development)',
      });
    this.setState('watching');
    void this.poll();
  }

  async stop(): Promise<void> {
    this.setState('stopped');
    this.clearTimers();
    await this.leave();
  }

  private setState(state: ConferenceState): void {
    if (this.stateNow === state) return;
    this.stateNow = state;
    this.options.services.logger.info('conference_state', { room: this.options.config.room, state });
    this.options.onState?.(state);
  }

  private clearTimers(): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.graceTimer) clearTimeout(this.graceTimer);
    this.timer = null;
    this.graceTimer = null;
  }

  private later(ms: number, step: () => void): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      step();
    }, ms);
  }

  private allowed(identity: string): boolean {
    return isAllowedParticipant(this.options.config, identity, this.agentName);
  }

  /** One presence check from outside the room. */
  private async poll(): Promise<void> {
    if (this.stateNow !== 'watching') return;
    const { config, services } = this.options;
    let someone = false;
    try {
      someone = (await this.listParticipants(config.room)).some((identity) => this.allowed(identity));
    } catch (error) {
      services.logger.warn('conference_presence_failed', {
        room: config.room,
        message: error instanceof Error ? error.message.slice(0, 200) : 'unknown',
      });
    }
    if (this.stateNow !== 'watching') return;
    if (someone) void this.join();
    else this.later(config.presencePollMs, () => void this.poll());
  }

  private async join(): Promise<void> {
    const { config, services } = this.options;
    this.setState('joining');
    // A stop (and a new start) while the name is asked for leaves this attempt behind.
    const attempt = ++this.joinAttempts;
    const agentName = await this.resolveName();
    if (attempt !== this.joinAttempts || this.stateNow !== 'joining') return;
    const room = new Room();
    const session = new ConferenceSession(room, config.room, services, (identity) => this.allowed(identity), {
      policy: this.policy,
      toolset: this.toolset,
      toolTimeoutMs: config.toolTimeoutMs,
      ...(this.options.nowSeconds ? { nowSeconds: this.options.nowSeconds } : {}),
      ...(this.options.drainLimitMs === undefined ? {} : { drainLimitMs: this.options.drainLimitMs }),
      onStuckStream: () => this.rejoin(room),
    });
    this.room = room;
    this.sessionNow = session;
    room.on(RoomEvent.ParticipantDisconnected, () => this.checkEmpty());
    room.on(RoomEvent.ParticipantConnected, (participant: RemoteParticipant) => {
      if (this.allowed(participant.identity)) this.cancelGrace();
    });
    room.on(RoomEvent.Disconnected, (reason: DisconnectReason) => {
      if (this.room !== room || this.stateNow === 'stopped') return;
      services.logger.warn('conference_disconnected', { room: config.room, reason: DisconnectReason[reason] });
      void this.leave().then(() => this.retry());
    });
    try {
      await room.connect(config.url, await agentToken(config, agentName), { autoSubscribe: true, dynacast: false });
      if (this.room !== room) return;
      await session.start();
    } catch (error) {
      if (this.room !== room) return;
      services.logger.warn('conference_join_failed', {
        room: config.room,
        message: error instanceof Error ? error.message.slice(0, 200) : 'unknown',
      });
      await this.leave();
      this.retry();
      return;
    }
    if (this.room !== room || (this.stateNow as ConferenceState) === 'stopped') return;
    this.failures = 0;
    this.setState('joined');
    this.checkEmpty();
  }

  /** Abandons this room generation (a stuck data stream) and joins a fresh one after a presence check. */
  private rejoin(room: Room): void {
    if (this.room !== room || this.stateNow !== 'joined') return;
    this.options.services.logger.warn('conference_rejoin', { room: this.options.config.room, reason: 'stuck stream' });
    void this.leave().then(() => {
      if (this.stateNow === 'stopped') return;
      this.setState('watching');
      void this.poll();
    });
  }

  /** Backoff before the next attempt; the attempt starts with a presence check. */
  private retry(): void {
    if (this.stateNow === 'stopped') return;
    const max = this.options.maxReconnectAttempts ?? MAX_RECONNECT_ATTEMPTS;
    this.failures += 1;
    if (this.failures > max) {
      this.options.services.logger.warn('conference_gave_up', { room: this.options.config.room, attempts: max });
      this.setState('failed');
      return;
    }
    const delays = this.options.reconnectDelaysMs ?? RECONNECT_DELAYS_MS;
    const delay = delays[Math.min(this.failures - 1, delays.length - 1)] ?? 0;
    this.setState('watching');
    this.later(delay, () => void this.poll());
  }

  /** No allowed participant left: leave after the grace period unless one comes back. */
  private checkEmpty(): void {
    const room = this.room;
    if (!room || this.stateNow !== 'joined') return;
    const someone = [...room.remoteParticipants.values()].some((participant) => this.allowed(participant.identity));
    if (someone) {
      this.cancelGrace();
      return;
    }
    if (this.graceTimer) return;
    this.graceTimer = setTimeout(() => {
      this.graceTimer = null;
      if (this.room !== room || this.stateNow !== 'joined') return;
      void this.leave().then(() => {
        if (this.stateNow === 'stopped') return;
        this.setState('watching');
        this.later(this.options.config.presencePollMs, () => void this.poll());
      });
    }, this.options.emptyGraceMs ?? EMPTY_GRACE_MS);
  }

  private cancelGrace(): void {
    if (this.graceTimer) clearTimeout(this.graceTimer);
    this.graceTimer = null;
  }

  /** Closes the session and disconnects the room (safe when out of the room). */
  private async leave(): Promise<void> {
    this.cancelGrace();
    const room = this.room;
    const session = this.sessionNow;
    this.room = null;
    this.sessionNow = null;
    await session?.close();
    if (room) await room.disconnect().catch(() => undefined);
  }
}
