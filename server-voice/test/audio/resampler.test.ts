import { describe, expect, it } from 'vitest';
import { concatPcm, pcmRms } from '../../src/audio/pcm.js';
import { PcmFramer } from '../../src/audio/pcm-framer.js';
import { PcmResampler } from '../../src/audio/resampler.js';
import { FRAME_SAMPLES } from '../../src/audio/types.js';
import { pcmToBytes } from '../../src/audio/pcm.js';

function sine(rateHz: number, toneHz: number, samples: number, amplitude = 10_000): Int16Array {
  const pcm = new Int16Array(samples);
  for (let i = 0; i < samples; i++) pcm[i] = Math.round(amplitude * Math.sin((2 * Math.PI * toneHz * i) / rateHz));
  return pcm;
}

function resampleWhole(pcm: Int16Array, from: number, to: number): Int16Array {
  const resampler = new PcmResampler(from, to);
  return concatPcm([resampler.process(pcm), resampler.flush()]);
}

function resampleChunked(pcm: Int16Array, from: number, to: number, chunk: number): Int16Array {
  const resampler = new PcmResampler(from, to);
  const parts: Int16Array[] = [];
  for (let start = 0; start < pcm.length; start += chunk)
    parts.push(resampler.process(pcm.subarray(start, start + chunk)));
  parts.push(resampler.flush());
  return concatPcm(parts);
}

describe('PcmResampler', () => {
  it.each([
    [48_000, 16_000, 1000],
    [24_000, 48_000, 1000],
    [22_050, 48_000, 3000],
    [16_000, 48_000, 440],
  ])('%d → %d Hz keeps a %d Hz tone in place and at level, with ceil(n·out/in) samples', (from, to, tone) => {
    const out = resampleWhole(sine(from, tone, from), from, to);
    expect(out.length).toBe(to);
    // Aligned, not delayed: sample-by-sample against the ideal tone at the new rate (edges excluded).
    const ideal = sine(to, tone, to);
    let worst = 0;
    for (let i = 200; i < to - 200; i++) worst = Math.max(worst, Math.abs((out[i] as number) - (ideal[i] as number)));
    expect(worst).toBeLessThanOrEqual(3);
  });

  it('produces the same output whatever the chunking (137-sample chunks vs whole)', () => {
    const input = sine(22_050, 700, 22_050);
    expect(resampleChunked(input, 22_050, 48_000, 137)).toEqual(resampleWhole(input, 22_050, 48_000));
    const mic = sine(48_000, 300, 48_000);
    expect(resampleChunked(mic, 48_000, 16_000, 960)).toEqual(resampleWhole(mic, 48_000, 16_000));
  });

  it('removes content above the new Nyquist frequency when downsampling (no aliasing)', () => {
    const out = resampleWhole(sine(48_000, 9000, 48_000), 48_000, 16_000);
    expect(pcmRms(out.subarray(200, -200))).toBeLessThan(10); // −57 dB or better against 7071
  });

  it('passes audio through unchanged at equal rates and rejects absurd rates', () => {
    const input = sine(48_000, 500, 960);
    expect(resampleWhole(input, 48_000, 48_000)).toEqual(input);
    expect(() => new PcmResampler(0, 48_000)).toThrow(RangeError);
    expect(() => new PcmResampler(48_000, 44_100.5)).toThrow(RangeError);
  });
});

describe('PcmFramer', () => {
  it('turns a 24 kHz byte stream into identical 20 ms 48 kHz frames for any chunking, odd splits included', () => {
    const bytes = pcmToBytes(sine(24_000, 440, 24_000 + 333));
    const frame = (chunk: number): Int16Array[] => {
      const framer = new PcmFramer(24_000);
      const frames: Int16Array[] = [];
      for (let start = 0; start < bytes.length; start += chunk)
        frames.push(...framer.write(bytes.subarray(start, start + chunk)));
      frames.push(...framer.finish());
      return frames;
    };
    const whole = frame(bytes.length);
    expect(frame(137)).toEqual(whole);
    expect(frame(1)).toEqual(whole);
    expect(whole.every((f) => f.length === FRAME_SAMPLES)).toBe(true);
    // 48 666 samples at 48 kHz → 51 frames, the last one zero-padded.
    expect(whole.length).toBe(Math.ceil(48_666 / FRAME_SAMPLES));
    expect(
      whole
        .at(-1)
        ?.subarray(48_666 % FRAME_SAMPLES)
        .every((s) => s === 0),
    ).toBe(true);
  });

  it('refuses to finish in the middle of a sample', () => {
    const framer = new PcmFramer(24_000);
    framer.write(new Uint8Array(3));
    expect(() => framer.finish()).toThrow(/incomplete PCM16 sample/);
  });
});
