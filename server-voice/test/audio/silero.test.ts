import { copyFile, mkdtemp, open, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PolledEndpointer } from '../../src/audio/conference-endpointer.js';
import { EnergyDetectorFactory } from '../../src/audio/energy-detector.js';
import { concatPcm } from '../../src/audio/pcm.js';
import {
  SILERO_MODEL_BYTES,
  SileroDetectorFactory,
  SileroModel,
  SileroModelError,
  defaultSileroModelPath,
  readPinnedSileroModel,
} from '../../src/audio/silero.js';
import { MAX_CAPTURE_SAMPLES, type EndpointEvent, type VoiceDetector } from '../../src/audio/types.js';
import { DetectionHarness } from '../support/detection-harness.js';
import { framesOf, noisePcm, silencePcm, spokenPcm } from './speech-fixtures.js';

let factory: SileroDetectorFactory;
let speech: Int16Array;
let scratch: string;

beforeAll(async () => {
  factory = await SileroDetectorFactory.load(0.5);
  speech = await spokenPcm('Hello there. What is the weather like in Paris today?');
  scratch = await mkdtemp(path.join(tmpdir(), 'silero-'));
});

afterAll(async () => {
  await factory.model.close();
  await rm(scratch, { recursive: true, force: true });
});

async function scores(detector: VoiceDetector, pcm: Int16Array): Promise<number[]> {
  const out: number[] = [];
  for (const frame of framesOf(pcm)) out.push((await detector.score(frame)) ?? Number.NaN);
  return out;
}

const mean = (values: number[]): number => values.reduce((sum, value) => sum + value, 0) / values.length;

describe('Silero model loading', () => {
  it('uses the pinned v6.2 file shipped in @livekit/agents-plugin-silero', async () => {
    const bytes = await readPinnedSileroModel(defaultSileroModelPath());
    expect(bytes.length).toBe(SILERO_MODEL_BYTES);
  });

  it('fails startup when the model file is missing (no download, no fallback)', async () => {
    await expect(SileroModel.load(path.join(scratch, 'absent.onnx'))).rejects.toThrow(SileroModelError);
    await expect(SileroModel.load(path.join(scratch, 'absent.onnx'))).rejects.toThrow(/not found/);
  });

  it('refuses a file of another size before hashing it', async () => {
    const small = path.join(scratch, 'small.onnx');
    await writeFile(small, Buffer.alloc(1024));
    await expect(SileroModel.load(small)).rejects.toThrow(/1024 bytes, expected 2327524/);
  });

  it('refuses a same-size file whose SHA-256 differs', async () => {
    const tampered = path.join(scratch, 'tampered.onnx');
    await copyFile(defaultSileroModelPath(), tampered);
    const handle = await open(tampered, 'r+');
    await handle.write(Buffer.from([0x42]), 0, 1, 1000);
    await handle.close();
    await expect(SileroModel.load(tampered)).rejects.toThrow(/SHA-256 [0-9a-f]{64}, expected 1a153a22/);
  });
});

describe('Silero inference on real speech', () => {
  it('scores espeak-ng speech high and silence and white noise low', async () => {
    const detector = factory.create();
    const silent = await scores(detector, silencePcm(600));
    const noise = await scores(detector, noisePcm(800, 400, 7));
    const spoken = await scores(detector, speech);
    expect(Math.max(...silent)).toBeLessThan(0.2);
    expect(mean(noise)).toBeLessThan(0.2);
    expect(mean(spoken)).toBeGreaterThan(0.6);
    expect(spoken.filter((p) => p >= 0.5).length / spoken.length).toBeGreaterThan(0.6);
  });

  it('keeps state per input: interleaving two inputs gives each the scores it gets alone', async () => {
    const a = concatPcm([silencePcm(200), speech]);
    const b = concatPcm([noisePcm(300, 200, 3), speech.subarray(0, 48_000)]);
    const aloneA = await scores(factory.create(), a);
    const aloneB = await scores(factory.create(), b);
    const first = factory.create();
    const second = factory.create();
    const framesA = framesOf(a);
    const framesB = framesOf(b);
    const mixedA: number[] = [];
    const mixedB: number[] = [];
    for (let i = 0; i < Math.max(framesA.length, framesB.length); i++) {
      const pending: Promise<void>[] = [];
      const frameA = framesA[i];
      const frameB = framesB[i];
      if (frameA) pending.push(first.score(frameA).then((p) => void mixedA.push(p ?? Number.NaN)));
      if (frameB) pending.push(second.score(frameB).then((p) => void mixedB.push(p ?? Number.NaN)));
      await Promise.all(pending);
    }
    expect(mixedA).toEqual(aloneA);
    expect(mixedB).toEqual(aloneB);
  });

  it('reuses the last probability when a chunk completes no 32 ms window', async () => {
    const detector = factory.create();
    await detector.score(speech.subarray(0, 9600));
    const before = await detector.score(speech.subarray(9600, 19_200));
    // 100 samples at 48 kHz are 33 at 16 kHz: no new window.
    expect(await detector.score(speech.subarray(19_200, 19_300))).toBe(before);
  });
});

describe('endpointing with a detector', () => {
  const settings = { silenceDurationUs: 700_000, asrPrefetchSilenceUs: 0, maxCaptureSamples: MAX_CAPTURE_SAMPLES };

  it('Silero: one utterance for spoken words between silences, with pre-roll, ending 0.7 s after speech', async () => {
    const input = concatPcm([silencePcm(800), speech, silencePcm(1500)]);
    const events = await new DetectionHarness(factory, settings).feed(input);
    expect(events.map((event) => event.type)).toEqual(['calibrated', 'speech_started', 'speech_stopped', 'utterance']);
    const started = events[1];
    const utterance = events[3];
    if (started?.type !== 'speech_started' || utterance?.type !== 'utterance') throw new Error('unexpected events');
    // Speech begins at 800 ms; the decision lands within the first word.
    expect(started.atUs).toBeGreaterThanOrEqual(800_000);
    expect(started.atUs).toBeLessThan(1_200_000);
    // The utterance covers the whole spoken audio.
    expect(utterance.pcm.length).toBeGreaterThanOrEqual(speech.length);
  });

  it('Silero ignores steady loud noise that the energy gate takes for speech', async () => {
    const input = concatPcm([noisePcm(600, 150, 11), noisePcm(3000, 700, 12)]);
    const silero = await new DetectionHarness(factory, settings).feed(input);
    const energy = await new DetectionHarness(new EnergyDetectorFactory(), settings).feed(input);
    expect(silero.map((event) => event.type)).toEqual(['calibrated']);
    expect(energy.map((event) => event.type)).toContain('speech_started');
  });

  it('muting finishes the utterance, and unmuting starts a fresh detector that recalibrates', async () => {
    const detection = new DetectionHarness(factory, settings);
    await detection.feed(concatPcm([silencePcm(600), speech.subarray(0, 48_000)]));
    expect(detection.input.speaking).toBe(true);
    detection.input.mute();
    const muted = await detection.take();
    expect(muted.map((event) => event.type)).toEqual(['speech_stopped', 'utterance']);
    expect(await detection.feed(speech)).toEqual([]);
    detection.input.unmute();
    const after = await detection.feed(silencePcm(400));
    expect(after.map((event) => event.type)).toEqual(['calibrated']);
  });

  it('Silero on the polled transport: each poll scores only the audio not yet classified', async () => {
    const detector = factory.create();
    const endpointer = new PolledEndpointer(detector.createGate(), settings);
    const input = concatPcm([silencePcm(800), speech, silencePcm(1600)]);
    const events: EndpointEvent[] = [];
    const pollSamples = 9600; // 200 ms
    for (let start = 0, nowUs = 200_000; start < input.length; start += pollSamples, nowUs += 200_000) {
      events.push(...endpointer.append(input.subarray(start, start + pollSamples), nowUs));
      const probability = await detector.score(endpointer.unclassified());
      events.push(...endpointer.poll(nowUs, probability));
    }
    expect(events.map((event) => event.type)).toEqual(['calibrated', 'speech_started', 'utterance']);
    const utterance = events[2];
    if (utterance?.type !== 'utterance') throw new Error('no utterance');
    // Cut to keep 100 ms of trailing silence: at least the speech, at most speech + pre-roll + one poll.
    expect(utterance.pcm.length).toBeGreaterThanOrEqual(speech.length - 9600);
    expect(utterance.pcm.length).toBeLessThanOrEqual(speech.length + 24_000 + 2 * 9600);
  });
});
