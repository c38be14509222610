import type { EndpointEvent, EndpointSettings, VoiceDetectorFactory } from '../../src/audio/types.js';
import { FRAME_SAMPLES } from '../../src/audio/types.js';
import { VoiceInput } from '../../src/pipeline/voice-input.js';

/**
 * A call's capture path (`VoiceInput`) on an integer-microsecond test clock: `feed` pushes 20 ms frames,
 * advancing the clock 20 ms per frame, and returns the endpoint events they caused once all were applied.
 */
export class DetectionHarness {
  nowUs = 0;
  readonly input: VoiceInput;
  private readonly collected: EndpointEvent[] = [];

  constructor(factory: VoiceDetectorFactory, settings: EndpointSettings) {
    this.input = new VoiceInput(
      factory,
      settings,
      () => this.nowUs,
      (events) => this.collected.push(...events),
    );
  }

  async feed(pcm: Int16Array): Promise<EndpointEvent[]> {
    for (let start = 0; start < pcm.length; start += FRAME_SAMPLES) {
      this.nowUs += 20_000;
      this.input.push(pcm.subarray(start, start + FRAME_SAMPLES));
    }
    return this.take();
  }

  /** The events since the last call, once every operation so far has been applied. */
  async take(): Promise<EndpointEvent[]> {
    await this.input.settled();
    return this.collected.splice(0);
  }
}
