import { describe, expect, it } from 'vitest';
import { AudioSettingsError, audioSettingsFromEnv, parseAudioSettings } from '../../src/audio/settings.js';
import { MAX_CAPTURE_SAMPLES } from '../../src/audio/types.js';

describe('audio settings', () => {
  it('defaults: 1.5 s silence, prefetch off, Silero at 0.5, shipped model, no trimming', () => {
    expect(parseAudioSettings({})).toEqual({
      endpoint: { silenceDurationUs: 1_500_000, asrPrefetchSilenceUs: 0, maxCaptureSamples: MAX_CAPTURE_SAMPLES },
      vadBackend: 'silero',
      vadThreshold: 0.5,
      vadModelPath: null,
      ttsTrimLeadingSilence: false,
    });
  });

  it.each([0.2, 0.7, 5.0])('accepts silence_duration %d', (value) => {
    expect(parseAudioSettings({ silence_duration: value }).endpoint.silenceDurationUs).toBe(Math.round(value * 1e6));
  });

  it.each([0.19, 5.01, Number.NaN, Number.POSITIVE_INFINITY, true, '1.5', null])(
    'rejects silence_duration %s with a message naming it',
    (value) => {
      expect(() => parseAudioSettings({ silence_duration: value })).toThrow(/silence_duration/);
    },
  );

  it('accepts asr_prefetch_silence 0 or 0.1 ≤ v < silence_duration', () => {
    expect(
      parseAudioSettings({ asr_prefetch_silence: 0.35, silence_duration: 0.7 }).endpoint.asrPrefetchSilenceUs,
    ).toBe(350_000);
    expect(parseAudioSettings({ asr_prefetch_silence: 0 }).endpoint.asrPrefetchSilenceUs).toBe(0);
  });

  it.each([0.05, 0.7, 0.8, true, '0.3', Number.NaN])('rejects asr_prefetch_silence %s (silence 0.7)', (value) => {
    expect(() => parseAudioSettings({ asr_prefetch_silence: value, silence_duration: 0.7 })).toThrow(
      /asr_prefetch_silence/,
    );
  });

  it('validates the backend, threshold, model path and trimming flag', () => {
    expect(parseAudioSettings({ vad_backend: 'rms' }).vadBackend).toBe('rms');
    expect(() => parseAudioSettings({ vad_backend: 'webrtc' })).toThrow(/vad_backend/);
    expect(() => parseAudioSettings({ vad_threshold: 0.95 })).toThrow(/vad_threshold/);
    expect(() => parseAudioSettings({ vad_threshold: false })).toThrow(/vad_threshold/);
    expect(() => parseAudioSettings({ vad_model_path: '  ' })).toThrow(/vad_model_path/);
    expect(() => parseAudioSettings({ tts_trim_leading_silence: 'yes' })).toThrow(/tts_trim_leading_silence/);
    expect(parseAudioSettings({ tts_trim_leading_silence: true }).ttsTrimLeadingSilence).toBe(true);
  });

  it('reads HERMES_REALTIME_* variables over file values and names the variable in errors', () => {
    const settings = audioSettingsFromEnv(
      {
        HERMES_REALTIME_SILENCE_DURATION: '0.7',
        HERMES_REALTIME_ASR_PREFETCH_SILENCE: '0.35',
        HERMES_REALTIME_VAD_BACKEND: 'rms',
        HERMES_REALTIME_TTS_TRIM_LEADING_SILENCE: 'true',
      },
      { silence_duration: 2, vad_threshold: 0.6 },
    );
    expect(settings.endpoint.silenceDurationUs).toBe(700_000);
    expect(settings.endpoint.asrPrefetchSilenceUs).toBe(350_000);
    expect(settings.vadBackend).toBe('rms');
    expect(settings.vadThreshold).toBe(0.6);
    expect(settings.ttsTrimLeadingSilence).toBe(true);
    expect(() => audioSettingsFromEnv({ HERMES_REALTIME_SILENCE_DURATION: 'soon' })).toThrow(
      /HERMES_REALTIME_SILENCE_DURATION/,
    );
    expect(() => audioSettingsFromEnv({ HERMES_REALTIME_SILENCE_DURATION: '9' })).toThrow(
      /silence_duration .*\(from HERMES_REALTIME_SILENCE_DURATION\)/,
    );
    expect(() => audioSettingsFromEnv({ HERMES_REALTIME_TTS_TRIM_LEADING_SILENCE: 'maybe' })).toThrow(
      AudioSettingsError,
    );
  });
});
