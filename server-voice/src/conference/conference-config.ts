import { readFileSync } from 'node:fs';
import path, { extname } from 'node:path';
import { ConfigError } from '../config.js';
import { hermesHome } from '../profile-config.js';
import { DEFAULT_AGENT_NAME } from './agent-name.js';

/** Conference mode (Hermes as a participant of a LiveKit room): what `LIVEKIT_*` configures. */
export interface ConferenceConfig {
  /** `ws(s)://` URL of the LiveKit server the room is on. */
  url: string;
  apiKey: string;
  apiSecret: string;
  /** The room the agent joins (default `hermes`). */
  room: string;
  /**
   * Display name (LIVEKIT_AGENT_NAME); the identity is `hermes-<name lower-cased>`. Null when unset: the
   * gateway asks the configured model for one before its first join, falling back to `Hermes`.
   */
  agentName: string | null;
  /** Avatar (URL or data URI) put in the agent's participant metadata, or null. */
  agentAvatar: string | null;
  /** Cron / cross-platform delivery target for Hermes (defaults to the room). Not used by the gateway itself. */
  homeChannel: string;
  /** Participant identities that may talk to the agent. */
  allowedUsers: ReadonlySet<string>;
  /** Any participant may (development only). */
  allowAllUsers: boolean;
  /** How often presence is polled while the agent is out of the room. */
  presencePollMs: number;
  /** Native RPC response timeout for remote tools (HERMES_LIVEKIT_TOOL_TIMEOUT_SEC, default 30 s). */
  toolTimeoutMs: number;
  /** The raw HERMES_LIVEKIT_REMOTE_TOOL_POLICY text (parsed by remote-tools; absent or invalid denies all). */
  remoteToolPolicy: string | null;
  /**
   * The Hermes profile's config.yaml, whose `platform_toolsets.livekit` must list `hermes-livekit-tools` for
   * remote tools to reach the model (toolset-gate.ts); null without a profile home (tools stay hidden).
   */
  profileConfigFile: string | null;
}

/** Presence polling against LiveKit Cloud (its API is rate limited) and against anything else. */
export const CLOUD_PRESENCE_POLL_MS = 30_000;
export const LOCAL_PRESENCE_POLL_MS = 5_000;
const DEFAULT_TOOL_TIMEOUT_MS = 30_000;
const MAX_AVATAR_FILE_BYTES = 256 * 1024;
const AVATAR_TYPES: Record<string, string> = {
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.webp': 'image/webp',
  '.gif': 'image/gif',
};

function trimmed(value: string | undefined): string | undefined {
  const text = value?.trim();
  return text ? text : undefined;
}

function truthy(value: string | undefined): boolean {
  return ['1', 'true', 'yes', 'on'].includes((value ?? '').trim().toLowerCase());
}

/** The agent's participant identity for a display name. */
export function agentIdentity(agentName: string): string {
  return `hermes-${agentName.toLowerCase().replace(/\s+/g, '-')}`;
}

/** The default presence interval for a server URL: 30 s on `*.livekit.cloud`, 5 s elsewhere. */
export function defaultPresencePollMs(url: string): number {
  const host = new URL(url).hostname.toLowerCase();
  return host === 'livekit.cloud' || host.endsWith('.livekit.cloud') ? CLOUD_PRESENCE_POLL_MS : LOCAL_PRESENCE_POLL_MS;
}

/** The HTTP origin of the server's API for its signalling URL (`wss://x` → `https://x`). */
export function apiOrigin(url: string): string {
  const parsed = new URL(url);
  parsed.protocol = parsed.protocol === 'wss:' || parsed.protocol === 'https:' ? 'https:' : 'http:';
  return parsed.origin;
}

function positiveSeconds(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const raw = trimmed(env[name]);
  if (raw === undefined) return undefined;
  const seconds = Number(raw);
  if (!Number.isFinite(seconds) || seconds <= 0 || seconds > 86_400)
    throw new ConfigError(`${name} must be a number of seconds between 0 and 86400`);
  return Math.round(seconds * 1000);
}

/** An avatar URL is used as it is; a local image file becomes a data URI. */
function avatar(value: string | undefined): string | null {
  if (value === undefined) return null;
  if (/^(https?:|data:)/i.test(value)) return value;
  const type = AVATAR_TYPES[extname(value).toLowerCase()];
  if (!type) throw new ConfigError('LIVEKIT_AGENT_AVATAR must be an http(s) URL or a .png, .jpg, .webp or .gif file');
  let bytes: Buffer;
  try {
    bytes = readFileSync(value);
  } catch {
    throw new ConfigError('LIVEKIT_AGENT_AVATAR names a file that cannot be read');
  }
  if (bytes.length > MAX_AVATAR_FILE_BYTES) throw new ConfigError('LIVEKIT_AGENT_AVATAR is larger than 256 KiB');
  return `data:${type};base64,${bytes.toString('base64')}`;
}

/**
 * Conference mode's settings, or null when `LIVEKIT_URL` is not set (the gateway then serves direct WebRTC
 * only). A URL without its key and secret, or a malformed value, is a configuration error.
 */
export function conferenceConfigFromEnv(env: NodeJS.ProcessEnv): ConferenceConfig | null {
  const url = trimmed(env.LIVEKIT_URL);
  if (url === undefined) return null;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ConfigError('LIVEKIT_URL must be a ws://, wss://, http:// or https:// URL');
  }
  if (!['ws:', 'wss:', 'http:', 'https:'].includes(parsed.protocol))
    throw new ConfigError('LIVEKIT_URL must be a ws://, wss://, http:// or https:// URL');
  const apiKey = trimmed(env.LIVEKIT_API_KEY);
  const apiSecret = trimmed(env.LIVEKIT_API_SECRET);
  if (!apiKey || !apiSecret)
    throw new ConfigError('LIVEKIT_URL is set, so LIVEKIT_API_KEY and LIVEKIT_API_SECRET are required');
  const room = trimmed(env.LIVEKIT_ROOM) ?? 'hermes';
  const agentName = trimmed(env.LIVEKIT_AGENT_NAME) ?? null;
  const home = hermesHome(env);
  const allowedUsers = new Set(
    (env.LIVEKIT_ALLOWED_USERS ?? '')
      .split(',')
      .map((identity) => identity.trim())
      .filter(Boolean),
  );
  return {
    url,
    apiKey,
    apiSecret,
    room,
    agentName,
    agentAvatar: avatar(trimmed(env.LIVEKIT_AGENT_AVATAR)),
    homeChannel: trimmed(env.LIVEKIT_HOME_CHANNEL) ?? room,
    allowedUsers,
    allowAllUsers: truthy(env.LIVEKIT_ALLOW_ALL_USERS),
    presencePollMs:
      positiveSeconds(env, 'LIVEKIT_PRESENCE_POLL_INTERVAL') ??
      positiveSeconds(env, 'PRESENCE_POLL_INTERVAL') ??
      defaultPresencePollMs(url),
    toolTimeoutMs: positiveSeconds(env, 'HERMES_LIVEKIT_TOOL_TIMEOUT_SEC') ?? DEFAULT_TOOL_TIMEOUT_MS,
    remoteToolPolicy: env.HERMES_LIVEKIT_REMOTE_TOOL_POLICY ?? null,
    profileConfigFile: home ? path.join(home, 'config.yaml') : null,
  };
}

/**
 * Whether a participant may talk to the agent (the agent itself never counts). `agentName` is the name the
 * agent joins under (the configured one, else the one the model chose, else `Hermes`).
 */
export function isAllowedParticipant(
  config: ConferenceConfig,
  identity: string,
  agentName: string = config.agentName ?? DEFAULT_AGENT_NAME,
): boolean {
  if (identity === agentIdentity(agentName)) return false;
  return config.allowAllUsers || config.allowedUsers.has(identity);
}
