import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { ScriptedAgent } from '../src/agent/scripted-agent.js';
import { buildApp } from '../src/app.js';
import { parseAudioSettings } from '../src/audio/settings.js';
import { voiceConfig } from '../src/config.js';
import { memoryLogger } from '../src/log.js';
import { ScriptedSpeechToText, ScriptedTextToSpeech } from '../src/providers/scripted.js';
import { RealtimeClient } from '../src/testing/realtime-client.js';
import { toneSpeech } from '../src/testing/gateway-process.js';

const KEY = 'prefetch-key';

/**
 * Speculative transcription through a real call (AUDIO.md §6): silence_duration 1.0 s and asr_prefetch_silence
 * 0.3 s, so 0.3 s into every pause the gateway transcribes what it has, and at the endpoint reuses that
 * transcript only if nothing audible came after it.
 */
async function gateway(transcripts: string[] = ['what time is it']): Promise<{
  app: FastifyInstance;
  url: string;
  stt: ScriptedSpeechToText;
  log: ReturnType<typeof memoryLogger>;
}> {
  const stt = new ScriptedSpeechToText(transcripts);
  const log = memoryLogger();
  const app = await buildApp(
    voiceConfig({
      apiKey: KEY,
      audio: parseAudioSettings({ vad_backend: 'rms', silence_duration: 1.0, asr_prefetch_silence: 0.3 }),
    }),
    {
      stt,
      tts: new ScriptedTextToSpeech({ samplesFor: (_text, rate) => rate / 2 }),
      agent: new ScriptedAgent(() => [{ delta: 'It is noon.' }]),
      logger: log,
    },
  );
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, url, stt, log };
}

function transcribedLines(log: ReturnType<typeof memoryLogger>): { reused_prefetch: boolean }[] {
  return log.lines
    .filter((line) => line.includes('"event":"transcribed"'))
    .map((line) => JSON.parse(line) as { reused_prefetch: boolean });
}

let open: FastifyInstance | null = null;
let caller: RealtimeClient | null = null;
afterEach(async () => {
  await caller?.close();
  await open?.close();
  caller = null;
  open = null;
});

/** 0.8 s of speech after 0.5 s of quiet, then 1.5 s of quiet: one pause, which ends the turn. */
async function oneSpokenTurn(transcripts: string[]) {
  const { app, url, stt, log } = await gateway(transcripts);
  open = app;
  const client = await RealtimeClient.connect({ baseUrl: url, apiKey: KEY });
  caller = client;
  await client.speak(toneSpeech(0.8, 0.5, 1.5));
  const done = await client.waitForType('conversation.item.input_audio_transcription.completed', {
    timeoutMs: 15_000,
  });
  return { stt, log, client, transcript: (done.event as { transcript?: string }).transcript };
}

describe('speculative transcription on a call', () => {
  it('a pause that ends the turn reuses the early transcript: one request, and the turn is answered', async () => {
    const { stt, log, transcript, client } = await oneSpokenTurn(['what time is it']);
    expect(transcript).toBe('what time is it');
    await client.waitForType('response.done', { timeoutMs: 15_000 });
    expect(stt.calls).toHaveLength(1);
    expect(transcribedLines(log)).toEqual([expect.objectContaining({ reused_prefetch: true })]);
    // The early request carried the whole utterance: the final capture adds only quiet frames to it.
    expect(stt.calls[0]!.audio.pcm.length).toBeGreaterThan(0.8 * 48_000);
  });

  it('speech after an early request discards it; the request of the last pause is the one reused', async () => {
    const { app, url, stt, log } = await gateway();
    open = app;
    const client = await RealtimeClient.connect({ baseUrl: url, apiKey: KEY });
    try {
      // 0.6 s of speech, a 0.6 s pause (past the 0.3 s prefetch point, short of the 1.0 s endpoint), more speech.
      void client.speak(toneSpeech(0.6, 0.5, 0.6));
      await client.speak(toneSpeech(0.6, 0, 1.5));
      await client.waitForType('conversation.item.input_audio_transcription.completed', { timeoutMs: 15_000 });
      // One early request per pause; the first was dropped when speech resumed, the second stood for the turn.
      expect(stt.calls).toHaveLength(2);
      expect(transcribedLines(log)).toEqual([expect.objectContaining({ reused_prefetch: true })]);
      const [first, second] = [stt.calls[0]!.audio.pcm.length, stt.calls[1]!.audio.pcm.length];
      // Pre-roll (0.5 s), the first speech (0.6 s) and 0.3 s of pause; the second adds the rest.
      expect(first).toBeLessThan(1.6 * 48_000);
      expect(second).toBeGreaterThan(first + 0.5 * 48_000);
      expect(client.types().filter((type) => type === 'input_audio_buffer.speech_started')).toHaveLength(1);
    } finally {
      await client.close();
    }
  });

  it('an empty early transcript is not reused: the endpoint asks again', async () => {
    const { stt, log, transcript } = await oneSpokenTurn(['', 'what time is it']);
    expect(transcript).toBe('what time is it');
    expect(stt.calls).toHaveLength(2);
    expect(transcribedLines(log)).toEqual([expect.objectContaining({ reused_prefetch: false })]);
  });
});
