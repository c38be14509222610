import { describe, expect, it } from 'vitest';
import { DirectEndpointer } from '../../src/audio/endpointer.js';
import { AdaptiveRmsGate } from '../../src/audio/energy-gate.js';
import { concatPcm } from '../../src/audio/pcm.js';
import { PcmResampler } from '../../src/audio/resampler.js';
import {
  FRAME_SAMPLES,
  MAX_CAPTURE_SAMPLES,
  type EndpointEvent,
  type EndpointSettings,
} from '../../src/audio/types.js';

const frame = (level: number): Int16Array => {
  const pcm = new Int16Array(FRAME_SAMPLES);
  for (let i = 0; i < pcm.length; i++) pcm[i] = i % 2 === 0 ? level : -level;
  return pcm;
};

const settings = (overrides: Partial<EndpointSettings> = {}): EndpointSettings => ({
  silenceDurationUs: 700_000,
  asrPrefetchSilenceUs: 0,
  maxCaptureSamples: MAX_CAPTURE_SAMPLES,
  ...overrides,
});

/** Drives an endpointer with 20 ms frames on an integer-microsecond clock. */
class Driver {
  nowUs = 0;
  readonly events: EndpointEvent[] = [];
  constructor(readonly endpointer: DirectEndpointer) {}
  feed(level: number, frames: number): EndpointEvent[] {
    const produced: EndpointEvent[] = [];
    for (let i = 0; i < frames; i++) {
      this.nowUs += 20_000;
      produced.push(...this.endpointer.push(frame(level), this.nowUs));
    }
    this.events.push(...produced);
    return produced;
  }
  types(events: EndpointEvent[] = this.events): string[] {
    return events.map((event) => event.type);
  }
}

const calibratedDriver = (overrides: Partial<EndpointSettings> = {}): Driver =>
  new Driver(new DirectEndpointer(new AdaptiveRmsGate({ initialNoiseRms: 50 }), settings(overrides)));

describe('DirectEndpointer', () => {
  it('converts the utterance to the upload rate while it is captured, exactly as a one-piece conversion', () => {
    // Calibration from scratch (so speech replays from the calibration buffer), pre-roll, speech, pause.
    const endpointer = new DirectEndpointer(new AdaptiveRmsGate(), settings({ silenceDurationUs: 400_000 }), 16_000);
    const events: EndpointEvent[] = [];
    let sample = 0;
    const tone = (level: number): Int16Array => {
      const pcm = new Int16Array(FRAME_SAMPLES);
      for (let i = 0; i < pcm.length; i++, sample++)
        pcm[i] = Math.round(level * Math.sin((2 * Math.PI * 310 * sample) / 48_000));
      return pcm;
    };
    let nowUs = 0;
    for (const [level, frames] of [
      [60, 10],
      [3000, 20],
      [60, 30],
      [4000, 40],
      [60, 40],
    ] as const)
      for (let i = 0; i < frames; i++) events.push(...endpointer.push(tone(level), (nowUs += 20_000)));
    const utterances = events.filter((event) => event.type === 'utterance');
    expect(utterances.length).toBeGreaterThan(0);
    for (const utterance of utterances) {
      if (utterance.type !== 'utterance') continue;
      const whole = new PcmResampler(48_000, 16_000);
      const expected = concatPcm([whole.process(utterance.pcm), whole.flush()]);
      expect(utterance.converted?.sampleRateHz).toBe(16_000);
      expect(utterance.converted?.pcm).toEqual(expected);
    }
    // Without a conversion rate nothing extra is delivered.
    const plain = calibratedDriver();
    plain.feed(50, 30);
    plain.feed(800, 20);
    const [ended] = plain.feed(50, 40).filter((event) => event.type === 'utterance');
    expect(ended && 'converted' in ended).toBe(false);
  });

  it('reports where the utterance audio starts: the beginning of the 500 ms pre-roll', () => {
    const driver = calibratedDriver();
    driver.feed(50, 40);
    const [started] = driver.feed(800, 1);
    expect(started).toEqual({ type: 'speech_started', atUs: 820_000, audioStartUs: 820_000 - 520_000 });
  });

  it('speech_stopped carries the observed silence since the last speech decision and the learned noise RMS', () => {
    const driver = calibratedDriver();
    driver.feed(800, 30); // speech until 600 ms
    const stopped = driver.feed(50, 40).find((event) => event.type === 'speech_stopped');
    // 35 quiet frames reach the 700 ms target at 1 300 ms; the gate learned the 50-level room.
    expect(stopped).toEqual({ type: 'speech_stopped', atUs: 1_300_000, observedSilenceUs: 700_000, noiseRms: 50 });
    // A mute ends the next utterance early: the silence it reports is what was actually observed.
    driver.feed(800, 30);
    driver.feed(50, 5);
    const [muted] = driver.endpointer.mute(driver.nowUs);
    expect(muted).toMatchObject({ type: 'speech_stopped', observedSilenceUs: 100_000 });
  });

  it('asks for one speculative transcription per pause, at asr_prefetch_silence', () => {
    const driver = calibratedDriver({ asrPrefetchSilenceUs: 300_000 });
    driver.feed(800, 10); // speech until 200 ms
    const pause = driver.feed(50, 20);
    const prefetches = pause.filter((event) => event.type === 'prefetch');
    expect(prefetches).toHaveLength(1);
    const prefetch = prefetches[0];
    if (prefetch?.type !== 'prefetch') throw new Error('no prefetch');
    expect(prefetch.atUs).toBe(500_000);
    expect(prefetch.markerUs).toBe(200_000);
    expect(prefetch.pcm.length).toBe(25 * FRAME_SAMPLES);
    // The endpoint then carries the same marker, so the candidate can be matched.
    const end = driver.feed(50, 20);
    const utterance = end.find((event) => event.type === 'utterance');
    expect(utterance?.type === 'utterance' && utterance.lastSpeechAtUs).toBe(200_000);
    expect(utterance?.atUs).toBe(900_000);
  });

  it('discards the prefetch when speech resumes, and asks again after the next pause', () => {
    const driver = calibratedDriver({ asrPrefetchSilenceUs: 300_000 });
    driver.feed(800, 10);
    driver.feed(50, 16);
    const resumed = driver.feed(800, 1);
    expect(driver.types(resumed)).toEqual(['prefetch_discarded']);
    driver.feed(50, 16);
    expect(driver.types().filter((type) => type === 'prefetch')).toHaveLength(2);
  });

  it('muting during speech dispatches the utterance; frames are then ignored', () => {
    const driver = calibratedDriver();
    driver.feed(800, 30);
    const muted = driver.endpointer.mute(driver.nowUs);
    expect(driver.types(muted)).toEqual(['speech_stopped', 'utterance']);
    expect(driver.feed(800, 50)).toEqual([]);
    expect(driver.endpointer.muted).toBe(true);
  });

  it('muting while idle drops the pre-roll, and unmuting recalibrates with a fresh gate', () => {
    const driver = calibratedDriver();
    driver.feed(50, 20);
    expect(driver.endpointer.mute(driver.nowUs)).toEqual([]);
    driver.endpointer.unmute(new AdaptiveRmsGate());
    // Calibration starts over against the "real microphone" (louder room now).
    const after = driver.feed(200, 20);
    expect(after).toEqual([{ type: 'calibrated', atUs: driver.nowUs, noiseRms: 200 }]);
    // The old 50-level pre-roll is gone: the next utterance starts with the 200-level room.
    driver.feed(900, 20);
    const end = driver.feed(200, 40);
    const utterance = end.find((event) => event.type === 'utterance');
    if (utterance?.type !== 'utterance') throw new Error('no utterance');
    expect(Math.abs(utterance.pcm[0] as number)).toBe(200);
  });

  it('track end finishes an open utterance', () => {
    const driver = calibratedDriver();
    driver.feed(800, 30);
    expect(driver.types(driver.endpointer.end(driver.nowUs))).toEqual(['speech_stopped', 'utterance']);
    expect(driver.endpointer.speaking).toBe(false);
  });

  it('stops at two minutes of continuous speech with input_audio_too_long, and never dispatches the truncated command', () => {
    const driver = calibratedDriver();
    driver.feed(800, 6000); // exactly 120 s fits
    expect(driver.types()).toEqual(['speech_started']);
    const overflow = driver.feed(800, 1);
    expect(driver.types(overflow)).toEqual(['input_audio_too_long']);
    driver.feed(50, 40);
    expect(driver.types().includes('utterance')).toBe(false);
  });

  it('drops an utterance shorter than 0.5 s but still reports speech_stopped', () => {
    const driver = calibratedDriver({ silenceDurationUs: 200_000 });
    driver.feed(800, 2);
    driver.feed(50, 10);
    expect(driver.types()).toEqual(['speech_started', 'speech_stopped']);
  });
});
