import { MAX_CAPTURE_SAMPLES, type EndpointSettings, type VadBackend } from './types.js';

/** Detection and speech-output settings of one gateway, validated once at startup. */
export interface AudioSettings {
  endpoint: EndpointSettings;
  vadBackend: VadBackend;
  /** Silero speech probability needed to start speech (0.2–0.9); while speaking the bar is 0.15 lower. */
  vadThreshold: number;
  /** The Silero model file; `null` = the pinned model shipped in `@livekit/agents-plugin-silero`. */
  vadModelPath: string | null;
  /** Drop near-silent frames at the start of each spoken reply (AUDIO.md §9). */
  ttsTrimLeadingSilence: boolean;
}

/** A bad setting. The message names the setting (and the environment variable when it came from one). */
export class AudioSettingsError extends Error {
  override readonly name = 'AudioSettingsError';
}

/**
 * Every audio bound in one table: the setting, its default, and the environment variable that changes it.
 * The config-file key is the same name as in the reference plugin's `platforms.realtime.extra`.
 */
export const AUDIO_SETTINGS = {
  silence_duration: { env: 'HERMES_REALTIME_SILENCE_DURATION', default: 1.5, unit: 's', range: '0.2–5.0' },
  asr_prefetch_silence: {
    env: 'HERMES_REALTIME_ASR_PREFETCH_SILENCE',
    default: 0,
    unit: 's',
    range: '0 or 0.1–<silence',
  },
  vad_backend: { env: 'HERMES_REALTIME_VAD_BACKEND', default: 'silero', unit: '', range: 'silero | rms' },
  vad_threshold: { env: 'HERMES_REALTIME_VAD_THRESHOLD', default: 0.5, unit: '', range: '0.2–0.9' },
  vad_model_path: { env: 'HERMES_REALTIME_VAD_MODEL_PATH', default: null, unit: '', range: 'non-blank path' },
  tts_trim_leading_silence: {
    env: 'HERMES_REALTIME_TTS_TRIM_LEADING_SILENCE',
    default: false,
    unit: '',
    range: 'true | false',
  },
} as const;

type SettingName = keyof typeof AUDIO_SETTINGS;

/** Raw values as a config file gives them (JSON/YAML types, checked strictly: `true` is not a number). */
export type RawAudioSettings = Partial<Record<SettingName, unknown>>;

function finiteNumber(name: SettingName, value: unknown): number {
  // Booleans are numbers in Python and strings are easy to mistype: both are rejected, never coerced.
  if (typeof value !== 'number' || !Number.isFinite(value))
    throw new AudioSettingsError(
      `${name} must be a finite number (${AUDIO_SETTINGS[name].range}), got ${describe(value)}`,
    );
  return value;
}

function describe(value: unknown): string {
  if (typeof value === 'string') return `the string ${JSON.stringify(value.slice(0, 40))}`;
  if (typeof value === 'number') return String(value);
  return typeof value;
}

const secondsToUs = (seconds: number): number => Math.round(seconds * 1_000_000);

/** Validates config-file values; absent keys take their defaults. Throws `AudioSettingsError` naming the key. */
export function parseAudioSettings(raw: RawAudioSettings): AudioSettings {
  const silence = raw.silence_duration === undefined ? 1.5 : finiteNumber('silence_duration', raw.silence_duration);
  if (silence < 0.2 || silence > 5.0)
    throw new AudioSettingsError(`silence_duration must be between 0.2 and 5.0 seconds, got ${silence}`);

  const prefetch =
    raw.asr_prefetch_silence === undefined ? 0 : finiteNumber('asr_prefetch_silence', raw.asr_prefetch_silence);
  if (prefetch !== 0 && (prefetch < 0.1 || prefetch >= silence))
    throw new AudioSettingsError(
      `asr_prefetch_silence must be 0 (disabled) or at least 0.1 and below silence_duration (${silence}), got ${prefetch}`,
    );

  const backend = raw.vad_backend === undefined ? 'silero' : raw.vad_backend;
  if (backend !== 'silero' && backend !== 'rms')
    throw new AudioSettingsError(`vad_backend must be "silero" or "rms", got ${describe(backend)}`);

  const threshold = raw.vad_threshold === undefined ? 0.5 : finiteNumber('vad_threshold', raw.vad_threshold);
  if (threshold < 0.2 || threshold > 0.9)
    throw new AudioSettingsError(`vad_threshold must be between 0.2 and 0.9, got ${threshold}`);

  let modelPath: string | null = null;
  if (raw.vad_model_path !== undefined && raw.vad_model_path !== null) {
    if (typeof raw.vad_model_path !== 'string' || raw.vad_model_path.trim() === '')
      throw new AudioSettingsError('vad_model_path must be a non-blank string');
    modelPath = raw.vad_model_path;
  }

  const trim = raw.tts_trim_leading_silence === undefined ? false : raw.tts_trim_leading_silence;
  if (typeof trim !== 'boolean')
    throw new AudioSettingsError(`tts_trim_leading_silence must be true or false, got ${describe(trim)}`);

  return {
    endpoint: {
      silenceDurationUs: secondsToUs(silence),
      asrPrefetchSilenceUs: secondsToUs(prefetch),
      maxCaptureSamples: MAX_CAPTURE_SAMPLES,
    },
    vadBackend: backend,
    vadThreshold: threshold,
    vadModelPath: modelPath,
    ttsTrimLeadingSilence: trim,
  };
}

const NUMBER_TEXT = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

/**
 * Reads the `HERMES_REALTIME_*` audio variables over config-file values (environment wins), converting
 * their text strictly (`"1.5"` → 1.5, `"true"`/`"false"`), then validates like `parseAudioSettings`.
 * Error messages name the variable.
 */
export function audioSettingsFromEnv(env: NodeJS.ProcessEnv, fileValues: RawAudioSettings = {}): AudioSettings {
  const raw: RawAudioSettings = { ...fileValues };
  for (const [name, spec] of Object.entries(AUDIO_SETTINGS) as [SettingName, (typeof AUDIO_SETTINGS)[SettingName]][]) {
    const text = env[spec.env]?.trim();
    if (text === undefined || text === '') continue;
    if (typeof spec.default === 'number') {
      if (!NUMBER_TEXT.test(text))
        throw new AudioSettingsError(`${spec.env} (${name}) must be a number, got "${text}"`);
      raw[name] = Number(text);
    } else if (typeof spec.default === 'boolean') {
      const lower = text.toLowerCase();
      if (!['true', 'false', '1', '0'].includes(lower))
        throw new AudioSettingsError(`${spec.env} (${name}) must be true or false, got "${text}"`);
      raw[name] = lower === 'true' || lower === '1';
    } else {
      raw[name] = text;
    }
  }
  try {
    return parseAudioSettings(raw);
  } catch (error) {
    if (!(error instanceof AudioSettingsError)) throw error;
    const named = (Object.keys(AUDIO_SETTINGS) as SettingName[]).find((name) => error.message.startsWith(name));
    const variable = named && env[AUDIO_SETTINGS[named].env]?.trim() ? ` (from ${AUDIO_SETTINGS[named].env})` : '';
    throw new AudioSettingsError(`${error.message}${variable}`);
  }
}
