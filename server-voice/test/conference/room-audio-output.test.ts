import { describe, expect, it } from 'vitest';
import { ROOM_AUDIO_QUEUE_MS, RoomAudioOutput } from '../../src/conference/room-audio-output.js';

const FRAME_MS = 20;

describe('RoomAudioOutput: reply speech into the hermes-voice AudioSource', () => {
  it('holds at most the source queue ahead of playout (writers wait), and drains', async () => {
    const output = new RoomAudioOutput();
    try {
      const frame = new Int16Array(output.frameSamples).fill(1000);
      let most = 0;
      const started = performance.now();
      for (let i = 0; i < 60; i += 1) {
        expect(await output.write(frame, output.epoch)).toBe(true);
        most = Math.max(most, output.queuedFrames);
      }
      // 1.2 s of audio could only be written as fast as the queue played out what exceeded it.
      expect(performance.now() - started).toBeGreaterThan(60 * FRAME_MS - ROOM_AUDIO_QUEUE_MS - 200);
      expect(most).toBeLessThanOrEqual(ROOM_AUDIO_QUEUE_MS / FRAME_MS + 1);
      await output.drained();
      expect(output.queuedFrames).toBe(0);
    } finally {
      await output.close();
    }
  });

  it('clear() drops queued audio and makes a writer of the old epoch give up', async () => {
    const output = new RoomAudioOutput();
    try {
      const frame = new Int16Array(output.frameSamples);
      const epoch = output.epoch;
      expect(await output.write(frame, epoch)).toBe(true);
      output.clear();
      expect(output.queuedFrames).toBe(0);
      expect(await output.write(frame, epoch)).toBe(false);
      expect(await output.write(frame, output.epoch)).toBe(true);
      await output.close();
      expect(await output.write(frame, output.epoch)).toBe(false);
    } finally {
      await output.close();
    }
  });
});
