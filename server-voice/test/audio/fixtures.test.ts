import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { PolledEndpointer } from '../../src/audio/conference-endpointer.js';
import { DirectEndpointer } from '../../src/audio/endpointer.js';
import { AdaptiveRmsGate } from '../../src/audio/energy-gate.js';
import { LeadingSilenceTrimmer } from '../../src/audio/leading-silence.js';
import { concatPcm } from '../../src/audio/pcm.js';
import { FRAME_SAMPLES, MAX_CAPTURE_SAMPLES, type EndpointEvent } from '../../src/audio/types.js';
import { FIXTURE_PATH, SHARED_FIXTURE_PATH, fixtures, type EndpointCase, type ExpectedEvent } from './fixture-cases.js';

/** The fixture's frame encoding: 960 samples alternating +level, −level, so the frame's RMS is exactly `level`. */
function levelFrame(level: number): Int16Array {
  const frame = new Int16Array(FRAME_SAMPLES);
  for (let i = 0; i < FRAME_SAMPLES; i++) frame[i] = i % 2 === 0 ? level : -level;
  return frame;
}

/** Run-length of frame levels, the fixture's way of describing a dispatched utterance. */
function levelRle(pcm: Int16Array): [number, number][] {
  const runs: [number, number][] = [];
  for (let start = 0; start < pcm.length; start += FRAME_SAMPLES) {
    const level = Math.abs(pcm[start] as number);
    const last = runs[runs.length - 1];
    if (last && last[0] === level) last[1]++;
    else runs.push([level, 1]);
  }
  return runs;
}

function asFixtureEvent(event: EndpointEvent): ExpectedEvent | null {
  switch (event.type) {
    case 'calibrated':
      return { event: 'calibrated', at_us: event.atUs, noise_rms: event.noiseRms };
    case 'speech_started':
    case 'speech_stopped':
    case 'input_audio_too_long':
      return { event: event.type, at_us: event.atUs };
    case 'utterance':
      return { event: 'dispatch', at_us: event.atUs, bytes: event.pcm.length * 2, rle: levelRle(event.pcm) };
    default:
      return null;
  }
}

function runCase(fixture: EndpointCase): { events: ExpectedEvent[]; finalNoise: number | null } {
  const gate = new AdaptiveRmsGate({ initialNoiseRms: fixture.pre_calibrated_noise });
  const settings = {
    silenceDurationUs: fixture.silence_duration_us,
    asrPrefetchSilenceUs: 0,
    maxCaptureSamples: fixture.max_capture_bytes === undefined ? MAX_CAPTURE_SAMPLES : fixture.max_capture_bytes / 2,
  };
  const frames = fixture.input.segments.flatMap((segment) =>
    Array.from({ length: segment.frames }, () => levelFrame(segment.level)),
  );
  const direct = fixture.transport === 'direct' ? new DirectEndpointer(gate, settings) : null;
  const polled = fixture.transport === 'conference' ? new PolledEndpointer(gate, settings) : null;
  const produced: EndpointEvent[] = [];
  const perPacket = fixture.input.packet_frames;
  for (let first = 0; first < frames.length; first += perPacket) {
    const packet = concatPcm(frames.slice(first, first + perPacket));
    // Integer-microsecond clock: a packet is handled when its last frame has arrived.
    const atUs = (first + perPacket) * 20_000;
    if (direct) produced.push(...direct.push(packet, atUs));
    if (polled) produced.push(...polled.append(packet, atUs), ...polled.poll(atUs));
  }
  const events = produced.map(asFixtureEvent).filter((event): event is ExpectedEvent => event !== null);
  return { events, finalNoise: gate.noiseRms };
}

describe('derived fixtures: VAD endpoint cases', () => {
  it.each(fixtures.vad_endpoint_cases.map((fixture) => [fixture.name, fixture] as const))('%s', (_name, fixture) => {
    const { events, finalNoise } = runCase(fixture);
    expect(events.map(({ noise_rms: _noise, ...rest }) => rest)).toEqual(
      fixture.expected_events.map(({ noise_rms: _noise, ...rest }) => rest),
    );
    for (const [index, expected] of fixture.expected_events.entries())
      if (expected.noise_rms !== undefined) expect(events[index]?.noise_rms).toBeCloseTo(expected.noise_rms, 6);
    expect(Math.abs((finalNoise ?? Number.NaN) - fixture.final_noise_rms)).toBeLessThanOrEqual(1e-6);
  });
});

describe('derived fixtures: energy gate', () => {
  it.each(fixtures.gate_cases.thresholds.map((row) => [row.noise_rms, row] as const))(
    'noise %d gives the fixture start/stop thresholds',
    (_noise, row) => {
      const gate = new AdaptiveRmsGate({ initialNoiseRms: row.noise_rms });
      expect(gate.startThreshold).toBe(row.start);
      expect(gate.stopThreshold).toBe(row.stop);
    },
  );

  it.each(fixtures.gate_cases.calibration.map((row, index) => [index, row] as const))(
    'calibration case %d sets the noise floor from the quieter half',
    (_index, row) => {
      const gate = new AdaptiveRmsGate();
      const done = row.rms_values.map((rms) => gate.calibrateRms(rms));
      expect(done.slice(0, -1).every((value) => !value)).toBe(true);
      expect(done.at(-1)).toBe(true);
      expect(gate.noiseRms).toBe(row.noise_rms);
    },
  );

  it.each(fixtures.gate_cases.sequences.map((row, index) => [index, row] as const))(
    'sequence %d: decisions and learned floor',
    (_index, row) => {
      const gate = new AdaptiveRmsGate({ initialNoiseRms: row.start_noise_rms });
      const decisions = row.steps.map(([rms, speaking, seconds]) => gate.classifyRms(rms, speaking, seconds));
      expect(decisions).toEqual(row.expected_speech);
      expect(Math.abs((gate.noiseRms ?? Number.NaN) - row.final_noise_rms)).toBeLessThanOrEqual(row.tolerance);
    },
  );
});

/** The trim fixtures give frame counts; these are the inputs their names describe. */
function trimInput(name: string, frames: number): Int16Array[] {
  const quiet = (): Int16Array => levelFrame(12);
  const speech = (): Int16Array => levelFrame(3000);
  switch (name) {
    case '30 quiet + speech':
      return [...Array.from({ length: 30 }, quiet), ...Array.from({ length: frames - 30 }, speech)];
    case 'single sample 17 in frame 0': {
      const first = new Int16Array(FRAME_SAMPLES);
      first[123] = 17;
      return [first, ...Array.from({ length: frames - 1 }, () => new Int16Array(FRAME_SAMPLES))];
    }
    case 'all quiet 60 frames':
    case '2 quiet frames (short reply)':
      return Array.from({ length: frames }, quiet);
    default:
      throw new Error(`no input builder for trim case ${name}`);
  }
}

describe('derived fixtures: leading-silence trimming', () => {
  it.each(fixtures.trim_cases.map((row) => [row.name, row] as const))('%s', (name, row) => {
    const input = trimInput(name, row.input_frames);
    const trimmer = new LeadingSilenceTrimmer();
    const output = [...input.flatMap((frame) => trimmer.push(frame)), ...trimmer.finish()];
    expect(output.length).toBe(row.output_frames);
    expect(trimmer.trimmedFrames).toBe(row.trimmed_frames);
    // Every retained frame is the very input frame, untouched.
    expect(output).toEqual(input.slice(row.output_equals_input_from_index));
  });
});

describe('the fixture copy', () => {
  it('holds the same data as the shared specification file when that is checked out', () => {
    if (!existsSync(SHARED_FIXTURE_PATH)) return;
    // Compared as data: the copy is formatted by prettier with the rest of the repository.
    const read = (path: URL): unknown => JSON.parse(readFileSync(path, 'utf8'));
    expect(read(FIXTURE_PATH)).toEqual(read(SHARED_FIXTURE_PATH));
  });
});
