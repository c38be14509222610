import { SampleQueue, samplesToUs, usToSamples } from './pcm.js';
import {
  MIN_SPEECH_SAMPLES,
  PREROLL_SAMPLES,
  type EndpointEvent,
  type EndpointSettings,
  type SpeechGate,
} from './types.js';

/** How often the conference detector polls each participant's buffer. */
export const CONFERENCE_POLL_INTERVAL_US = 200_000;
/** Trailing silence kept at the end of a polled utterance (the rest of `silence_duration` is cut). */
const KEPT_TRAILING_SILENCE_US = 100_000;

/**
 * Endpointing for a polled transport (a LiveKit participant, AUDIO.md §5): audio is appended as it arrives
 * and `poll(nowUs)` classifies only the samples not yet classified (a stateful model never sees audio twice).
 * An utterance ends at the first poll `silenceDurationUs` after the last speech poll, and is cut so that only
 * 100 ms of trailing silence remain. `speech_stopped` is not emitted for a dispatched utterance: the
 * transport emits it when processing starts. Pure and synchronous.
 */
export class PolledEndpointer {
  private gate: SpeechGate;
  private readonly settings: EndpointSettings;
  private readonly buffer = new SampleQueue();
  /** Samples of `buffer` already classified. */
  private processed = 0;
  private speakingNow = false;
  private lastAudioAtUs = 0;
  /** Whether the last poll with new audio decided silence (silence is re-evaluated without new audio). */
  private lastDecisionSilent = false;
  private overflowed = false;
  private prefetchMarkerUs: number | null = null;

  constructor(gate: SpeechGate, settings: EndpointSettings) {
    this.gate = gate;
    this.settings = settings;
  }

  get speaking(): boolean {
    return this.speakingNow;
  }

  get noiseRms(): number | null {
    return this.gate.noiseRms;
  }

  /**
   * Samples not yet classified: what a model must score (once, in order) before the next `poll`. When that
   * poll completes calibration the whole buffer is judged with this score.
   */
  unclassified(): Int16Array {
    return this.buffer.slice(this.processed);
  }

  /** Appends received audio. Past the capture cap the utterance is discarded and the error reported. */
  append(pcm: Int16Array, atUs: number): EndpointEvent[] {
    if (this.overflowed) {
      // In recovery only the last second is kept, enough to judge when the speaker pauses.
      this.buffer.append(pcm);
      const before = this.buffer.length;
      this.buffer.keepLast(2 * PREROLL_SAMPLES);
      this.processed = Math.max(0, this.processed - (before - this.buffer.length));
      return [];
    }
    if (this.buffer.length + pcm.length <= this.settings.maxCaptureSamples) {
      this.buffer.append(pcm);
      return [];
    }
    this.buffer.clear();
    this.processed = 0;
    this.overflowed = true;
    this.speakingNow = false;
    this.lastAudioAtUs = atUs;
    const events: EndpointEvent[] = [];
    this.discardPrefetch(atUs, events);
    events.push({ type: 'input_audio_too_long', atUs });
    return events;
  }

  /** One detector pass at `nowUs`. `speechProbability` scores `unclassified()` when the gate needs a model. */
  poll(nowUs: number, speechProbability: number | null = null): EndpointEvent[] {
    const events: EndpointEvent[] = [];
    if (this.buffer.length === 0) return events;

    let fresh: Int16Array;
    if (!this.gate.calibrated) {
      const newAudio = this.buffer.slice(this.processed);
      this.processed = this.buffer.length;
      if (!this.gate.calibrate(newAudio)) return events;
      events.push({ type: 'calibrated', atUs: nowUs, noiseRms: this.gate.noiseRms ?? 0 });
      fresh = this.buffer.slice(); // classify the whole calibration buffer once
    } else {
      fresh = this.buffer.slice(this.processed);
      this.processed = this.buffer.length;
    }

    let speech: boolean;
    if (fresh.length > 0) {
      speech = this.gate.isSpeech(fresh, this.speakingNow, speechProbability);
      this.lastDecisionSilent = !speech;
    } else if (this.lastDecisionSilent) {
      speech = false;
    } else {
      return events;
    }

    if (this.overflowed) {
      if (speech) this.lastAudioAtUs = nowUs;
      else if (nowUs - this.lastAudioAtUs >= this.settings.silenceDurationUs) this.overflowed = false;
      return events;
    }

    if (speech) {
      this.discardPrefetch(nowUs, events);
      this.lastAudioAtUs = nowUs;
      if (!this.speakingNow) {
        this.speakingNow = true;
        events.push({ type: 'speech_started', atUs: nowUs, audioStartUs: nowUs - samplesToUs(this.buffer.length) });
      }
      return events;
    }

    if (!this.speakingNow) {
      // Bounded idle pre-roll for someone who has not spoken yet.
      this.keepLast(PREROLL_SAMPLES);
      return events;
    }

    const silentUs = nowUs - this.lastAudioAtUs;
    const prefetchUs = this.settings.asrPrefetchSilenceUs;
    if (prefetchUs > 0 && silentUs >= prefetchUs && this.prefetchMarkerUs !== this.lastAudioAtUs) {
      this.prefetchMarkerUs = this.lastAudioAtUs;
      events.push({ type: 'prefetch', atUs: nowUs, pcm: this.buffer.slice(), markerUs: this.lastAudioAtUs });
    }
    if (silentUs >= this.settings.silenceDurationUs) {
      const cut = usToSamples(Math.max(0, this.settings.silenceDurationUs - KEPT_TRAILING_SILENCE_US));
      this.flush(nowUs, this.buffer.length - cut, events);
    }
    return events;
  }

  /**
   * Dispatches the whole buffer now (`conference.control end-of-turn`, track unsubscribed, participant left
   * while speaking).
   */
  flushNow(nowUs: number): EndpointEvent[] {
    const events: EndpointEvent[] = [];
    if (this.speakingNow || this.buffer.length > 0) this.flush(nowUs, this.buffer.length, events);
    return events;
  }

  /** Mutes: finishes an active utterance (or drops the buffer); `unmute` recalibrates. */
  mute(atUs: number): EndpointEvent[] {
    const events: EndpointEvent[] = [];
    if (this.speakingNow) this.flush(atUs, this.buffer.length, events);
    else this.discardPrefetch(atUs, events);
    this.reset();
    this.overflowed = false;
    return events;
  }

  unmute(freshGate: SpeechGate): void {
    this.gate = freshGate;
    this.reset();
    this.overflowed = false;
  }

  private keepLast(samples: number): void {
    const before = this.buffer.length;
    this.buffer.keepLast(samples);
    this.processed = Math.max(0, this.processed - (before - this.buffer.length));
  }

  private flush(nowUs: number, speechEnd: number, events: EndpointEvent[]): void {
    const wasSpeaking = this.speakingNow;
    const end = Math.max(0, Math.min(speechEnd, this.buffer.length));
    if (end < MIN_SPEECH_SAMPLES) {
      this.discardPrefetch(nowUs, events);
      this.reset();
      if (wasSpeaking)
        events.push({
          type: 'speech_stopped',
          atUs: nowUs,
          observedSilenceUs: nowUs - this.lastAudioAtUs,
          noiseRms: this.gate.noiseRms,
        });
      return;
    }
    const pcm = this.buffer.slice(0, end);
    const lastSpeechAtUs = this.lastAudioAtUs;
    this.reset();
    events.push({ type: 'utterance', atUs: nowUs, pcm, lastSpeechAtUs, quietThresholdRms: this.gate.stopThreshold });
  }

  private reset(): void {
    this.buffer.clear();
    this.processed = 0;
    this.speakingNow = false;
    this.lastDecisionSilent = false;
    this.prefetchMarkerUs = null;
  }

  private discardPrefetch(nowUs: number, events: EndpointEvent[]): void {
    if (this.prefetchMarkerUs === null) return;
    this.prefetchMarkerUs = null;
    events.push({ type: 'prefetch_discarded', atUs: nowUs });
  }
}
