import { describe, expect, it } from 'vitest';
import { measureTtsOnset } from '../../src/providers/tts-onset-probe.js';
import type { TextToSpeech } from '../../src/providers/types.js';

/** 24 kHz speech stand-in: `silentMs` of digital silence, then 500 ms of a loud tone, in 10 ms chunks. */
function delayedTone(silentMs: number): TextToSpeech {
  return {
    label: 'test',
    sampleRateHz: 24_000,
    async *synthesize() {
      const pcm = new Int16Array(24 * (silentMs + 500));
      for (let i = 24 * silentMs; i < pcm.length; i++)
        pcm[i] = Math.round(6000 * Math.sin((2 * Math.PI * 300 * i) / 24_000));
      for (let start = 0; start < pcm.length; start += 240) yield pcm.slice(start, start + 240);
    },
  };
}

describe('measureTtsOnset', () => {
  it('reports the onset and what leading-silence trimming would remove', async () => {
    const measured = await measureTtsOnset(delayedTone(300), 'hello');
    expect(measured.audioMs).toBe(800);
    expect(measured.onsetMs).toBeGreaterThan(295);
    expect(measured.onsetMs).toBeLessThan(305);
    // 300 ms of silence = 15 frames, but resampling to 48 kHz rings a few samples ahead of the tone, so the
    // onset is frame 14; the trimmer keeps 4 frames (80 ms) before it and drops 10.
    expect(measured.trimmableMs).toBe(200);
    expect(measured.firstChunkMs).toBeLessThanOrEqual(measured.synthesisMs);
  });

  it('reports no onset and at most one second trimmed for silence', async () => {
    const silent: TextToSpeech = {
      label: 'silent',
      sampleRateHz: 48_000,
      async *synthesize() {
        yield new Int16Array(48_000 * 2);
      },
    };
    const measured = await measureTtsOnset(silent, 'x');
    expect(measured.onsetMs).toBeNull();
    expect(measured.trimmableMs).toBe(920);
  });
});
