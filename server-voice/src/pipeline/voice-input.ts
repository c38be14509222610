import { DirectEndpointer } from '../audio/endpointer.js';
import type { EndpointEvent, EndpointSettings, VoiceDetector, VoiceDetectorFactory } from '../audio/types.js';

/**
 * The capture side of one call: decoded 48 kHz frames go through the detector (model scoring) and the direct
 * endpointer; its decisions go to `onEvents`. Frames, mute, unmute and track end are applied strictly in call
 * order: while a model is still scoring earlier frames, later operations wait their turn (a mute finishes the
 * utterance with every frame received before it). Without a model (`rms`) everything is decided at once, no
 * promise per frame. While the gateway speaks without barge-in frames are dropped (the reference pauses
 * capture during playout), and mute/unmute follow `hermes.input_audio.state`.
 */
export class VoiceInput {
  private detector: VoiceDetector;
  private readonly endpointer: DirectEndpointer;
  /** Operations waiting for a model score, and the promise that settles after the last of them. */
  private pending = 0;
  private chain: Promise<void> = Promise.resolve();
  private paused = false;
  private closed = false;

  constructor(
    private readonly factory: VoiceDetectorFactory,
    settings: EndpointSettings,
    private readonly nowUs: () => number,
    private readonly onEvents: (events: EndpointEvent[]) => void,
    /** Also deliver each utterance converted to this rate during capture (the speech-to-text upload rate). */
    convertToHz: number | null = null,
  ) {
    this.detector = factory.create();
    this.endpointer = new DirectEndpointer(this.detector.createGate(), settings, convertToHz);
  }

  get speaking(): boolean {
    return this.endpointer.speaking;
  }

  get muted(): boolean {
    return this.endpointer.muted;
  }

  /** Pauses capture (frames are dropped, not buffered) while the gateway speaks. */
  setPaused(paused: boolean): void {
    this.paused = paused;
  }

  push(pcm: Int16Array): void {
    if (this.closed || this.paused) return;
    const atUs = this.nowUs();
    this.run(() => {
      if (this.endpointer.muted) return [];
      const detector = this.detector;
      if (detector.backend === 'rms') return this.endpointer.push(pcm, atUs, null);
      return detector
        .score(pcm)
        .then((probability) =>
          this.closed || detector !== this.detector ? [] : this.endpointer.push(pcm, atUs, probability),
        );
    });
  }

  /** `hermes.input_audio.state` muted: finishes an active utterance. */
  mute(): void {
    const atUs = this.nowUs();
    this.run(() => this.endpointer.mute(atUs));
  }

  /** Unmute with a fresh detector and gate: detection recalibrates against the real microphone. */
  unmute(): void {
    this.run(() => {
      if (!this.endpointer.muted) return [];
      this.detector.close();
      this.detector = this.factory.create();
      this.endpointer.unmute(this.detector.createGate());
      return [];
    });
  }

  /**
   * `input_audio_buffer.commit`: an utterance in progress ends now, as if the speaker had paused; `onEmpty`
   * runs instead when nothing is being captured (decided after the frames still being scored).
   */
  commit(onEmpty: () => void): void {
    const atUs = this.nowUs();
    this.run(() => {
      if (this.endpointer.speaking) return this.endpointer.end(atUs);
      onEmpty();
      return [];
    });
  }

  /** `input_audio_buffer.clear`: what was captured is dropped, nothing is dispatched. */
  clear(): void {
    const atUs = this.nowUs();
    this.run(() => this.endpointer.discard(atUs));
  }

  /** The inbound track ended: an open utterance is finished. */
  end(): void {
    const atUs = this.nowUs();
    this.run(() => this.endpointer.end(atUs));
  }

  /** Resolves once every operation so far has been applied (tests; immediate without a model). */
  settled(): Promise<void> {
    return this.chain;
  }

  close(): void {
    this.closed = true;
    this.detector.close();
  }

  /** Applies `step` now when nothing waits for a score, else after what does. */
  private run(step: () => EndpointEvent[] | Promise<EndpointEvent[]>): void {
    if (this.pending === 0) {
      const result = step();
      if (Array.isArray(result)) this.emit(result);
      else this.track(result);
      return;
    }
    this.track(this.chain.then(step));
  }

  private track(result: Promise<EndpointEvent[]>): void {
    this.pending += 1;
    this.chain = result
      .then(
        (events) => this.emit(events),
        () => undefined,
      )
      .finally(() => {
        this.pending -= 1;
      });
  }

  private emit(events: EndpointEvent[]): void {
    if (events.length > 0 && !this.closed) this.onEvents(events);
  }
}
