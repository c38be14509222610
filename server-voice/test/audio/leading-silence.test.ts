import { describe, expect, it } from 'vitest';
import { LeadingSilenceTrimmer, pcmOnsetSample } from '../../src/audio/leading-silence.js';
import { FRAME_SAMPLES } from '../../src/audio/types.js';

const quiet = (): Int16Array => new Int16Array(FRAME_SAMPLES).fill(16);
const loud = (): Int16Array => new Int16Array(FRAME_SAMPLES).fill(-17);

describe('LeadingSilenceTrimmer', () => {
  it('treats a peak of 16 as quiet and −17 as the onset (peak, not RMS)', () => {
    const trimmer = new LeadingSilenceTrimmer();
    const frames = [quiet(), quiet(), quiet(), quiet(), quiet(), quiet(), loud()];
    const out = frames.flatMap((frame) => trimmer.push(frame));
    expect(out).toEqual(frames.slice(2));
    expect(trimmer.trimmedFrames).toBe(2);
  });

  it('passes later quiet frames untouched once the onset is found', () => {
    const trimmer = new LeadingSilenceTrimmer();
    trimmer.push(loud());
    const pause = quiet();
    expect(trimmer.push(pause)).toEqual([pause]);
  });

  it('rejects frames that are not 20 ms at 48 kHz', () => {
    expect(() => new LeadingSilenceTrimmer().push(new Int16Array(480))).toThrow(RangeError);
  });

  it('drops the retained frames when the reply is discarded', () => {
    const trimmer = new LeadingSilenceTrimmer();
    trimmer.push(quiet());
    trimmer.discard();
    expect(trimmer.finish()).toEqual([]);
  });
});

describe('pcmOnsetSample', () => {
  it('finds the first sample above 40 within the first second', () => {
    const pcm = new Int16Array(60_000);
    pcm[5000] = 40;
    pcm[7000] = -41;
    expect(pcmOnsetSample(pcm)).toBe(7000);
    const late = new Int16Array(60_000);
    late[50_000] = 1000;
    expect(pcmOnsetSample(late)).toBeNull();
  });
});
