import { describe, expect, it } from 'vitest';
import { ManualFrameClock } from '../../src/media/frame-clock.js';
import { OpusDecoder, OpusEncoder, outboundRateFor } from '../../src/media/opus-codec.js';
import { PacedOutput } from '../../src/media/paced-output.js';
import { ReplySpeaker } from '../../src/pipeline/reply-speaker.js';
import type { TextToSpeech } from '../../src/providers/types.js';

/** A 24 kHz provider whose audio is a ramp, streamed in odd-sized chunks. */
function rampSpeech(samples: number): TextToSpeech {
  return {
    label: 'ramp',
    sampleRateHz: 24_000,
    async *synthesize() {
      const pcm = Int16Array.from({ length: samples }, (_, i) => 100 + (i % 3000));
      for (let offset = 0; offset < pcm.length; offset += 701) yield pcm.slice(offset, offset + 701);
    },
  };
}

async function speak(frameSamples: number, trimLeadingSilence: boolean): Promise<Int16Array[]> {
  const clock = new ManualFrameClock();
  const frames: Int16Array[] = [];
  const output = new PacedOutput(
    clock,
    (frame, info) => {
      if (!info.silent) frames.push(frame);
    },
    frameSamples,
  );
  output.start();
  const speaker = new ReplySpeaker({
    tts: rampSpeech(4800),
    output,
    trimLeadingSilence,
    onFirstAudio: () => undefined,
  });
  speaker.say('hello');
  const done = speaker.finish();
  for (let i = 0; i < 100; i += 1) {
    clock.advance(20);
    await new Promise((resolve) => setImmediate(resolve));
  }
  await done;
  return frames;
}

describe('outbound speech at the provider rate', () => {
  it('encodes at the provider rate when libopus takes it, else at 48 kHz', () => {
    expect(outboundRateFor(24_000)).toBe(24_000);
    expect(outboundRateFor(16_000)).toBe(16_000);
    expect(outboundRateFor(48_000)).toBe(48_000);
    expect(outboundRateFor(22_050)).toBe(48_000);
    expect(() => new OpusEncoder({ sampleRateHz: 22_050 })).toThrow(RangeError);
  });

  it("frames a 24 kHz provider's audio untouched when the output runs at 24 kHz (with and without trimming)", async () => {
    for (const trim of [false, true]) {
      const frames = await speak(480, trim);
      expect(frames).toHaveLength(10);
      expect(frames.every((frame) => frame.length === 480)).toBe(true);
      const joined = Int16Array.from(frames.flatMap((frame) => [...frame]));
      expect(joined.every((sample, i) => sample === 100 + (i % 3000))).toBe(true);
    }
  });

  it('resamples to 48 kHz frames for a 48 kHz output', async () => {
    const frames = await speak(960, false);
    expect(frames).toHaveLength(10);
    expect(frames.every((frame) => frame.length === 960)).toBe(true);
  });

  it('a 24 kHz encoder makes standard 20 ms Opus packets that decode to 960 samples at 48 kHz', () => {
    const encoder = new OpusEncoder({ sampleRateHz: 24_000 });
    const decoder = new OpusDecoder();
    const frame = Int16Array.from({ length: 480 }, (_, i) =>
      Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 24_000)),
    );
    let decoded: Int16Array = new Int16Array(0);
    for (let n = 0; n < 5; n += 1) decoded = decoder.decode(encoder.encode(frame));
    expect(decoded.length).toBe(960);
    expect(decoded.reduce((max, s) => Math.max(max, Math.abs(s)), 0)).toBeGreaterThan(4000);
    expect(() => encoder.encode(new Int16Array(960))).toThrow(RangeError);
  });
});
