import { describe, expect, it } from 'vitest';
import { EarlyTranscription, prefetchReusable } from '../../src/audio/prefetch.js';
import { concatPcm } from '../../src/audio/pcm.js';
import { FRAME_SAMPLES } from '../../src/audio/types.js';
import { ScriptedSpeechToText } from '../../src/providers/scripted.js';

const level = (value: number, frames: number): Int16Array => {
  const pcm = new Int16Array(frames * FRAME_SAMPLES);
  for (let i = 0; i < pcm.length; i++) pcm[i] = i % 2 === 0 ? value : -value;
  return pcm;
};

describe('prefetchReusable', () => {
  const snapshot = concatPcm([level(800, 10), level(50, 15)]);

  it('accepts a final that only adds quiet audio', () => {
    expect(prefetchReusable(snapshot, concatPcm([snapshot, level(60, 20)]), 220)).toBe(true);
  });

  it('accepts a final trimmed shorter when the removed tail was quiet', () => {
    expect(prefetchReusable(snapshot, snapshot.subarray(0, 12 * FRAME_SAMPLES), 220)).toBe(true);
  });

  it('rejects a final whose added audio has a window above the quiet threshold', () => {
    expect(prefetchReusable(snapshot, concatPcm([snapshot, level(50, 5), level(300, 1)]), 220)).toBe(false);
  });

  it('rejects a final that differs inside the shared prefix', () => {
    const changed = concatPcm([snapshot, level(50, 5)]);
    changed[100] = 1234;
    expect(prefetchReusable(snapshot, changed, 220)).toBe(false);
  });
});

describe('EarlyTranscription', () => {
  const snapshot = concatPcm([level(800, 30), level(50, 15)]);
  const final = concatPcm([snapshot, level(50, 20)]);

  it('reuses a matching non-empty early transcript without a second request', async () => {
    const stt = new ScriptedSpeechToText(['early words', 'late words']);
    const early = new EarlyTranscription(stt);
    expect(early.start(snapshot, 600_000)).toBe(true);
    expect(await early.transcribeFinal(final, 600_000, 220)).toEqual({ text: 'early words', reusedPrefetch: true });
    expect(stt.calls).toHaveLength(1);
  });

  it('falls back to a normal transcription for another marker, a loud tail, an empty or a failed early result', async () => {
    const markerStt = new ScriptedSpeechToText(['early', 'final']);
    const byMarker = new EarlyTranscription(markerStt);
    byMarker.start(snapshot, 1);
    expect(await byMarker.transcribeFinal(final, 2, 220)).toEqual({ text: 'final', reusedPrefetch: false });

    const loudStt = new ScriptedSpeechToText(['early', 'final']);
    const byLoudTail = new EarlyTranscription(loudStt);
    byLoudTail.start(snapshot, 1);
    expect(await byLoudTail.transcribeFinal(concatPcm([snapshot, level(900, 3)]), 1, 220)).toEqual({
      text: 'final',
      reusedPrefetch: false,
    });

    const emptyStt = new ScriptedSpeechToText(['  ', 'final']);
    const byEmpty = new EarlyTranscription(emptyStt);
    byEmpty.start(snapshot, 1);
    expect(await byEmpty.transcribeFinal(final, 1, 220)).toEqual({ text: 'final', reusedPrefetch: false });

    const failStt = new ScriptedSpeechToText([new Error('upstream down'), 'final']);
    const byFailure = new EarlyTranscription(failStt);
    byFailure.start(snapshot, 1);
    expect(await byFailure.transcribeFinal(final, 1, 220)).toEqual({ text: 'final', reusedPrefetch: false });
  });

  it('refuses a second start while one runs or for a marker already started, and ignores a discarded candidate', async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const stt = new ScriptedSpeechToText([{ text: 'slow early', after: gate }, 'final']);
    const early = new EarlyTranscription(stt);
    expect(early.start(snapshot, 1)).toBe(true);
    expect(early.start(snapshot, 2)).toBe(false); // one in flight per input
    early.discard();
    release();
    await gate;
    await new Promise((resolve) => setImmediate(resolve));
    expect(early.start(snapshot, 1)).toBe(false); // same marker already started
    expect(await early.transcribeFinal(final, 1, 220)).toEqual({ text: 'final', reusedPrefetch: false });
  });
});
