import { describe, expect, it } from 'vitest';
import { EnergyDetectorFactory } from '../../src/audio/energy-detector.js';
import { InputAudioDetection } from '../../src/audio/input-detection.js';
import { EarlyTranscription } from '../../src/audio/prefetch.js';
import { SileroGate } from '../../src/audio/silero.js';
import { FRAME_SAMPLES, MAX_CAPTURE_SAMPLES, type EndpointEvent } from '../../src/audio/types.js';
import { ScriptedSpeechToText } from '../../src/providers/scripted.js';

const frame = (level: number): Int16Array => {
  const pcm = new Int16Array(FRAME_SAMPLES);
  for (let i = 0; i < pcm.length; i++) pcm[i] = i % 2 === 0 ? level : -level;
  return pcm;
};

describe('InputAudioDetection with speculative transcription', () => {
  it('reuses the early transcript when the pause only grew quieter, so the endpoint needs no second request', async () => {
    const detection = new InputAudioDetection(new EnergyDetectorFactory(), {
      silenceDurationUs: 700_000,
      asrPrefetchSilenceUs: 300_000,
      maxCaptureSamples: MAX_CAPTURE_SAMPLES,
    });
    const stt = new ScriptedSpeechToText(['turn on the lights', 'should not be needed']);
    const early = new EarlyTranscription(stt);
    let nowUs = 0;
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
      for (let i = 0; i < frames; i++) {
        nowUs += 20_000;
        await handle(await detection.feed(frame(level), nowUs));
      }
    };
    await feed(40, 25); // calibration + pre-roll
    await feed(900, 40); // speech
    await feed(40, 40); // pause: prefetch at 300 ms, endpoint at 700 ms
    expect(final).toEqual([{ text: 'turn on the lights', reusedPrefetch: true }]);
    expect(stt.calls).toHaveLength(1);
  });

  it('applies chunks, mute and unmute in call order even when the caller does not await', async () => {
    const detection = new InputAudioDetection(new EnergyDetectorFactory(), {
      silenceDurationUs: 700_000,
      asrPrefetchSilenceUs: 0,
      maxCaptureSamples: MAX_CAPTURE_SAMPLES,
    });
    const pending: Promise<EndpointEvent[]>[] = [];
    let nowUs = 0;
    for (let i = 0; i < 20; i++) pending.push(detection.feed(frame(40), (nowUs += 20_000)));
    for (let i = 0; i < 30; i++) pending.push(detection.feed(frame(900), (nowUs += 20_000)));
    pending.push(detection.setMuted(true, nowUs));
    pending.push(detection.feed(frame(900), (nowUs += 20_000)));
    pending.push(detection.setMuted(false, nowUs));
    const types = (await Promise.all(pending)).flat().map((event) => event.type);
    expect(types).toEqual(['calibrated', 'speech_started', 'speech_stopped', 'utterance']);
    expect(detection.muted).toBe(false);
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
