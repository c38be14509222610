import { describe, expect, it } from 'vitest';
import { describeSpeechProviders, speechProvidersFromEnv } from '../../src/providers/config.js';
import { EspeakTextToSpeech } from '../../src/providers/espeak-tts.js';
import { OpenAiSpeechToText } from '../../src/providers/openai-stt.js';
import { OpenAiTextToSpeech } from '../../src/providers/openai-tts.js';

describe('speech providers from the environment', () => {
  it('defaults to offline espeak-ng speech and no transcription', () => {
    const providers = speechProvidersFromEnv({});
    expect(providers.stt).toBeNull();
    expect(providers.tts).toBeInstanceOf(EspeakTextToSpeech);
    expect(describeSpeechProviders(providers)).toBe('stt=none tts=espeak-ng:en-us');
  });

  it('builds OpenAI-compatible providers, and the description carries no key', () => {
    const providers = speechProvidersFromEnv({
      HERMES_REALTIME_STT_BASE_URL: 'http://127.0.0.1:8000/v1',
      HERMES_REALTIME_STT_MODEL: 'whisper-large-v3',
      HERMES_REALTIME_STT_API_KEY: 'sk-secret-stt',
      HERMES_REALTIME_TTS_PROVIDER: 'openai',
      HERMES_REALTIME_TTS_BASE_URL: 'https://api.openai.com/v1',
      HERMES_REALTIME_TTS_API_KEY: 'sk-secret-tts',
      HERMES_REALTIME_TTS_SAMPLE_RATE: '22050',
    });
    expect(providers.stt).toBeInstanceOf(OpenAiSpeechToText);
    expect(providers.tts).toBeInstanceOf(OpenAiTextToSpeech);
    expect(providers.tts.sampleRateHz).toBe(22_050);
    const description = describeSpeechProviders(providers);
    expect(description).toBe('stt=openai-compatible:whisper-large-v3 tts=openai-compatible:gpt-4o-mini-tts');
    expect(description).not.toContain('secret');
  });

  it('fails with the variable name on bad values', () => {
    expect(() => speechProvidersFromEnv({ HERMES_REALTIME_TTS_PROVIDER: 'polly' })).toThrow(
      /HERMES_REALTIME_TTS_PROVIDER/,
    );
    expect(() => speechProvidersFromEnv({ HERMES_REALTIME_TTS_PROVIDER: 'openai' })).toThrow(
      /HERMES_REALTIME_TTS_BASE_URL/,
    );
    expect(() => speechProvidersFromEnv({ HERMES_REALTIME_STT_BASE_URL: 'not a url' })).toThrow(
      /HERMES_REALTIME_STT_BASE_URL/,
    );
    expect(() => speechProvidersFromEnv({ HERMES_REALTIME_ESPEAK_WPM: 'fast' })).toThrow(/HERMES_REALTIME_ESPEAK_WPM/);
    expect(() =>
      speechProvidersFromEnv({
        HERMES_REALTIME_TTS_PROVIDER: 'openai',
        HERMES_REALTIME_TTS_BASE_URL: 'http://x/v1',
        HERMES_REALTIME_TTS_SAMPLE_RATE: '7000',
      }),
    ).toThrow(/HERMES_REALTIME_TTS_SAMPLE_RATE/);
  });
});
