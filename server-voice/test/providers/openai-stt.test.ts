import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { decodeWav } from '../../src/audio/wav.js';
import { OpenAiSpeechToText } from '../../src/providers/openai-stt.js';
import { SpeechProviderError } from '../../src/providers/types.js';
import { FakeOpenAiSpeech } from './fake-openai-speech.js';

const fake = new FakeOpenAiSpeech();
const KEY = 'sk-test-secret-key-0123456789';

beforeAll(() => fake.start());
afterAll(() => fake.stop());
beforeEach(() => {
  fake.transcriptions.length = 0;
  fake.abortedRequests = 0;
  fake.transcribe = () => ({ status: 200, body: { text: ' hello world ' } });
});

/** Polls a condition for up to two seconds (a server-side effect of a client action). */
async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 400 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
  expect(condition()).toBe(true);
}

/** One second of a 48 kHz tone. */
function utterance(): Int16Array {
  const pcm = new Int16Array(48_000);
  for (let i = 0; i < pcm.length; i++) pcm[i] = Math.round(5000 * Math.sin((2 * Math.PI * 300 * i) / 48_000));
  return pcm;
}

describe('OpenAiSpeechToText', () => {
  it('posts the utterance as a 16 kHz WAV with model, language and prompt, and returns the stripped text', async () => {
    const stt = new OpenAiSpeechToText({ baseUrl: fake.baseUrl, apiKey: KEY, model: 'whisper-1', language: 'en' });
    const text = await stt.transcribe({ pcm: utterance(), sampleRateHz: 48_000 }, { prompt: 'Hermes, Conduit' });
    expect(text).toBe('hello world');
    const [received] = fake.transcriptions;
    expect(received?.authorization).toBe(`Bearer ${KEY}`);
    expect(received?.fields).toEqual({
      model: 'whisper-1',
      response_format: 'json',
      language: 'en',
      prompt: 'Hermes, Conduit',
    });
    expect(received?.fileName).toBe('utterance.wav');
    expect(received?.fileType).toBe('audio/wav');
    const wav = decodeWav(received?.file ?? new Uint8Array());
    expect(wav.sampleRateHz).toBe(16_000);
    expect(wav.pcm.length).toBe(16_000);
  });

  it('uploads the audio converted during capture when it is at its upload rate, and converts otherwise', async () => {
    const stt = new OpenAiSpeechToText({ baseUrl: fake.baseUrl, apiKey: KEY, model: 'whisper-1' });
    expect(stt.uploadSampleRateHz).toBe(16_000);
    const converted = new Int16Array(16_000).fill(1234);
    await stt.transcribe({
      pcm: utterance(),
      sampleRateHz: 48_000,
      converted: { pcm: converted, sampleRateHz: 16_000 },
    });
    const wav = decodeWav(fake.transcriptions[0]?.file ?? new Uint8Array());
    expect(wav.pcm).toEqual(converted);
    // A conversion at another rate is not used.
    await stt.transcribe({
      pcm: utterance(),
      sampleRateHz: 48_000,
      converted: { pcm: converted, sampleRateHz: 24_000 },
    });
    const other = decodeWav(fake.transcriptions[1]?.file ?? new Uint8Array());
    expect(other.sampleRateHz).toBe(16_000);
    expect(other.pcm.every((sample) => sample === 1234)).toBe(false);
  });

  it('can upload at the utterance rate and without a key (local servers)', async () => {
    fake.apiKey = null;
    try {
      const stt = new OpenAiSpeechToText({ baseUrl: `${fake.baseUrl}/`, model: 'local', uploadSampleRateHz: null });
      await stt.transcribe({ pcm: utterance(), sampleRateHz: 48_000 });
      const [received] = fake.transcriptions;
      expect(received?.authorization).toBeUndefined();
      expect(decodeWav(received?.file ?? new Uint8Array()).sampleRateHz).toBe(48_000);
    } finally {
      fake.apiKey = KEY;
    }
  });

  it('reports an upstream error with its status and message, never the key', async () => {
    const stt = new OpenAiSpeechToText({ baseUrl: fake.baseUrl, apiKey: 'sk-wrong-key-abcdefgh', model: 'whisper-1' });
    const failure = await stt.transcribe({ pcm: utterance(), sampleRateHz: 48_000 }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(SpeechProviderError);
    const error = failure as SpeechProviderError;
    expect(error.status).toBe(401);
    expect(error.message).toMatch(/^transcription failed with HTTP 401: Incorrect API key provided/);
    expect(error.message).not.toContain('sk-wro');
    expect(error.message).not.toContain(KEY);
  });

  it('rejects an answer without a text field', async () => {
    fake.transcribe = () => ({ status: 200, body: { transcript: 'x' } });
    const stt = new OpenAiSpeechToText({ baseUrl: fake.baseUrl, apiKey: KEY, model: 'whisper-1' });
    await expect(stt.transcribe({ pcm: utterance(), sampleRateHz: 48_000 })).rejects.toThrow(/no "text" string/);
  });

  it('cancels the request when the caller aborts', async () => {
    fake.transcribe = () => new Promise(() => undefined);
    const stt = new OpenAiSpeechToText({ baseUrl: fake.baseUrl, apiKey: KEY, model: 'whisper-1' });
    const controller = new AbortController();
    const pending = stt.transcribe({ pcm: utterance(), sampleRateHz: 48_000 }, { signal: controller.signal });
    await until(() => fake.transcriptions.length === 1);
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    // The server sees the connection go away: the request is really cancelled, not just ignored.
    await until(() => fake.abortedRequests === 1);
  });

  it('times out with a provider error', async () => {
    fake.transcribe = () => new Promise(() => undefined);
    const stt = new OpenAiSpeechToText({ baseUrl: fake.baseUrl, apiKey: KEY, model: 'whisper-1', timeoutMs: 100 });
    await expect(stt.transcribe({ pcm: utterance(), sampleRateHz: 48_000 })).rejects.toThrow(/timed out/);
  });

  it('refuses a base URL that is not http(s) or carries credentials', () => {
    expect(() => new OpenAiSpeechToText({ baseUrl: 'ftp://x/v1', model: 'm' })).toThrow(SpeechProviderError);
    expect(() => new OpenAiSpeechToText({ baseUrl: 'https://user:pw@x/v1', model: 'm' })).toThrow(/own setting/);
  });
});
