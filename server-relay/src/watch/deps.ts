import type { IncomingMessage } from 'node:http';
import type { ApnsSender } from '../apns/types.js';
import type { LocalWatchGrants, WatchGrants } from './grant-service.js';
import type { LiveActivityStore } from './live-activities.js';

/** A gateway (Hermes host plugin) credential, resolved by the relay core. */
export interface GatewayIdentity {
  installationId: string;
  gatewayId: string;
}

/** A phone credential (`Bearer <installationId>.<deviceSecret>`), resolved by the relay core. */
export interface DeviceIdentity {
  installationId: string;
}

/**
 * Bounds and test seams of the Watch features. Every field has the reference default in
 * `WATCH_DEFAULTS`; the relay core passes what its limits table read from the environment
 * (RELAY_MAX_WATCH_GRANTS…), and `watchSeamsFromEnv` reads the WATCH_* seams and MAPS_* keys.
 */
export interface WatchSettings {
  /** RELAY_MAX_WATCH_GRANTS: live grants relay-wide; beyond it 503 watch_grant_capacity. */
  maxGrants: number;
  /** RELAY_MAX_WATCH_GRANTS_PER_GATEWAY: a new grant beyond it closes the gateway's oldest ('replaced'). */
  maxGrantsPerGateway: number;
  /** RELAY_WATCH_CALLS_PER_MINUTE: relay-wide Watch call budget (`watch-call-global`). */
  watchCallsPerMinute: number;
  /** RELAY_MAX_WATCH_AUDIO_BRIDGES: relay-wide audio bridges. */
  maxAudioBridges: number;
  /** RELAY_MAX_WATCH_AUDIO_BRIDGES_PER_GATEWAY. */
  maxAudioBridgesPerGateway: number;
  /** WATCH_CALL_WAIT_MS: how long a Watch call is held for the host's answer (25 s, then 504). */
  callWaitMs: number;
  /** WATCH_HOST_POLL_WAIT_MS: the longest host long-poll (25 s). */
  hostPollWaitMs: number;
  /** WATCH_HOST_GONE_MS: a host unseen this long with no poll waiting is offline (40 s, then 503). */
  hostGoneMs: number;
  /** WATCH_AUDIO_IDLE_MS: an audio socket silent this long is closed 4408 (60 s). */
  audioIdleMs: number;
  /** RELAY_WATCH_AUDIO_BYTES_PER_S: what one audio socket may send per second, over 5 s (else 4429). */
  audioBytesPerS: number;
  /** RELAY_MAPS_TOKENS_PER_INSTALLATION_PER_DAY: Maps tokens handed to one installation's hosts per 24 h. */
  mapsTokensPerInstallationPerDay: number;
}

/** The relay's Apple Maps key (MAPS_KEY_ID, MAPS_KEY_PATH, APNS_TEAM_ID); absent → 404 on /v1/maps/token. */
export interface MapsKeySettings {
  keyId: string;
  teamId: string;
  /** PKCS#8 PEM of the P-256 Maps key. */
  keyPem: string;
  /** Apple's token endpoint; a local fake in tests. */
  tokenUrl: string;
}

export interface WatchConfig extends Partial<WatchSettings> {
  /** PUBLIC_URL without trailing slash (https); the audio URLs are derived from it. */
  publicUrl: string;
  /** APNS_TOPIC: the app's bundle id; Live Activity pushes go to `<topic>.push-type.liveactivity`. */
  apnsTopic: string;
  maps?: MapsKeySettings;
}

/** What the Watch features need from the relay core, supplied by app.ts. */
export interface WatchDeps {
  /** Resolves `Authorization: Bearer <inst>.<gw>.<secret>` to its gateway, or null (→ 401). */
  authenticateGateway(authorization: string | undefined): Promise<GatewayIdentity | null>;
  /** Resolves `Authorization: Bearer <inst>.<secret>` of an active installation, or null (→ 401). */
  authenticateDevice(authorization: string | undefined): Promise<DeviceIdentity | null>;
  /** The APNs transport (Live Activity pushes). */
  apns: ApnsSender;
  /**
   * The relay's fixed-window limiter: counts one hit, false once the key is over `max` in its window
   * (default 60 s). Shared by the replicas (Redis) when there are several, hence the promise.
   */
  rateLimit: { hit(key: string, max: number, windowMs?: number): Promise<boolean> };
  /** The client address for per-IP limits (the trusted proxy's X-Forwarded-For entry under TRUST_PROXY, else the socket); also used for upgrades. */
  clientIp(request: IncomingMessage): string;
  config: WatchConfig;
  /** Milliseconds since the epoch. */
  now(): number;
  /**
   * Replicas (REDIS_URL): wraps this process' grants into the relay-wide ones, each grant living on one
   * replica. Absent in one process.
   */
  distribute?: (local: LocalWatchGrants, settings: WatchSettings) => WatchGrants & { close?(): void };
  /** Replicas (REDIS_URL): the Live Activity registrations all replicas share. Absent in one process (memory). */
  liveActivities?: LiveActivityStore;
}
