import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeWav } from '../../src/audio/wav.js';
import { memoryIo } from '../../src/probes/probe-io.js';
import { readSpeechFixture, runVadProbe, vadProbeCli } from '../../src/probes/vad-probe.js';

/** Speech stand-in at 16 kHz (so the probe resamples): three 300 ms voiced bursts with 150 ms gaps. */
function toneBursts(rateHz = 16_000): Int16Array {
  const burst = Math.round(rateHz * 0.3);
  const gap = Math.round(rateHz * 0.15);
  const pcm = new Int16Array(3 * burst + 2 * gap);
  for (let b = 0; b < 3; b += 1)
    for (let i = 0; i < burst; i += 1)
      pcm[b * (burst + gap) + i] = Math.round(8000 * Math.sin((2 * Math.PI * (180 + 40 * b) * i) / rateHz));
  return pcm;
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'vad-probe-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('probe:vad, the offline capture-path check', () => {
  it('endpoints the speech and the quiet speech once each, and the noise step alone starts nothing', async () => {
    const report = await runVadProbe({
      speech: readSpeechFixture(encodeWav(toneBursts(), 16_000)),
      backend: 'rms',
      silenceSeconds: 0.7,
    });
    expect(report.noise_triggered_speech).toBe(false);
    expect(report.speech_endpointed).toBe(true);
    expect(report.quiet_speech_endpointed).toBe(true);
    const speech = report.segments.find((s) => s.name === 'speech')!;
    const types = report.events.map((e) => `${e.segment}:${e.type}`);
    expect(types).toEqual([
      'quiet_noise:calibrated',
      'speech:speech_started',
      'speech:speech_stopped',
      'speech:utterance',
      'quiet_speech:speech_started',
      'quiet_speech:speech_stopped',
      'quiet_speech:utterance',
    ]);
    const stopped = report.events.find((e) => e.type === 'speech_stopped')!;
    // The endpoint comes the silence target after the last burst (1.2 s of fixture), at frame granularity.
    expect(stopped.observed_silence_ms).toBe(700);
    expect(stopped.at_s).toBeCloseTo(speech.start_s + 1.2 + 0.7, 1);
    // The gate learned the louder room (≈180 RMS), not the quiet one.
    expect(stopped.noise_rms).toBeGreaterThan(120);
    expect(report.frames).toBeGreaterThan(400);
    expect(report.cpu_ms_per_frame.p99).toBeGreaterThanOrEqual(report.cpu_ms_per_frame.mean);
  });

  it('reports noise that starts speech (a step above the speech threshold)', async () => {
    const report = await runVadProbe({
      speech: readSpeechFixture(encodeWav(toneBursts(), 16_000)),
      backend: 'rms',
      silenceSeconds: 0.7,
      loudNoiseRms: 1500,
    });
    expect(report.noise_triggered_speech).toBe(true);
  });

  it('runs the Silero backend through the same path, its inference counted in the frame cost', async () => {
    const speech = readSpeechFixture(encodeWav(toneBursts(), 16_000));
    const silero = await runVadProbe({ speech, backend: 'silero', silenceSeconds: 0.7 });
    expect(silero.backend).toBe('silero');
    expect(silero.noise_triggered_speech).toBe(false);
    expect(silero.events[0]).toMatchObject({ type: 'calibrated', segment: 'quiet_noise' });
    const rms = await runVadProbe({ speech, backend: 'rms', silenceSeconds: 0.7 });
    expect(silero.frames).toBe(rms.frames);
    expect(silero.cpu_ms_per_frame.mean).toBeGreaterThan(rms.cpu_ms_per_frame.mean);
  });

  it('the command line prints the JSON report for a WAV file', async () => {
    const file = path.join(dir, 'speech.wav');
    await writeFile(file, encodeWav(toneBursts(24_000), 24_000));
    const io = memoryIo();
    expect(await vadProbeCli(['--speech-fixture', file, '--silence', '0.5'], io)).toBe(0);
    const report = JSON.parse(io.stdout.join('\n')) as { silence_duration_s: number; speech_endpointed: boolean };
    expect(report).toMatchObject({ silence_duration_s: 0.5, speech_endpointed: true });
  });

  it('refuses a file that is not mono PCM16 WAV with a clear message and a non-zero exit', async () => {
    const notWav = path.join(dir, 'notes.wav');
    await writeFile(notWav, 'these are not samples');
    const io = memoryIo();
    expect(await vadProbeCli(['--speech-fixture', notWav], io)).not.toBe(0);
    expect(io.stderr.join('\n')).toContain('is not a usable WAV (not a RIFF/WAVE file); expected mono PCM16');
    expect(io.stdout).toEqual([]);

    const stereo = encodeWav(toneBursts(), 16_000);
    stereo.writeUInt16LE(2, 22);
    const stereoFile = path.join(dir, 'stereo.wav');
    await writeFile(stereoFile, stereo);
    const again = memoryIo();
    expect(await vadProbeCli(['--speech-fixture', stereoFile], again)).toBe(2);
    expect(again.stderr.join('\n')).toContain('need PCM16 mono');

    const missing = memoryIo();
    expect(await vadProbeCli(['--speech-fixture', path.join(dir, 'absent.wav')], missing)).toBe(2);
    expect(missing.stderr.join('\n')).toContain('cannot read');
  });
});
