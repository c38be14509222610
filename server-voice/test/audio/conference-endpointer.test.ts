import { describe, expect, it } from 'vitest';
import { PolledEndpointer } from '../../src/audio/conference-endpointer.js';
import { AdaptiveRmsGate } from '../../src/audio/energy-gate.js';
import { concatPcm } from '../../src/audio/pcm.js';
import { FRAME_SAMPLES, MAX_CAPTURE_SAMPLES, type EndpointEvent } from '../../src/audio/types.js';

const frames = (level: number, count: number): Int16Array => {
  const pcm = new Int16Array(count * FRAME_SAMPLES);
  for (let i = 0; i < pcm.length; i++) pcm[i] = i % 2 === 0 ? level : -level;
  return pcm;
};

const make = (maxCaptureSamples = MAX_CAPTURE_SAMPLES): PolledEndpointer =>
  new PolledEndpointer(new AdaptiveRmsGate({ initialNoiseRms: 50 }), {
    silenceDurationUs: 700_000,
    asrPrefetchSilenceUs: 0,
    maxCaptureSamples,
  });

describe('PolledEndpointer', () => {
  it('keeps at most 500 ms of idle audio for someone who has not spoken', () => {
    const endpointer = make();
    for (let poll = 1; poll <= 10; poll++) {
      endpointer.append(frames(50, 10), poll * 200_000);
      endpointer.poll(poll * 200_000);
    }
    endpointer.append(frames(800, 10), 2_200_000);
    const [started] = endpointer.poll(2_200_000);
    // 500 ms idle pre-roll + the 200 ms just received.
    expect(started).toEqual({ type: 'speech_started', atUs: 2_200_000, audioStartUs: 2_200_000 - 700_000 });
  });

  it('end-of-turn dispatches the whole buffer at once', () => {
    const endpointer = make();
    endpointer.append(frames(800, 30), 600_000);
    endpointer.poll(600_000);
    const events = endpointer.flushNow(650_000);
    expect(events.map((event) => event.type)).toEqual(['utterance']);
    expect(events[0]?.type === 'utterance' && events[0].pcm.length).toBe(30 * FRAME_SAMPLES);
  });

  it('a short flushed utterance is dropped with speech_stopped', () => {
    const endpointer = make();
    endpointer.append(frames(800, 5), 200_000);
    endpointer.poll(200_000);
    expect(endpointer.flushNow(250_000).map((event) => event.type)).toEqual(['speech_stopped']);
  });

  it('reports overflow when capture exceeds the cap and recovers after a pause', () => {
    const endpointer = make(100 * FRAME_SAMPLES);
    const events: EndpointEvent[] = [];
    let now = 0;
    const step = (level: number): void => {
      now += 200_000;
      events.push(...endpointer.append(frames(level, 10), now), ...endpointer.poll(now));
    };
    for (let i = 0; i < 11; i++) step(800);
    expect(events.map((event) => event.type)).toEqual(['speech_started', 'input_audio_too_long']);
    for (let i = 0; i < 6; i++) step(50);
    for (let i = 0; i < 3; i++) step(800);
    for (let i = 0; i < 4; i++) step(50);
    expect(events.map((event) => event.type)).toEqual([
      'speech_started',
      'input_audio_too_long',
      'speech_started',
      'utterance',
    ]);
    const utterance = events.at(-1);
    if (utterance?.type !== 'utterance') throw new Error('no utterance');
    // The recovered utterance holds the new speech, not audio from before the overflow.
    expect(concatPcm([utterance.pcm]).length).toBeLessThan(100 * FRAME_SAMPLES);
  });

  it('muting an active speaker dispatches; unmuting recalibrates', () => {
    const endpointer = make();
    endpointer.append(frames(800, 30), 600_000);
    endpointer.poll(600_000);
    expect(endpointer.mute(700_000).map((event) => event.type)).toEqual(['utterance']);
    endpointer.unmute(new AdaptiveRmsGate());
    endpointer.append(frames(100, 20), 1_100_000);
    expect(endpointer.poll(1_100_000)).toEqual([{ type: 'calibrated', atUs: 1_100_000, noiseRms: 100 }]);
  });

  it('asks for a speculative transcription once per pause and discards it when speech resumes', () => {
    const endpointer = new PolledEndpointer(new AdaptiveRmsGate({ initialNoiseRms: 50 }), {
      silenceDurationUs: 1_000_000,
      asrPrefetchSilenceUs: 400_000,
      maxCaptureSamples: MAX_CAPTURE_SAMPLES,
    });
    const events: EndpointEvent[] = [];
    let now = 0;
    const step = (level: number): void => {
      now += 200_000;
      events.push(...endpointer.append(frames(level, 10), now), ...endpointer.poll(now));
    };
    step(800);
    for (let i = 0; i < 3; i++) step(50);
    step(800);
    for (let i = 0; i < 5; i++) step(50);
    expect(events.map((event) => `${event.type}@${event.atUs / 1000}`)).toEqual([
      'speech_started@200',
      'prefetch@600',
      'prefetch_discarded@1000',
      'prefetch@1400',
      'utterance@2000',
    ]);
  });
});
