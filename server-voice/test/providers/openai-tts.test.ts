import { createServer, type AddressInfo, type Socket } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { concatPcm, pcmToBytes } from '../../src/audio/pcm.js';
import { OpenAiTextToSpeech } from '../../src/providers/openai-tts.js';
import { SpeechProviderError } from '../../src/providers/types.js';
import { FakeOpenAiSpeech } from './fake-openai-speech.js';

const fake = new FakeOpenAiSpeech();
const KEY = 'sk-test-secret-key-0123456789';

beforeAll(() => fake.start());
afterAll(() => fake.stop());
beforeEach(() => {
  fake.speeches.length = 0;
  fake.abortedRequests = 0;
});

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 400 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
  expect(condition()).toBe(true);
}

/** 24 kHz PCM with distinct values, so any byte misalignment shows. */
function ramp(samples: number): Int16Array {
  const pcm = new Int16Array(samples);
  for (let i = 0; i < samples; i++) pcm[i] = ((i * 7919) % 65_536) - 32_768;
  return pcm;
}

function split(bytes: Uint8Array, size: number): Uint8Array[] {
  const parts: Uint8Array[] = [];
  for (let start = 0; start < bytes.length; start += size) parts.push(bytes.slice(start, start + size));
  return parts;
}

const tts = (options: Partial<ConstructorParameters<typeof OpenAiTextToSpeech>[0]> = {}): OpenAiTextToSpeech =>
  new OpenAiTextToSpeech({ baseUrl: fake.baseUrl, apiKey: KEY, model: 'gpt-4o-mini-tts', voice: 'alloy', ...options });

async function collect(iterable: AsyncIterable<Int16Array>): Promise<Int16Array> {
  const chunks: Int16Array[] = [];
  for await (const chunk of iterable) chunks.push(chunk);
  return concatPcm(chunks);
}

describe('OpenAiTextToSpeech', () => {
  it('asks for pcm and reassembles samples split across 137-byte HTTP chunks exactly', async () => {
    const audio = ramp(12_001);
    fake.speak = () => ({ chunks: split(pcmToBytes(audio), 137) });
    const provider = tts({ speed: 1.25, instructions: 'calm' });
    expect(provider.sampleRateHz).toBe(24_000);
    expect(await collect(provider.synthesize('Hello there.'))).toEqual(audio);
    expect(fake.speeches[0]?.body).toEqual({
      model: 'gpt-4o-mini-tts',
      input: 'Hello there.',
      voice: 'alloy',
      response_format: 'pcm',
      speed: 1.25,
      instructions: 'calm',
    });
    expect(fake.speeches[0]?.authorization).toBe(`Bearer ${KEY}`);
  });

  it('streams: the first audio arrives while the server is still synthesizing', async () => {
    let release: () => void = () => undefined;
    const rest = new Promise<void>((resolve) => (release = resolve));
    fake.speak = () => ({ chunks: [pcmToBytes(ramp(480)), { after: rest }, pcmToBytes(ramp(480))] });
    const iterator = tts().synthesize('Hi', { voice: 'nova' })[Symbol.asyncIterator]();
    const first = await iterator.next();
    expect(first.done).toBe(false);
    expect(first.value).toEqual(ramp(480));
    release();
    expect((await iterator.next()).value).toEqual(ramp(480));
    expect((await iterator.next()).done).toBe(true);
    expect(fake.speeches[0]?.body.voice).toBe('nova');
  });

  it('cancels the request when the caller aborts mid-stream or stops iterating', async () => {
    fake.speak = () => ({ chunks: [pcmToBytes(ramp(480)), { after: new Promise(() => undefined) }] });
    const controller = new AbortController();
    const iterator = tts().synthesize('Long reply', { signal: controller.signal })[Symbol.asyncIterator]();
    await iterator.next();
    controller.abort();
    await expect(iterator.next()).rejects.toMatchObject({ name: 'AbortError' });
    await until(() => fake.abortedRequests === 1);

    // Barge-in: the consumer simply stops iterating.
    for await (const chunk of tts().synthesize('Another')) {
      expect(chunk.length).toBe(480);
      break;
    }
    await until(() => fake.abortedRequests === 2);
  });

  it('reports upstream errors with status and message, never the key', async () => {
    const provider = new OpenAiTextToSpeech({
      baseUrl: fake.baseUrl,
      apiKey: 'sk-bad-key-zzzzzzzz',
      model: 'm',
      voice: 'v',
    });
    const error = await collect(provider.synthesize('Hi')).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(SpeechProviderError);
    expect((error as SpeechProviderError).status).toBe(401);
    expect((error as SpeechProviderError).message).not.toMatch(/sk-bad|zzzz/);
  });

  it('refuses a JSON answer in place of audio and a stream that ends inside a sample', async () => {
    fake.speak = () => ({ contentType: 'application/json', chunks: [new TextEncoder().encode('{"ok":true}')] });
    await expect(collect(tts().synthesize('Hi'))).rejects.toThrow(/instead of PCM audio/);
    fake.speak = () => ({ chunks: [new Uint8Array(5)] });
    await expect(collect(tts().synthesize('Hi'))).rejects.toThrow(/inside a PCM16 sample/);
  });

  it('validates its settings and input', async () => {
    expect(() => tts({ speed: 5 })).toThrow(/speed/);
    expect(() => tts({ voice: ' ' })).toThrow(/voice/);
    await expect(collect(tts().synthesize('x'.repeat(4097)))).rejects.toThrow(/4096/);
    expect(await collect(tts().synthesize('   '))).toEqual(new Int16Array(0));
    expect(fake.speeches).toHaveLength(0);
  });

  it('times out waiting for the answer headers', async () => {
    // A server that accepts the connection and never answers.
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => {
      sockets.add(socket);
      socket.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as AddressInfo;
    try {
      const provider = new OpenAiTextToSpeech({
        baseUrl: `http://127.0.0.1:${port}/v1`,
        model: 'm',
        voice: 'v',
        timeoutMs: 100,
      });
      await expect(collect(provider.synthesize('Hi'))).rejects.toThrow(/speech synthesis timed out/);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});
