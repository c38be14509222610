import { describe, expect, it } from 'vitest';
import { decodeWav, encodeWav } from '../../src/audio/wav.js';

describe('WAV', () => {
  it('round-trips PCM16 mono', () => {
    const pcm = Int16Array.from([0, 1, -1, 32767, -32768, 1234]);
    expect(decodeWav(encodeWav(pcm, 16_000))).toEqual({ pcm, sampleRateHz: 16_000 });
  });

  it('skips extra chunks and reads a streaming writer’s open-ended data size', () => {
    const wav = encodeWav(Int16Array.from([5, 6, 7]), 22_050);
    const list = Buffer.concat([Buffer.from('LIST'), Buffer.from([4, 0, 0, 0]), Buffer.from('INFO')]);
    const withList = Buffer.concat([wav.subarray(0, 36), list, wav.subarray(36)]);
    withList.writeUInt32LE(0xffffffff, 36 + list.length + 4);
    expect(decodeWav(withList).pcm).toEqual(Int16Array.from([5, 6, 7]));
  });

  it('refuses other formats', () => {
    const stereo = encodeWav(new Int16Array(4), 48_000);
    stereo.writeUInt16LE(2, 22);
    expect(() => decodeWav(stereo)).toThrow(/PCM16 mono/);
    expect(() => decodeWav(Buffer.from('not a wav file'))).toThrow(/RIFF/);
  });
});
