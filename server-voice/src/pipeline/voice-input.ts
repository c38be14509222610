import { DirectEndpointer } from '../audio/endpointer.js';
import type { EndpointEvent, EndpointSettings, VoiceDetector, VoiceDetectorFactory } from '../audio/types.js';

/**
 * The capture side of one call: decoded 48 kHz frames go through the detector (model scoring, in arrival
 * order) and the direct endpointer; its decisions go to `onEvents`. While the gateway speaks without barge-in
 * frames are dropped (the reference pauses capture during playout), and mute/unmute follow
 * `hermes.input_audio.state`.
 */
export class VoiceInput {
  private detector: VoiceDetector;
  private readonly endpointer: DirectEndpointer;
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

  /** Pauses capture (frames are dropped, not buffered) while the gateway speaks. */
  setPaused(paused: boolean): void {
    this.paused = paused;
  }

  push(pcm: Int16Array): void {
    if (this.closed || this.paused || this.endpointer.muted) return;
    const atUs = this.nowUs();
    if (this.detector.backend === 'rms') {
      // No model: decide synchronously, no promise per frame.
      this.emit(this.endpointer.push(pcm, atUs, null));
      return;
    }
    const detector = this.detector;
    this.chain = this.chain
      .then(async () => {
        const probability = await detector.score(pcm);
        if (!this.closed && detector === this.detector) this.emit(this.endpointer.push(pcm, atUs, probability));
      })
      .catch(() => undefined);
  }

  mute(): void {
    this.emit(this.endpointer.mute(this.nowUs()));
  }

  /** Unmute with a fresh detector and gate: detection recalibrates against the real microphone. */
  unmute(): void {
    if (!this.endpointer.muted) return;
    this.detector.close();
    this.detector = this.factory.create();
    this.endpointer.unmute(this.detector.createGate());
  }

  /** The inbound track ended. */
  end(): void {
    this.emit(this.endpointer.end(this.nowUs()));
  }

  close(): void {
    this.closed = true;
    this.detector.close();
  }

  private emit(events: EndpointEvent[]): void {
    if (events.length > 0 && !this.closed) this.onEvents(events);
  }
}
