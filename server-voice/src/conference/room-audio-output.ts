import { AudioFrame, AudioSource } from '@livekit/rtc-node';
import { FRAME_INTERVAL_MS } from '../media/frame-clock.js';
import type { OutboundAudio } from '../media/paced-output.js';

/** The agent's published audio: 48 kHz mono, as LiveKit rooms carry it. */
export const ROOM_AUDIO_RATE_HZ = 48_000;
const FRAME_SAMPLES = (ROOM_AUDIO_RATE_HZ * FRAME_INTERVAL_MS) / 1000;
/** How far synthesis may run ahead of playout: the source's queue, as the direct transport's 500 ms. */
export const ROOM_AUDIO_QUEUE_MS = 500;

/**
 * A reply's speech into the room: 20 ms frames captured on the `hermes-voice` track's AudioSource. The
 * source's own queue is the playout backpressure (a capture waits while 500 ms are queued); `clear()` drops
 * what is queued and makes writers of the old epoch give up; `drained()` waits for playout.
 */
export class RoomAudioOutput implements OutboundAudio {
  readonly frameSamples = FRAME_SAMPLES;
  private generation = 0;
  private closed = false;

  constructor(readonly source: AudioSource = new AudioSource(ROOM_AUDIO_RATE_HZ, 1, ROOM_AUDIO_QUEUE_MS)) {}

  get epoch(): number {
    return this.generation;
  }

  get queuedFrames(): number {
    return Math.ceil(this.source.queuedDuration / FRAME_INTERVAL_MS);
  }

  async write(frame: Int16Array, epoch: number): Promise<boolean> {
    if (this.closed || epoch !== this.generation) return false;
    if (frame.length !== FRAME_SAMPLES) throw new RangeError(`frames are ${FRAME_SAMPLES} samples`);
    try {
      await this.source.captureFrame(new AudioFrame(frame, ROOM_AUDIO_RATE_HZ, 1, FRAME_SAMPLES));
    } catch {
      // The source closed under the writer (the room was left): the reply stops.
      return false;
    }
    return !this.closed && epoch === this.generation;
  }

  clear(): void {
    this.generation += 1;
    if (!this.closed) this.source.clearQueue();
  }

  drained(): Promise<void> {
    return this.closed ? Promise.resolve() : this.source.waitForPlayout();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.generation += 1;
    await this.source.close();
  }
}
