import { concatPcm, SampleQueue, samplesToUs } from './pcm.js';
import { PcmResampler } from './resampler.js';
import {
  MIN_SPEECH_SAMPLES,
  PREROLL_SAMPLES,
  SAMPLE_RATE_HZ,
  type EndpointEvent,
  type EndpointSettings,
  type SpeechGate,
} from './types.js';

/** A chunk that arrived before calibration finished, kept to be replayed through detection. */
interface CalibrationChunk {
  pcm: Int16Array;
  speechProbability: number | null;
}

/**
 * Endpointing for the direct WebRTC transport (AUDIO.md §4): fed every received chunk with its arrival time,
 * it calibrates, keeps 500 ms of pre-roll, captures the utterance, ends it `silenceDurationUs` after the last
 * positive decision (at chunk granularity), enforces the capture cap, and asks for a speculative transcription
 * after `asrPrefetchSilenceUs` of pause. Pure and synchronous: model scores, if any, are computed beforehand.
 */
export class DirectEndpointer {
  private gate: SpeechGate;
  private readonly settings: EndpointSettings;
  private calibrationChunks: CalibrationChunk[] = [];
  private readonly preroll = new SampleQueue();
  private readonly buffer = new SampleQueue();
  private speakingNow = false;
  private lastSpeechAtUs = 0;
  /** Overflow recovery: audio is discarded until the speaker pauses for `silenceDurationUs`. */
  private overflowed = false;
  private mutedNow = false;
  /** Marker of the prefetch asked for in this pause, so one pause asks once. */
  private prefetchMarkerUs: number | null = null;
  /** Converts the open utterance to `convertToHz` as it is captured (the speech-to-text upload rate). */
  private converter: PcmResampler | null = null;
  private converted: Int16Array[] = [];

  /**
   * `convertToHz`: also deliver each utterance at this rate, converted frame by frame while the user speaks, so
   * the endpoint does not wait for a whole-utterance conversion (null: no conversion).
   */
  constructor(
    gate: SpeechGate,
    settings: EndpointSettings,
    private readonly convertToHz: number | null = null,
  ) {
    this.gate = gate;
    this.settings = settings;
  }

  get speaking(): boolean {
    return this.speakingNow;
  }

  get muted(): boolean {
    return this.mutedNow;
  }

  get noiseRms(): number | null {
    return this.gate.noiseRms;
  }

  /**
   * Feeds one received chunk (48 kHz mono PCM16) that ended at `atUs`. `speechProbability` is the model's
   * score for this chunk when the gate needs one (Silero). Chunks are ignored while muted.
   */
  push(pcm: Int16Array, atUs: number, speechProbability: number | null = null): EndpointEvent[] {
    if (this.mutedNow || pcm.length === 0) return [];
    const events: EndpointEvent[] = [];
    if (!this.gate.calibrated) {
      // Keep all calibration audio: speech that began inside the first 400 ms must still be captured.
      this.calibrationChunks.push({ pcm: pcm.slice(), speechProbability });
      if (!this.gate.calibrate(pcm)) return events;
      events.push({ type: 'calibrated', atUs, noiseRms: this.gate.noiseRms ?? 0 });
      const replay = this.calibrationChunks;
      this.calibrationChunks = [];
      for (const chunk of replay) this.accept(chunk.pcm, atUs, chunk.speechProbability, events);
      return events;
    }
    this.accept(pcm, atUs, speechProbability, events);
    return events;
  }

  /**
   * Mutes input (`hermes.input_audio.state` muted): an active utterance is finished and dispatched, anything
   * else buffered is dropped, and later chunks are ignored until `unmute`.
   */
  mute(atUs: number): EndpointEvent[] {
    const events: EndpointEvent[] = [];
    if (this.mutedNow) return events;
    if (this.speakingNow) this.finish(atUs, events);
    else this.discardPrefetch(atUs, events);
    this.mutedNow = true;
    this.clearCapture();
    return events;
  }

  /** Unmutes with a fresh gate, so detection recalibrates against the real microphone. */
  unmute(freshGate: SpeechGate): void {
    this.gate = freshGate;
    this.mutedNow = false;
    this.clearCapture();
  }

  /** The inbound track ended: an open utterance is finished as if the speaker had paused. */
  end(atUs: number): EndpointEvent[] {
    const events: EndpointEvent[] = [];
    if (this.speakingNow) this.finish(atUs, events);
    this.clearCapture();
    return events;
  }

  /**
   * Drops what was captured (`input_audio_buffer.clear`): an utterance in progress is abandoned without being
   * dispatched, and the pre-roll goes with it. Detection carries on with the next chunk.
   */
  discard(atUs: number): EndpointEvent[] {
    const events: EndpointEvent[] = [];
    this.discardPrefetch(atUs, events);
    this.clearCapture();
    return events;
  }

  private clearCapture(): void {
    this.buffer.clear();
    this.preroll.clear();
    this.calibrationChunks = [];
    this.overflowed = false;
    this.speakingNow = false;
    this.prefetchMarkerUs = null;
    this.stopConversion();
  }

  private startConversion(): void {
    if (this.convertToHz === null || this.convertToHz === SAMPLE_RATE_HZ) return;
    this.converter = new PcmResampler(SAMPLE_RATE_HZ, this.convertToHz);
    this.converted = [this.converter.process(this.buffer.slice())];
  }

  private stopConversion(): void {
    this.converter = null;
    this.converted = [];
  }

  private accept(pcm: Int16Array, nowUs: number, speechProbability: number | null, events: EndpointEvent[]): void {
    const speech = this.gate.isSpeech(pcm, this.speakingNow, speechProbability);

    if (this.overflowed) {
      // Nothing is captured until the speaker pauses; a truncated command is never transcribed.
      if (speech) this.lastSpeechAtUs = nowUs;
      if (nowUs - this.lastSpeechAtUs >= this.settings.silenceDurationUs) this.overflowed = false;
      return;
    }

    if (speech) {
      this.discardPrefetch(nowUs, events);
      if (!this.speakingNow) {
        this.buffer.clear();
        this.buffer.takeFrom(this.preroll);
        this.speakingNow = true;
        this.startConversion();
        const audioStartUs = nowUs - samplesToUs(this.buffer.length + pcm.length);
        events.push({ type: 'speech_started', atUs: nowUs, audioStartUs });
      }
      this.lastSpeechAtUs = nowUs;
      this.append(pcm, nowUs, events);
      return;
    }

    if (!this.speakingNow) {
      this.preroll.append(pcm);
      this.preroll.keepLast(PREROLL_SAMPLES);
      return;
    }

    if (!this.append(pcm, nowUs, events)) return;
    const silentUs = nowUs - this.lastSpeechAtUs;
    const prefetchUs = this.settings.asrPrefetchSilenceUs;
    if (prefetchUs > 0 && silentUs >= prefetchUs && this.prefetchMarkerUs !== this.lastSpeechAtUs) {
      this.prefetchMarkerUs = this.lastSpeechAtUs;
      events.push({ type: 'prefetch', atUs: nowUs, pcm: this.buffer.slice(), markerUs: this.lastSpeechAtUs });
    }
    if (silentUs >= this.settings.silenceDurationUs) this.finish(nowUs, events);
  }

  /** Appends to the utterance; on overflow discards it and enters recovery. Returns false on overflow. */
  private append(pcm: Int16Array, nowUs: number, events: EndpointEvent[]): boolean {
    if (this.buffer.length + pcm.length <= this.settings.maxCaptureSamples) {
      this.buffer.append(pcm);
      if (this.converter) this.converted.push(this.converter.process(pcm));
      return true;
    }
    this.stopConversion();
    this.discardPrefetch(nowUs, events);
    this.buffer.clear();
    this.preroll.clear();
    this.overflowed = true;
    this.lastSpeechAtUs = nowUs;
    this.speakingNow = false;
    events.push({ type: 'input_audio_too_long', atUs: nowUs });
    return false;
  }

  /** Ends the utterance: the whole buffer (trailing silence included on this transport) if long enough. */
  private finish(nowUs: number, events: EndpointEvent[]): void {
    const pcm = this.buffer.slice();
    const converter = this.converter;
    const convertedChunks = this.converted;
    this.stopConversion();
    const lastSpeechAtUs = this.lastSpeechAtUs;
    this.buffer.clear();
    this.speakingNow = false;
    this.prefetchMarkerUs = null;
    events.push({
      type: 'speech_stopped',
      atUs: nowUs,
      observedSilenceUs: nowUs - lastSpeechAtUs,
      noiseRms: this.gate.noiseRms,
    });
    if (pcm.length < MIN_SPEECH_SAMPLES) return;
    // Only a kept utterance gets its converted copy; a too-short one is dropped unconverted.
    const converted =
      converter && this.convertToHz !== null
        ? { pcm: concatPcm([...convertedChunks, converter.flush()]), sampleRateHz: this.convertToHz }
        : undefined;
    events.push({
      type: 'utterance',
      atUs: nowUs,
      pcm,
      lastSpeechAtUs,
      quietThresholdRms: this.gate.stopThreshold,
      ...(converted ? { converted } : {}),
    });
  }

  private discardPrefetch(nowUs: number, events: EndpointEvent[]): void {
    if (this.prefetchMarkerUs === null) return;
    this.prefetchMarkerUs = null;
    events.push({ type: 'prefetch_discarded', atUs: nowUs });
  }
}
