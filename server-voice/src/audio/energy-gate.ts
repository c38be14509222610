import { pcmRms } from './pcm.js';
import { FRAME_SAMPLES, SAMPLE_RATE_HZ, type SpeechGate } from './types.js';

/** Calibration length: 20 windows of 20 ms = the first 400 ms of audio. */
export const CALIBRATION_WINDOWS = 20;
/** Noise level assumed before calibration (`RMS_SILENCE_FLOOR`). */
export const MINIMUM_NOISE_FLOOR_RMS = 50;
/** Calibrated noise never exceeds this, so a loud start cannot make the gate deaf. */
export const MAXIMUM_NOISE_RMS = 2000;
/** Noise rises slowly (2 s) so speech-like hum does not teach the floor quickly… */
export const NOISE_RISE_TAU_SECONDS = 2.0;
/** …and falls fast (0.5 s) so the gate recovers quickly once a noise stops. */
export const NOISE_FALL_TAU_SECONDS = 0.5;

export interface AdaptiveRmsGateOptions {
  /** Start already calibrated at this noise level (tests; a transport that knows its floor). */
  initialNoiseRms?: number | null;
}

/**
 * The adaptive energy gate: calibrates its noise floor from the quieter half of the first 400 ms, decides
 * speech with separate start and stop thresholds, and keeps tracking background noise in idle audio and in
 * confident quiet pauses — never on speech, never on near-threshold quiet phonemes inside a turn.
 */
export class AdaptiveRmsGate implements SpeechGate {
  protected noise: number | null;
  private readonly calibrationRms: number[] = [];
  /** Samples of a calibration window that began in an earlier chunk. */
  private partialWindow: Int16Array = new Int16Array(0);

  constructor(options: AdaptiveRmsGateOptions = {}) {
    this.noise = options.initialNoiseRms ?? null;
  }

  get calibrated(): boolean {
    return this.noise !== null;
  }

  get noiseRms(): number | null {
    return this.noise;
  }

  private get effectiveNoise(): number {
    return this.noise ?? MINIMUM_NOISE_FLOOR_RMS;
  }

  get startThreshold(): number {
    const noise = this.effectiveNoise;
    return Math.max(300, 2.2 * noise, noise + 100);
  }

  get stopThreshold(): number {
    const noise = this.effectiveNoise;
    return Math.max(220, 1.5 * noise, noise + 60);
  }

  /** Adds one 20 ms window's RMS to calibration; after 20, the mean of the quieter half becomes the floor. */
  calibrateRms(rms: number): boolean {
    if (this.calibrated) return true;
    this.calibrationRms.push(rms);
    if (this.calibrationRms.length >= CALIBRATION_WINDOWS) {
      // The quieter half: speech inside the first 400 ms must not set the floor.
      const sorted = [...this.calibrationRms].sort((a, b) => a - b);
      const quieter = sorted.slice(0, Math.max(1, Math.floor(sorted.length / 2)));
      const mean = quieter.reduce((sum, value) => sum + value, 0) / quieter.length;
      // Digital silence calibrates to 1, so the 300/220 minimums apply (a muted placeholder track).
      this.noise = Math.min(MAXIMUM_NOISE_RMS, Math.max(1, mean));
    }
    return this.calibrated;
  }

  /**
   * Cuts the actual audio into 20 ms windows whatever the chunk size (400 ms of audio = 20 windows, not
   * 20 packets) and consumes only the samples still needed.
   */
  calibrate(pcm: Int16Array): boolean {
    let offset = 0;
    while (!this.calibrated && offset < pcm.length) {
      const need = FRAME_SAMPLES - this.partialWindow.length;
      const take = pcm.subarray(offset, offset + need);
      offset += take.length;
      const window = new Int16Array(this.partialWindow.length + take.length);
      window.set(this.partialWindow);
      window.set(take, this.partialWindow.length);
      if (window.length < FRAME_SAMPLES) {
        this.partialWindow = window;
        break;
      }
      this.partialWindow = new Int16Array(0);
      this.calibrateRms(pcmRms(window));
    }
    return this.calibrated;
  }

  /**
   * Classifies a chunk. Chunks longer than 20 ms are judged window by window (the last may be short) with
   * hysteresis carried across windows, so a short word inside a 200 ms batch is not averaged away.
   */
  isSpeech(pcm: Int16Array, speaking: boolean, _speechProbability?: number | null): boolean {
    if (pcm.length <= FRAME_SAMPLES) return this.classifyRms(pcmRms(pcm), speaking, pcm.length / SAMPLE_RATE_HZ);
    let anySpeech = false;
    for (let start = 0; start < pcm.length; start += FRAME_SAMPLES) {
      const end = Math.min(pcm.length, start + FRAME_SAMPLES);
      const speech = this.classifyRms(pcmRms(pcm, start, end), speaking || anySpeech, (end - start) / SAMPLE_RATE_HZ);
      anySpeech ||= speech;
    }
    return anySpeech;
  }

  /** One window's decision from its RMS; learns the noise floor from confident non-speech. */
  classifyRms(rms: number, speaking: boolean, frameSeconds: number): boolean {
    const speech = rms > (speaking ? this.stopThreshold : this.startThreshold);
    if (speech || this.noise === null) return speech;
    this.learnNoise(rms, speaking, frameSeconds);
    return false;
  }

  /** Tracks the background level from a window judged not to be speech. */
  protected learnNoise(rms: number, speaking: boolean, frameSeconds: number): void {
    if (this.noise === null) return;
    const noise = this.noise;
    // Near-threshold quiet phonemes inside a turn must not inflate the floor.
    if (speaking && rms > noise + Math.max(30, 0.15 * noise)) return;
    const observed = Math.min(rms, MAXIMUM_NOISE_RMS);
    const tau = observed > noise ? NOISE_RISE_TAU_SECONDS : NOISE_FALL_TAU_SECONDS;
    // Time-based, so 20 ms and 200 ms observations adapt at the same rate per second of audio.
    const alpha = 1 - Math.exp(-frameSeconds / tau);
    this.noise = Math.max(1, noise + alpha * (observed - noise));
  }
}
