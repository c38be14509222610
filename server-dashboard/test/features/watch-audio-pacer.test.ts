/**
 * Grok's reply audio paced to the Watch (the seed): real time plus a small lead, on the host's clock
 * and timers (moved by hand here), with what's queued dropped when the user speaks over it.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { AudioPacer } from '../../src/features/watch-audio/audio-pacer.js';
import { ManualTimers } from '../../src/kernel/timers.js';

/** 24 kHz PCM16: 48 bytes per millisecond. */
const BYTES_PER_MS = 48;

function pacer() {
  const clock = new ManualClock();
  const timers = new ManualTimers();
  const released: number[] = [];
  const audio = new AudioPacer({
    sampleRateHz: 24_000,
    leadMs: 240,
    chunkMs: 40,
    clock,
    timers,
    release: (pcm) => released.push(pcm.length / BYTES_PER_MS),
  });
  const advance = (ms: number) => {
    clock.advance(ms);
    timers.advance(ms);
  };
  return { audio, released, advance, timers };
}

describe('AudioPacer', () => {
  it('releases a burst up to the lead at once, then 40 ms chunks as real time passes', () => {
    const { audio, released, advance } = pacer();
    audio.push(Buffer.alloc(1000 * BYTES_PER_MS)); // a second of reply, arriving all at once
    expect(released).toEqual([40, 40, 40, 40, 40, 40]);
    // The lead is kept between 200 and 240 ms: a chunk each time the played audio falls under it.
    advance(1);
    expect(released).toHaveLength(7);
    advance(39);
    expect(released).toHaveLength(7);
    advance(1);
    expect(released).toHaveLength(8);
    for (let step = 0; step < 10; step += 1) advance(40);
    expect(released).toHaveLength(18);
    for (let step = 0; step < 100; step += 1) advance(40);
    expect(released.reduce((sum, ms) => sum + ms, 0)).toBe(1000);
  });

  it('drops what is queued when flushed (the user spoke over the reply), and starts afresh after', () => {
    const { audio, released, advance, timers } = pacer();
    audio.push(Buffer.alloc(1000 * BYTES_PER_MS));
    expect(released).toHaveLength(6);
    audio.flush();
    expect(audio.queuedBytes).toBe(0);
    expect(timers.waiting).toBe(0);
    advance(5_000);
    expect(released).toHaveLength(6);
    audio.push(Buffer.alloc(80 * BYTES_PER_MS));
    expect(released).toEqual([40, 40, 40, 40, 40, 40, 40, 40]);
  });

  it('never splits a sample across chunks', () => {
    const { audio, released } = pacer();
    audio.push(Buffer.alloc(2 * 1001));
    expect(released.map((ms) => (ms * BYTES_PER_MS) % 2)).toEqual(released.map(() => 0));
  });
});
