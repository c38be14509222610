import { readFileSync } from 'node:fs';
import path from 'node:path';
import { isProfileName } from '@conduit/contracts/dashboard/profile';
import { AudioSettingsError, audioSettingsFromEnv, parseAudioSettings, type AudioSettings } from './audio/settings.js';
import { parseIceServers, type IceServer } from './signalling/ice-servers.js';

/** Which agent answers turns. `echo` is the clearly labelled default when nothing is configured. */
export type AgentConfig =
  | { kind: 'echo' }
  | { kind: 'hermes'; baseUrl: string; apiKey: string }
  | { kind: 'openai'; baseUrl: string; apiKey: string; model: string };

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
} as const;

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
    debug: false,
    lowerHelperThreads: true,
    mediaSender: 'inline',
    senderRealtimePriority: 10,
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
    return { kind, baseUrl: httpUrl('HERMES_REALTIME_AGENT_URL', baseUrl), apiKey };
  }
  if (kind === 'openai') {
    if (!baseUrl) throw new ConfigError('HERMES_REALTIME_AGENT_URL must name the chat-completions base URL.');
    const model = s.string('HERMES_REALTIME_AGENT_MODEL', 'model');
    if (!model) throw new ConfigError('HERMES_REALTIME_AGENT_MODEL must be set for agent openai.');
    return { kind, baseUrl: httpUrl('HERMES_REALTIME_AGENT_URL', baseUrl), apiKey, model };
  }
  throw new ConfigError('HERMES_REALTIME_AGENT must be one of echo, hermes, openai.');
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
 * Reads the environment (HERMES_REALTIME_*) over an optional JSON file (HERMES_REALTIME_CONFIG). Every
 * bad value fails startup with a message naming the setting; nothing is silently replaced by a default.
 */
export function loadConfig(env: NodeJS.ProcessEnv): VoiceConfig {
  const file = readConfigFile(env.HERMES_REALTIME_CONFIG);
  const s = new Settings(env, file);
  const apiKey = s.string('HERMES_REALTIME_API_KEY', 'api_key') ?? '';
  if (!apiKey)
    throw new ConfigError('HERMES_REALTIME_API_KEY must be set: the gateway refuses to start without a client key.');
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
    speechEnv: loadSpeechEnv(env, file),
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
  };
}
