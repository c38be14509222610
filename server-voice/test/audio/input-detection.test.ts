import { describe, expect, it } from 'vitest';
import { EnergyDetectorFactory } from '../../src/audio/energy-detector.js';
import { EarlyTranscription } from '../../src/audio/prefetch.js';
import { SileroGate } from '../../src/audio/silero.js';
import {
  FRAME_SAMPLES,
  MAX_CAPTURE_SAMPLES,
  type EndpointEvent,
  type VoiceDetector,
  type VoiceDetectorFactory,
} from '../../src/audio/types.js';
import { ScriptedSpeechToText } from '../../src/providers/scripted.js';
import { DetectionHarness } from '../support/detection-harness.js';

const frame = (level: number): Int16Array => {
  const pcm = new Int16Array(FRAME_SAMPLES);
  for (let i = 0; i < pcm.length; i++) pcm[i] = i % 2 === 0 ? level : -level;
  return pcm;
};

/** The energy detector, but scoring asynchronously with jitter, as a model does: operations overlap. */
class SlowDetectorFactory implements VoiceDetectorFactory {
  readonly backend = 'silero' as const;
  private readonly energy = new EnergyDetectorFactory();

  create(): VoiceDetector {
    const inner = this.energy.create();
    return {
      backend: 'silero',
      score: () => new Promise((resolve) => setTimeout(() => resolve(null), Math.random() * 3)),
      createGate: () => inner.createGate(),
      close: () => inner.close(),
    };
  }
}

describe('VoiceInput with speculative transcription', () => {
  it('reuses the early transcript when the pause only grew quieter, so the endpoint needs no second request', async () => {
    const detection = new DetectionHarness(new EnergyDetectorFactory(), {
      silenceDurationUs: 700_000,
      asrPrefetchSilenceUs: 300_000,
      maxCaptureSamples: MAX_CAPTURE_SAMPLES,
    });
    const stt = new ScriptedSpeechToText(['turn on the lights', 'should not be needed']);
    const early = new EarlyTranscription(stt);
    const final: { text: string; reusedPrefetch: boolean }[] = [];
    const handle = async (events: EndpointEvent[]): Promise<void> => {
      for (const event of events) {
        if (event.type === 'prefetch') early.start(event.pcm, event.markerUs);
        if (event.type === 'prefetch_discarded') early.discard();
        if (event.type === 'utterance')
          final.push(await early.transcribeFinal(event.pcm, event.lastSpeechAtUs, event.quietThresholdRms));
      }
    };
    const feed = async (level: number, frames: number): Promise<void> => {
      for (let i = 0; i < frames; i++) await handle(await detection.feed(frame(level)));
    };
    await feed(40, 25); // calibration + pre-roll
    await feed(900, 40); // speech
    await feed(40, 40); // pause: prefetch at 300 ms, endpoint at 700 ms
    expect(final).toEqual([{ text: 'turn on the lights', reusedPrefetch: true }]);
    expect(stt.calls).toHaveLength(1);
  });
});

describe('VoiceInput ordering', () => {
  it('applies frames, mute and unmute in call order while a model is still scoring earlier frames', async () => {
    const detection = new DetectionHarness(new SlowDetectorFactory(), {
      silenceDurationUs: 700_000,
      asrPrefetchSilenceUs: 0,
      maxCaptureSamples: MAX_CAPTURE_SAMPLES,
    });
    const { input } = detection;
    // Nothing is awaited in between: every frame is still being scored when the mute arrives.
    const push = (level: number) => {
      detection.nowUs += 20_000;
      input.push(frame(level));
    };
    for (let i = 0; i < 20; i++) push(40);
    for (let i = 0; i < 30; i++) push(900);
    input.mute();
    push(900);
    input.unmute();
    const events = await detection.take();
    expect(events.map((event) => event.type)).toEqual(['calibrated', 'speech_started', 'speech_stopped', 'utterance']);
    // The mute finished the utterance with every loud frame received before it.
    const utterance = events[3];
    if (utterance?.type !== 'utterance') throw new Error('no utterance');
    expect(utterance.pcm.length).toBeGreaterThanOrEqual(30 * FRAME_SAMPLES);
    expect(input.muted).toBe(false);
  });
});

describe('SileroGate', () => {
  it('starts at the threshold, holds at threshold − 0.15 while speaking (never below 0.05), and reuses the last score', () => {
    const gate = new SileroGate(0.5, { initialNoiseRms: 50 });
    const pcm = frame(100);
    expect(gate.isSpeech(pcm, false, 0.49)).toBe(false);
    expect(gate.isSpeech(pcm, false, 0.5)).toBe(true);
    // (0.5 − 0.15 in binary floating point is a hair above 0.35, as in the reference.)
    expect(gate.isSpeech(pcm, true, 0.351)).toBe(true);
    expect(gate.isSpeech(pcm, true, 0.34)).toBe(false);
    expect(gate.isSpeech(pcm, true, null)).toBe(false); // reuses 0.34
    const low = new SileroGate(0.2, { initialNoiseRms: 50 });
    expect(low.isSpeech(pcm, true, 0.051)).toBe(true);
    expect(low.isSpeech(pcm, true, 0.049)).toBe(false);
  });

  it('learns the RMS floor only from audio the model calls non-speech', () => {
    const gate = new SileroGate(0.5, { initialNoiseRms: 50 });
    gate.isSpeech(frame(400), false, 0.9);
    expect(gate.noiseRms).toBe(50);
    gate.isSpeech(frame(400), false, 0.1);
    expect(gate.noiseRms).toBeGreaterThan(50);
  });
});
