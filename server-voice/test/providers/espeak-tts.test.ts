import { describe, expect, it } from 'vitest';
import { concatPcm, pcmRms } from '../../src/audio/pcm.js';
import { ESPEAK_SAMPLE_RATE_HZ, EspeakTextToSpeech } from '../../src/providers/espeak-tts.js';
import { SpeechProviderError } from '../../src/providers/types.js';

async function speak(tts: EspeakTextToSpeech, text: string, signal?: AbortSignal): Promise<Int16Array[]> {
  const chunks: Int16Array[] = [];
  for await (const chunk of tts.synthesize(text, signal ? { signal } : {})) chunks.push(chunk);
  return chunks;
}

describe('EspeakTextToSpeech (offline default)', () => {
  const tts = new EspeakTextToSpeech();

  it('speaks a sentence as audible 22 050 Hz PCM of a plausible length, in 100 ms chunks', async () => {
    const chunks = await speak(tts, 'The quick brown fox jumps over the lazy dog.');
    const pcm = concatPcm(chunks);
    expect(tts.sampleRateHz).toBe(ESPEAK_SAMPLE_RATE_HZ);
    const seconds = pcm.length / ESPEAK_SAMPLE_RATE_HZ;
    expect(seconds).toBeGreaterThan(1.5);
    expect(seconds).toBeLessThan(6);
    expect(pcmRms(pcm)).toBeGreaterThan(500);
    expect(chunks.slice(0, -1).every((chunk) => chunk.length === 2205)).toBe(true);
  });

  it('longer text makes longer audio', async () => {
    const short = concatPcm(await speak(tts, 'Yes.'));
    const long = concatPcm(await speak(tts, 'Yes. And then we went to the market to buy some apples.'));
    expect(long.length).toBeGreaterThan(short.length * 3);
  });

  it('speaks text that begins with a dash instead of reading it as an option', async () => {
    const pcm = concatPcm(await speak(tts, '-v is not an option here'));
    expect(pcm.length / ESPEAK_SAMPLE_RATE_HZ).toBeGreaterThan(0.8);
  });

  it('yields nothing for blank text and honours an aborted signal', async () => {
    expect(await speak(tts, '   ')).toEqual([]);
    const controller = new AbortController();
    controller.abort();
    await expect(speak(tts, 'Hello', controller.signal)).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('fails warm-up for a voice espeak-ng does not have', async () => {
    await expect(new EspeakTextToSpeech({ voice: 'zz-qq' }).warmUp()).rejects.toThrow(/voice does not exist/);
    await expect(new EspeakTextToSpeech({ voice: 'en-gb' }).warmUp()).resolves.toBeUndefined();
  });

  it('validates the voice name and speaking rate', () => {
    expect(() => new EspeakTextToSpeech({ voice: 'en-us; rm -rf /' })).toThrow(SpeechProviderError);
    expect(() => new EspeakTextToSpeech({ wordsPerMinute: 1000 })).toThrow(/words per minute/);
  });
});
