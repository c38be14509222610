/**
 * Input audio detection: the shapes shared by the energy gate, the Silero detector and the endpointers.
 *
 * Everything inside the gateway is PCM16, mono, 48 000 Hz, carried as `Int16Array` (one element per
 * sample). Clocks are integer microseconds (`…Us`) supplied by the caller, so every state machine here is
 * pure and synchronous and can be driven from fixtures; only model inference (Silero) is asynchronous, and
 * it runs at the IO edge (`VoiceDetector.score`) before the synchronous decision (`SpeechGate.isSpeech`).
 */

/** The one internal sample rate. */
export const SAMPLE_RATE_HZ = 48_000;
/** 20 ms at 48 kHz: the unit of calibration, classification windows and output frames. */
export const FRAME_SAMPLES = 960;
export const FRAME_DURATION_US = 20_000;
/** Audio kept before the first speech decision so word onsets survive (500 ms). */
export const PREROLL_SAMPLES = 24_000;
/** Utterances shorter than this (0.5 s) are dropped, never sent to speech-to-text. */
export const MIN_SPEECH_SAMPLES = 24_000;
/** Continuous capture cap per input: two minutes. Overflow discards the whole utterance. */
export const MAX_CAPTURE_SAMPLES = 120 * SAMPLE_RATE_HZ;

/** Which detector decides speech: the adaptive energy gate alone, or Silero (with the energy gate's noise floor). */
export type VadBackend = 'rms' | 'silero';

/**
 * A synchronous speech/non-speech classifier with hysteresis and a learned noise floor (RMS units of PCM16).
 * One instance per input; a new one is made to recalibrate (unmute).
 */
export interface SpeechGate {
  /** True once the first 400 ms of audio have set the noise floor. */
  readonly calibrated: boolean;
  /** The learned background level (RMS), or null before calibration. */
  readonly noiseRms: number | null;
  /** RMS a window must exceed to count as speech while not speaking. */
  readonly startThreshold: number;
  /** RMS a window must exceed to keep counting as speech while speaking; also the "quiet" bound for prefetch reuse. */
  readonly stopThreshold: number;
  /**
   * Feeds calibration audio: consumes only the 20 ms windows still needed, whatever the chunk size.
   * Returns true once calibrated.
   */
  calibrate(pcm: Int16Array): boolean;
  /**
   * Classifies one chunk of audio (any length; long chunks are judged per 20 ms window so a short word is
   * not averaged away) and learns the noise floor from non-speech. `speechProbability` is the model's
   * verdict for this same chunk (see `VoiceDetector.score`); the energy gate ignores it.
   */
  isSpeech(pcm: Int16Array, speaking: boolean, speechProbability?: number | null): boolean;
}

/**
 * Frame → speech probability, per input (model state is per input, never shared between callers).
 * The energy backend has no model and scores `null`; Silero runs one inference per completed 32 ms window.
 */
export interface VoiceDetector {
  readonly backend: VadBackend;
  /**
   * The speech probability (0–1) of this chunk of 48 kHz mono PCM16, fed strictly in arrival order and
   * exactly once (the model is stateful). `null` when the backend has no model.
   */
  score(pcm: Int16Array): Promise<number | null>;
  /** The gate that turns this detector's scores into decisions (a fresh one per call: recalibration). */
  createGate(): SpeechGate;
  /** Releases per-input state. */
  close(): void;
}

/** Makes one `VoiceDetector` per input from a shared, validated model. */
export interface VoiceDetectorFactory {
  readonly backend: VadBackend;
  create(): VoiceDetector;
}

/** Endpointing settings (validated by `parseDetectionSettings`). */
export interface EndpointSettings {
  /** Silence after the last positive decision that ends an utterance (0.2–5.0 s, default 1.5 s). */
  silenceDurationUs: number;
  /** Silence after which a speculative transcription starts; 0 disables it; otherwise 0.1 s ≤ v < silence. */
  asrPrefetchSilenceUs: number;
  /** Capture cap in samples (default `MAX_CAPTURE_SAMPLES`; tests shrink it). */
  maxCaptureSamples: number;
}

/** Decisions the endpointers emit, in order. `atUs` is the caller's clock at the chunk that caused it. */
export type EndpointEvent =
  /** The noise floor was set from the first 400 ms (buffered calibration audio is replayed right after). */
  | { type: 'calibrated'; atUs: number; noiseRms: number }
  /**
   * Speech began. `audioStartUs` is the capture time of the utterance's first sample (the start of the
   * pre-roll), assuming contiguous audio ending at `atUs`.
   */
  | { type: 'speech_started'; atUs: number; audioStartUs: number }
  /**
   * The utterance ended (silence reached `silenceDurationUs`, mute, commit or track end). `observedSilenceUs` is
   * the time since the last positive speech decision (the timer the silence target is compared with), and
   * `noiseRms` the gate's learned background level at that moment: the endpoint log reports both, so a
   * room can be tuned without recording it.
   */
  | { type: 'speech_stopped'; atUs: number; observedSilenceUs: number; noiseRms: number | null }
  /**
   * A complete utterance (pre-roll included) long enough to transcribe. `lastSpeechAtUs` is the prefetch
   * marker; `quietThresholdRms` is the stop threshold used to judge whether a prefetched transcript may be
   * reused (see `prefetchReusable`).
   */
  | {
      type: 'utterance';
      atUs: number;
      pcm: Int16Array;
      lastSpeechAtUs: number;
      quietThresholdRms: number;
      /** `pcm` at the endpointer's conversion rate, converted while it was captured (when one was asked for). */
      converted?: { pcm: Int16Array; sampleRateHz: number };
    }
  /**
   * Capture exceeded the cap: the utterance was discarded. The transport answers `speech_stopped` for the
   * open item (if any) and the `input_audio_too_long` error.
   */
  | { type: 'input_audio_too_long'; atUs: number }
  /** The pause reached `asrPrefetchSilenceUs`: transcribe this snapshot speculatively (once per marker). */
  | { type: 'prefetch'; atUs: number; pcm: Int16Array; markerUs: number }
  /** Speech resumed, overflow or mute: any speculative transcript is stale. */
  | { type: 'prefetch_discarded'; atUs: number };

export type EndpointEventType = EndpointEvent['type'];
