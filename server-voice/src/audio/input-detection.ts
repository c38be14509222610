import { DirectEndpointer } from './endpointer.js';
import type { EndpointEvent, EndpointSettings, VoiceDetector, VoiceDetectorFactory } from './types.js';

/**
 * The IO edge of detection for one direct-transport input: scores each chunk with the input's detector
 * (Silero inference is asynchronous), then feeds the synchronous endpointer. Every operation is queued, so
 * chunks, mute changes and track end are applied strictly in call order even when callers do not await.
 */
export class InputAudioDetection {
  private detector: VoiceDetector;
  private readonly endpointer: DirectEndpointer;
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly factory: VoiceDetectorFactory,
    settings: EndpointSettings,
  ) {
    this.detector = factory.create();
    this.endpointer = new DirectEndpointer(this.detector.createGate(), settings);
  }

  get speaking(): boolean {
    return this.endpointer.speaking;
  }

  get muted(): boolean {
    return this.endpointer.muted;
  }

  /** The learned noise floor (RMS), for endpoint log lines. */
  get noiseRms(): number | null {
    return this.endpointer.noiseRms;
  }

  /** One received chunk of 48 kHz mono PCM16 that ended at `atUs`. */
  feed(pcm: Int16Array, atUs: number): Promise<EndpointEvent[]> {
    return this.enqueue(async () => {
      if (this.endpointer.muted) return [];
      const probability = await this.detector.score(pcm);
      return this.endpointer.push(pcm, atUs, probability);
    });
  }

  /** `hermes.input_audio.state`: muting finishes an active utterance; unmuting recalibrates with a fresh detector. */
  setMuted(muted: boolean, atUs: number): Promise<EndpointEvent[]> {
    return this.enqueue(async () => {
      if (muted) return this.endpointer.mute(atUs);
      if (!this.endpointer.muted) return [];
      this.detector.close();
      this.detector = this.factory.create();
      this.endpointer.unmute(this.detector.createGate());
      return [];
    });
  }

  /** The inbound track ended: an open utterance is finished. */
  end(atUs: number): Promise<EndpointEvent[]> {
    return this.enqueue(async () => this.endpointer.end(atUs));
  }

  /** Releases the detector (call close: nothing is transcribed). */
  close(): void {
    this.detector.close();
  }

  private enqueue(operation: () => Promise<EndpointEvent[]>): Promise<EndpointEvent[]> {
    const run = this.chain.then(operation);
    this.chain = run.catch(() => undefined);
    return run;
  }
}
