import { describe, expect, it } from 'vitest';
import { AdaptiveRmsGate } from '../../src/audio/energy-gate.js';
import { FRAME_SAMPLES } from '../../src/audio/types.js';
import { noisePcm, silencePcm } from './speech-fixtures.js';

function levelFrames(level: number, frames: number): Int16Array {
  const pcm = new Int16Array(frames * FRAME_SAMPLES);
  for (let i = 0; i < pcm.length; i++) pcm[i] = i % 2 === 0 ? level : -level;
  return pcm;
}

describe('AdaptiveRmsGate', () => {
  it('calibrates on 400 ms of audio whatever the packet size, consuming only what it needs', () => {
    const audio = levelFrames(120, 20);
    const gate = new AdaptiveRmsGate();
    // Odd packet sizes that split windows: 7 packets cover exactly 400 ms.
    const sizes = [1000, 3333, 2, 5000, 960 * 3, 4000];
    let offset = 0;
    for (const size of sizes) {
      expect(gate.calibrate(audio.subarray(offset, offset + size))).toBe(false);
      offset += size;
    }
    expect(gate.calibrate(audio.subarray(offset))).toBe(true);
    expect(gate.noiseRms).toBe(120);
  });

  it('is not calibrated by 20 short packets: calibration counts audio, not packets', () => {
    const gate = new AdaptiveRmsGate();
    for (let i = 0; i < 20; i++) gate.calibrate(levelFrames(80, 1).subarray(0, 480));
    expect(gate.calibrated).toBe(false);
    gate.calibrate(levelFrames(80, 10));
    expect(gate.calibrated).toBe(true);
  });

  it('calibrates digital silence to 1, so the 300/220 minimum thresholds apply', () => {
    const gate = new AdaptiveRmsGate();
    expect(gate.calibrate(silencePcm(400))).toBe(true);
    expect(gate.noiseRms).toBe(1);
    expect([gate.startThreshold, gate.stopThreshold]).toEqual([300, 220]);
  });

  it('takes the quieter half: speech in the first 400 ms does not set the floor', () => {
    const gate = new AdaptiveRmsGate();
    gate.calibrate(levelFrames(150, 12));
    gate.calibrate(levelFrames(900, 8));
    expect(gate.noiseRms).toBe(150);
  });

  it('follows a slow idle ramp 150→700 without reporting speech, and still hears 2200', () => {
    const gate = new AdaptiveRmsGate({ initialNoiseRms: 150 });
    const decisions: boolean[] = [];
    for (let i = 0; i < 1000; i++) decisions.push(gate.classifyRms(150 + (550 * i) / 999, false, 0.02));
    expect(decisions.some(Boolean)).toBe(false);
    expect(gate.noiseRms).toBeGreaterThan(600);
    expect(gate.noiseRms).toBeLessThan(700);
    expect(gate.classifyRms(2200, false, 0.02)).toBe(true);
  });

  it('adapts by audio time: ten 20 ms observations equal one 200 ms observation', () => {
    const byFrames = new AdaptiveRmsGate({ initialNoiseRms: 100 });
    const byBatch = new AdaptiveRmsGate({ initialNoiseRms: 100 });
    for (let i = 0; i < 10; i++) byFrames.classifyRms(200, false, 0.02);
    byBatch.classifyRms(200, false, 0.2);
    expect(byFrames.noiseRms).toBeCloseTo(byBatch.noiseRms ?? 0, 9);
  });

  it('rises slowly and falls fast', () => {
    const rising = new AdaptiveRmsGate({ initialNoiseRms: 100 });
    const falling = new AdaptiveRmsGate({ initialNoiseRms: 200 });
    rising.classifyRms(200, false, 0.5);
    falling.classifyRms(100, false, 0.5);
    expect((rising.noiseRms ?? 0) - 100).toBeCloseTo(100 * (1 - Math.exp(-0.25)), 9);
    expect(200 - (falling.noiseRms ?? 0)).toBeCloseTo(100 * (1 - Math.exp(-1)), 9);
  });

  it('does not learn from near-threshold quiet phonemes while speaking', () => {
    const gate = new AdaptiveRmsGate({ initialNoiseRms: 150 });
    // 200 > 150 + max(30, 22.5) but below the stop threshold 225: silence, yet not learned.
    expect(gate.classifyRms(200, true, 0.02)).toBe(false);
    expect(gate.noiseRms).toBe(150);
    // The same level while idle is learned.
    gate.classifyRms(200, false, 0.02);
    expect(gate.noiseRms).toBeGreaterThan(150);
  });

  it('uses the stop threshold while speaking (hysteresis)', () => {
    const gate = new AdaptiveRmsGate({ initialNoiseRms: 50 });
    expect(gate.classifyRms(250, false, 0.02)).toBe(false);
    expect(gate.classifyRms(250, true, 0.02)).toBe(true);
  });

  it('finds a 40 ms word inside a 200 ms batch instead of averaging it away', () => {
    const batch = new Int16Array(10 * FRAME_SAMPLES);
    batch.set(levelFrames(700, 2), 4 * FRAME_SAMPLES);
    const gate = new AdaptiveRmsGate({ initialNoiseRms: 50 });
    // The batch RMS is ~313, but per 20 ms window the word is clearly above 300 …
    expect(gate.isSpeech(batch, false)).toBe(true);
    // … while steady noise of the same batch RMS in every window is not speech for a calibrated floor.
    const steady = new AdaptiveRmsGate({ initialNoiseRms: 200 });
    expect(steady.isSpeech(noisePcm(200, 250), false)).toBe(false);
  });

  it('does not learn before calibration', () => {
    const gate = new AdaptiveRmsGate();
    expect(gate.classifyRms(100, false, 0.02)).toBe(false);
    expect(gate.noiseRms).toBeNull();
    expect(gate.classifyRms(301, false, 0.02)).toBe(true);
  });
});
