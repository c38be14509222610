import { readFileSync } from 'node:fs';
import path from 'node:path';
import { isProfileName } from '@conduit/contracts/dashboard/profile';
import { AudioSettingsError, audioSettingsFromEnv, parseAudioSettings, type AudioSettings } from './audio/settings.js';
import { readProfileConfig, type ProfileConfig } from './profile-config.js';
import { profileVariables } from './profile-dotenv.js';
import { resolveSpeech, type SpeechSelection } from './providers/hermes-speech.js';
import { parseIceServers, type IceServer } from './signalling/ice-servers.js';

/** Which agent answers turns. `echo` is the clearly labelled default when nothing is configured. */
export type AgentConfig =
  | { kind: 'echo' }
  | { kind: 'hermes'; baseUrl: string; apiKey: string; commands: HermesCommandsConfig | null }
  | { kind: 'openai'; baseUrl: string; apiKey: string; model: string };

/**
 * Where native Hermes slash commands run: the Hermes dashboard's WebSocket (`/api/ws`, JSON-RPC `slash.exec`,
 * SURFACES.md §2), the surface that executes them in a session. Null: commands are refused with an error.
 */
export interface HermesCommandsConfig {
  /** The dashboard's root, e.g. `http://127.0.0.1:9119` (loopback: its session token is accepted there). */
  dashboardUrl: string;
  /** The dashboard's session token (Hermes' `HERMES_DASHBOARD_SESSION_TOKEN`). Never logged. */
  token: string;
}

/** The gateway's configuration, validated once at boot. */
export interface VoiceConfig {
  host: string;
  port: number;
  /** The bearer token clients must present. Never empty: startup fails closed without one. */
  apiKey: string;
  /** Profile name reported by discovery. */
  profile: string;
  /** Concurrent calls (set up or setting up) before 429 `too many active calls`. */
  maxCalls: number;
  /** A call is closed after this many seconds whatever happens on it. */
  maxCallSeconds: number;
  /** Body upload plus offer/answer must finish within this (30 s), or the setup fails and releases everything. */
  callSetupTimeoutMs: number;
  iceServers: IceServer[];
  /** HMAC key of the signed internal-proxy identity; absent = any proxy headers are refused. */
  proxySigningKey: string | null;
  /** Detection, endpointing and speech-output settings (validated by the audio module's own table). */
  audio: AudioSettings;
  /** When true, speech during a reply cancels it; otherwise capture pauses while the gateway speaks (reference). */
  bargeIn: boolean;
  agent: AgentConfig;
  /**
   * The speech-provider settings (HERMES_REALTIME_STT_*, _TTS_*, _ESPEAK_*), from the environment over the
   * config file's `speech` object; the provider module reads and validates them.
   */
  speechEnv: Record<string, string>;
  /**
   * Where each speech capability's settings came from (the gateway's own, the Hermes profile's `stt`/`tts`,
   * or the fallback) and why: discovery and the start-up log report it. Holds no key or URL.
   */
  speech: SpeechSelection;
  /** Logs transcripts and texts when true; never audio or credentials. */
  debug: boolean;
  /**
   * Lowers the process's helper threads (garbage collection, thread pool) below the event loop that paces
   * audio (src/media/thread-priority.ts). On by default; Linux only.
   */
  lowerHelperThreads: boolean;
  /**
   * Who paces and sends outbound audio: `process` (a media sender process, src/media/media-sender.ts; the
   * default where sockets can be passed to a child process) or `inline` (the gateway's own event loop).
   */
  mediaSender: 'process' | 'inline';
  /**
   * The real-time round-robin priority (1–99) the media sender process asks for, 0 for normal scheduling
   * (src/media/thread-priority.ts `requestRealtimeScheduling`). Default 10.
   */
  senderRealtimePriority: number;
  /** HERMES_REALTIME_METRICS_TOKEN: a bearer that opens `GET /metrics` and nothing else (README, Metrics). */
  metricsToken?: string;
  /**
   * Captions stream as `response.output_audio_transcript.delta` while the reply is written (true), or arrive
   * only as the final `.done` transcript (false). The profile's `display.platforms.realtime.streaming`, else
   * its `streaming.enabled` (Hermes' gateway streaming policy, off unless set); true without a Hermes profile.
   */
  streamCaptions: boolean;
  /**
   * A reply that has not finished (agent done, speech synthesized) this many milliseconds after its turn
   * started is stopped and ended with a `response_timeout` error: the profile's
   * `tts.streaming.completion_timeout` (seconds, 1–600, default 120).
   */
  replyCompletionTimeoutMs: number;
}

export class ConfigError extends Error {}

/**
 * The profile name: HERMES_HOME's basename when it sits in a `profiles` folder and is a valid name (the
 * suite's one profile-name rule, contracts/src/dashboard/profile.ts), else `default`.
 */
export function profileFromHermesHome(hermesHome: string | undefined): string {
  if (!hermesHome) return 'default';
  const resolved = path.resolve(hermesHome);
  const name = path.basename(resolved);
  return path.basename(path.dirname(resolved)) === 'profiles' && isProfileName(name) ? name : 'default';
}

/** Defaults for the tests and for `loadConfig`; every bound has one place. */
export const CONFIG_DEFAULTS = {
  /** The seed's listen address is 127.0.0.1:8091; `npm run suite` and the image pass their own port (9130). */
  port: 8091,
  maxCalls: 8,
  maxCallSeconds: 7200,
  callSetupTimeoutMs: 30_000,
  /**
   * tts.streaming.completion_timeout (seconds), Hermes' own default: long enough for a long spoken answer to be
   * written and synthesized, short enough that a stalled run ends in an error the caller hears about instead
   * of silence.
   */
  replyCompletionTimeoutSeconds: 120,
} as const;

/**
 * The range Hermes accepts for tts.streaming.completion_timeout (seed): under a second would end replies that
 * are merely slow to start; over ten minutes is silence nobody waits through.
 */
export const REPLY_COMPLETION_TIMEOUT_RANGE_S = { min: 1, max: 600 } as const;

const NO_HERMES_PROFILE = { config: null, variable: () => undefined };

/** A complete configuration from a few fields (tests, probes, benchmarks). */
export function voiceConfig(overrides: Partial<VoiceConfig> & { apiKey: string }): VoiceConfig {
  return {
    host: '127.0.0.1',
    port: 0,
    profile: 'default',
    maxCalls: CONFIG_DEFAULTS.maxCalls,
    maxCallSeconds: CONFIG_DEFAULTS.maxCallSeconds,
    callSetupTimeoutMs: CONFIG_DEFAULTS.callSetupTimeoutMs,
    iceServers: [],
    proxySigningKey: null,
    audio: parseAudioSettings({ vad_backend: 'rms' }),
    bargeIn: false,
    agent: { kind: 'echo' },
    speechEnv: {},
    speech: resolveSpeech(overrides.speechEnv ?? {}, NO_HERMES_PROFILE).selection,
    debug: false,
    lowerHelperThreads: true,
    mediaSender: 'inline',
    senderRealtimePriority: 10,
    streamCaptions: true,
    replyCompletionTimeoutMs: CONFIG_DEFAULTS.replyCompletionTimeoutSeconds * 1000,
    ...overrides,
  };
}

type Source = Record<string, unknown>;

/** HERMES_REALTIME_MEDIA_SENDER: `process` unless on Windows (no socket handles for child processes there). */
function loadMediaSender(s: Settings): VoiceConfig['mediaSender'] {
  const found = s.raw('HERMES_REALTIME_MEDIA_SENDER', 'media_sender');
  if (!found) return process.platform === 'win32' ? 'inline' : 'process';
  if (found.value === 'process' || found.value === 'inline') return found.value;
  throw new ConfigError(`${found.name} must be "process" or "inline".`);
}

/** Reads one setting: the environment variable wins over the config file key. Blank env values count as unset. */
class Settings {
  constructor(
    private readonly env: NodeJS.ProcessEnv,
    private readonly file: Source,
  ) {}

  raw(envName: string, fileKey: string): { value: unknown; name: string } | undefined {
    const fromEnv = this.env[envName];
    if (fromEnv !== undefined && fromEnv.trim() !== '') return { value: fromEnv.trim(), name: envName };
    if (this.file[fileKey] !== undefined) return { value: this.file[fileKey], name: `${fileKey} (config file)` };
    return undefined;
  }

  string(envName: string, fileKey: string): string | undefined {
    const found = this.raw(envName, fileKey);
    if (!found) return undefined;
    if (typeof found.value !== 'string' || found.value.trim() === '')
      throw new ConfigError(`${found.name} must be a non-empty string.`);
    return found.value.trim();
  }

  number(envName: string, fileKey: string, check: (n: number) => boolean, rule: string): number | undefined {
    const found = this.raw(envName, fileKey);
    if (!found) return undefined;
    // Booleans, blank strings and NaN/Infinity are refused rather than coerced (AUDIO.md §1).
    const value =
      typeof found.value === 'number' ? found.value : typeof found.value === 'string' ? Number(found.value) : NaN;
    if (!Number.isFinite(value) || !check(value)) throw new ConfigError(`${found.name} must be ${rule}.`);
    return value;
  }

  boolean(envName: string, fileKey: string): boolean | undefined {
    const found = this.raw(envName, fileKey);
    if (!found) return undefined;
    if (typeof found.value === 'boolean') return found.value;
    if (typeof found.value === 'string' && /^(1|true|yes|on)$/i.test(found.value)) return true;
    if (typeof found.value === 'string' && /^(0|false|no|off)$/i.test(found.value)) return false;
    throw new ConfigError(`${found.name} must be true or false.`);
  }

  nested(key: string): Source {
    const value = this.file[key];
    if (value === undefined) return {};
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      throw new ConfigError(`${key} (config file) must be an object.`);
    return value as Source;
  }
}

function readConfigFile(file: string | undefined): Source {
  if (!file?.trim()) return {};
  let text: string;
  try {
    text = readFileSync(file.trim(), 'utf8');
  } catch {
    throw new ConfigError(`HERMES_REALTIME_CONFIG: cannot read ${file.trim()}.`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ConfigError(`HERMES_REALTIME_CONFIG: ${file.trim()} is not valid JSON.`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new ConfigError(`HERMES_REALTIME_CONFIG: ${file.trim()} must hold a JSON object.`);
  return parsed as Source;
}

const httpUrl = (name: string, value: string): string => {
  if (!/^https?:\/\/[^\s]+$/i.test(value)) throw new ConfigError(`${name} must be an http(s) URL.`);
  return value.replace(/\/+$/, '');
};

function loadAgent(env: NodeJS.ProcessEnv, file: Source): AgentConfig {
  const s = new Settings(env, new Settings(env, file).nested('agent'));
  const kind = s.string('HERMES_REALTIME_AGENT', 'kind') ?? 'echo';
  if (kind === 'echo') return { kind };
  const baseUrl = s.string('HERMES_REALTIME_AGENT_URL', 'url');
  const apiKey = s.string('HERMES_REALTIME_AGENT_KEY', 'api_key') ?? '';
  if (kind === 'hermes') {
    if (!baseUrl) throw new ConfigError('HERMES_REALTIME_AGENT_URL must name the Hermes API server for agent hermes.');
    return { kind, baseUrl: httpUrl('HERMES_REALTIME_AGENT_URL', baseUrl), apiKey, commands: loadCommands(env, s) };
  }
  if (kind === 'openai') {
    if (!baseUrl) throw new ConfigError('HERMES_REALTIME_AGENT_URL must name the chat-completions base URL.');
    const model = s.string('HERMES_REALTIME_AGENT_MODEL', 'model');
    if (!model) throw new ConfigError('HERMES_REALTIME_AGENT_MODEL must be set for agent openai.');
    return { kind, baseUrl: httpUrl('HERMES_REALTIME_AGENT_URL', baseUrl), apiKey, model };
  }
  throw new ConfigError('HERMES_REALTIME_AGENT must be one of echo, hermes, openai.');
}

/** The Hermes dashboard that runs slash commands (HermesCommandsConfig); null when none is named. */
function loadCommands(env: NodeJS.ProcessEnv, s: Settings): HermesCommandsConfig | null {
  const url = s.string('HERMES_REALTIME_AGENT_DASHBOARD_URL', 'dashboard_url');
  if (!url) return null;
  // Hermes' own variable for a pinned dashboard token is taken when the gateway's is not set.
  const token =
    s.string('HERMES_REALTIME_AGENT_DASHBOARD_TOKEN', 'dashboard_token') ?? env.HERMES_DASHBOARD_SESSION_TOKEN?.trim();
  if (!token)
    throw new ConfigError(
      'HERMES_REALTIME_AGENT_DASHBOARD_TOKEN (or HERMES_DASHBOARD_SESSION_TOKEN) must be set with HERMES_REALTIME_AGENT_DASHBOARD_URL.',
    );
  return { dashboardUrl: httpUrl('HERMES_REALTIME_AGENT_DASHBOARD_URL', url), token };
}

/**
 * HERMES_REALTIME_ENABLED (or the profile's `platforms.realtime.enabled`, the seed's config.yaml form of it):
 * the realtime platform of this profile is on. Unset counts as on (starting the gateway asks for it); false
 * stops startup, so a profile that turned the platform off never has a listener.
 */
function checkEnabled(s: Settings, profile: ProfileConfig | null): void {
  const found = s.raw('HERMES_REALTIME_ENABLED', 'enabled');
  const enabled = found
    ? s.boolean('HERMES_REALTIME_ENABLED', 'enabled')
    : profileBoolean(profile, 'platforms.realtime.enabled');
  if (enabled !== false) return;
  const name = found?.name ?? `platforms.realtime.enabled (${profile?.file ?? 'config.yaml'})`;
  throw new ConfigError(
    `${name} is false: the realtime platform is disabled for this profile, so the voice gateway does not start.`,
  );
}

/**
 * HERMES_REALTIME_ALLOW_ALL_USERS. The seed's environment-only setup sets it true beside the API key: Hermes
 * lets a platform's messages through only for its allowed users, and every caller of this gateway holding the
 * key (or a signed proxy identity) is one. The gateway has no per-user list of its own, so a setting that
 * asks for one (false, or HERMES_REALTIME_ALLOWED_USERS) stops startup instead of being silently ignored.
 */
function checkAllowAllUsers(s: Settings): void {
  const allowAll = s.raw('HERMES_REALTIME_ALLOW_ALL_USERS', 'allow_all_users');
  if (allowAll && s.boolean('HERMES_REALTIME_ALLOW_ALL_USERS', 'allow_all_users') === false)
    throw new ConfigError(
      `${allowAll.name} is false, but this gateway has no per-user allowlist: every caller presenting HERMES_REALTIME_API_KEY is a user. Set it to true or leave it unset.`,
    );
  const allowed = s.raw('HERMES_REALTIME_ALLOWED_USERS', 'allowed_users');
  if (allowed)
    throw new ConfigError(
      `${allowed.name} is set, but this gateway cannot restrict calls by user: every caller presenting HERMES_REALTIME_API_KEY is a user. Remove it (or use a separate key per audience).`,
    );
}

function profileBoolean(profile: ProfileConfig | null, key: string): boolean | undefined {
  const value = profile?.get(key);
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'boolean') return value;
  throw new ConfigError(`${key} (${profile?.file}) must be true or false.`);
}

/** VoiceConfig.streamCaptions: the profile's own policy for the realtime platform, as Hermes resolves it. */
function loadStreamCaptions(profile: ProfileConfig | null): boolean {
  if (!profile) return true;
  return (
    profileBoolean(profile, 'display.platforms.realtime.streaming') ??
    profileBoolean(profile, 'streaming.enabled') ??
    false
  );
}

/** VoiceConfig.replyCompletionTimeoutMs from `tts.streaming.completion_timeout` (seconds). */
function loadReplyCompletionTimeoutMs(profile: ProfileConfig | null): number {
  const key = 'tts.streaming.completion_timeout';
  const value = profile?.get(key);
  if (value === undefined || value === null) return CONFIG_DEFAULTS.replyCompletionTimeoutSeconds * 1000;
  // As for the environment's numbers: booleans and blank strings are refused, not coerced.
  const seconds = typeof value === 'number' ? value : typeof value === 'string' && value.trim() ? Number(value) : NaN;
  const { min, max } = REPLY_COMPLETION_TIMEOUT_RANGE_S;
  if (!Number.isFinite(seconds) || seconds < min || seconds > max)
    throw new ConfigError(`${key} (${profile?.file}) must be seconds from ${min} to ${max}.`);
  return Math.round(seconds * 1000);
}

/** Speech-provider variables: the config file's `speech` object (same names), overridden by the environment. */
function loadSpeechEnv(env: NodeJS.ProcessEnv, file: Source): Record<string, string> {
  const fromFile = new Settings(env, file).nested('speech');
  const speechEnv: Record<string, string> = {};
  for (const [name, value] of Object.entries(fromFile)) {
    if (!/^HERMES_REALTIME_(STT|TTS|ESPEAK)_[A-Z_]+$/.test(name))
      throw new ConfigError(`speech (config file) has an unknown key ${JSON.stringify(name).slice(0, 60)}.`);
    if (typeof value !== 'string' && typeof value !== 'number')
      throw new ConfigError(`speech.${name} (config file) must be a string or a number.`);
    speechEnv[name] = String(value);
  }
  for (const [name, value] of Object.entries(env))
    if (/^HERMES_REALTIME_(STT|TTS|ESPEAK)_[A-Z_]+$/.test(name) && value !== undefined && value.trim() !== '')
      speechEnv[name] = value;
  return speechEnv;
}

const AUDIO_FILE_KEYS = [
  'silence_duration',
  'asr_prefetch_silence',
  'vad_backend',
  'vad_threshold',
  'vad_model_path',
  'tts_trim_leading_silence',
] as const;

function loadAudio(env: NodeJS.ProcessEnv, file: Source): AudioSettings {
  const fileValues = Object.fromEntries(AUDIO_FILE_KEYS.filter((key) => key in file).map((key) => [key, file[key]]));
  try {
    return audioSettingsFromEnv(env, fileValues);
  } catch (error) {
    if (error instanceof AudioSettingsError) throw new ConfigError(error.message);
    throw error;
  }
}

/**
 * Reads the environment (HERMES_REALTIME_*) over an optional JSON file (HERMES_REALTIME_CONFIG), and the
 * Hermes profile's config.yaml for the keys a native Hermes platform honours (profile-config.ts). Every bad
 * value fails startup with a message naming the setting; nothing is silently replaced by a default.
 */
export function loadConfig(env: NodeJS.ProcessEnv): VoiceConfig {
  const file = readConfigFile(env.HERMES_REALTIME_CONFIG);
  const s = new Settings(env, file);
  const profile = readProfileConfig(env);
  checkEnabled(s, profile);
  checkAllowAllUsers(s);
  const apiKey = s.string('HERMES_REALTIME_API_KEY', 'api_key') ?? '';
  if (!apiKey)
    throw new ConfigError('HERMES_REALTIME_API_KEY must be set: the gateway refuses to start without a client key.');
  // The gateway's own speech settings win over the profile's Hermes stt/tts configuration (hermes-speech.ts).
  const speech = resolveSpeech(loadSpeechEnv(env, file), { config: profile, variable: profileVariables(env) });
  const integer = (min: number, max: number) => (n: number) => Number.isInteger(n) && n >= min && n <= max;
  const metricsToken = s.string('HERMES_REALTIME_METRICS_TOKEN', 'metrics_token');
  if (metricsToken !== undefined && metricsToken.length < 16)
    throw new ConfigError('HERMES_REALTIME_METRICS_TOKEN must be at least 16 characters.');
  const port =
    s.number('HERMES_REALTIME_PORT', 'port', integer(0, 65535), 'a port number (0–65535)') ?? CONFIG_DEFAULTS.port;
  const iceRaw = s.raw('HERMES_REALTIME_ICE_SERVERS', 'ice_servers');
  let iceServers: IceServer[] = [];
  if (iceRaw) {
    let value = iceRaw.value;
    if (typeof value === 'string') {
      try {
        value = JSON.parse(value);
      } catch {
        throw new ConfigError(`${iceRaw.name} must be a JSON array.`);
      }
    }
    const parsed = parseIceServers(value);
    if (!parsed.ok) throw new ConfigError(`${iceRaw.name}: ${parsed.error}`);
    iceServers = parsed.value;
  }
  return {
    host: s.string('HERMES_REALTIME_HOST', 'host') ?? '127.0.0.1',
    port,
    apiKey,
    profile: profileFromHermesHome(env.HERMES_HOME),
    maxCalls:
      s.number('HERMES_REALTIME_MAX_CALLS', 'max_calls', integer(1, 10_000), 'a whole number from 1') ??
      CONFIG_DEFAULTS.maxCalls,
    maxCallSeconds:
      s.number('HERMES_REALTIME_MAX_CALL_SECONDS', 'max_call_seconds', integer(1, 604_800), 'whole seconds from 1') ??
      CONFIG_DEFAULTS.maxCallSeconds,
    callSetupTimeoutMs: CONFIG_DEFAULTS.callSetupTimeoutMs,
    iceServers,
    proxySigningKey: s.string('HERMES_REALTIME_PROXY_SIGNING_KEY', 'proxy_signing_key') ?? null,
    audio: loadAudio(env, file),
    bargeIn: s.boolean('HERMES_REALTIME_BARGE_IN', 'barge_in') ?? false,
    agent: loadAgent(env, file),
    speechEnv: speech.speechEnv,
    speech: speech.selection,
    debug: s.boolean('HERMES_REALTIME_DEBUG', 'debug') ?? false,
    lowerHelperThreads: s.boolean('HERMES_REALTIME_LOWER_HELPER_THREADS', 'lower_helper_threads') ?? true,
    mediaSender: loadMediaSender(s),
    senderRealtimePriority:
      s.number(
        'HERMES_REALTIME_SENDER_RT_PRIORITY',
        'sender_rt_priority',
        integer(0, 99),
        'a whole number from 0 to 99',
      ) ?? 10,
    ...(metricsToken !== undefined ? { metricsToken } : {}),
    streamCaptions: loadStreamCaptions(profile),
    replyCompletionTimeoutMs: loadReplyCompletionTimeoutMs(profile),
  };
}
