import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { ScriptedAgent } from '../src/agent/scripted-agent.js';
import { parseAudioSettings } from '../src/audio/settings.js';
import { voiceConfig } from '../src/config.js';
import { memoryLogger } from '../src/log.js';
import { ScriptedSpeechToText, ScriptedTextToSpeech } from '../src/providers/scripted.js';
import { toneSpeech } from '../src/testing/gateway-process.js';
import { RealtimeClient } from '../src/testing/realtime-client.js';

/**
 * The GA buffer events on a real call (werift client, Opus both ways): `input_audio_buffer.commit` and
 * `.clear` act on what the server VAD is capturing, `output_audio_buffer.clear` stops a reply being heard.
 */
const KEY = 'buffers-key';
/** Long enough that only a commit ends an utterance within the test's bounds. */
const SILENCE_SECONDS = 4;
let app: FastifyInstance;
let url: string;
const stt = new ScriptedSpeechToText(['commit me']);

beforeAll(async () => {
  app = await buildApp(
    voiceConfig({
      apiKey: KEY,
      audio: parseAudioSettings({ vad_backend: 'rms', silence_duration: SILENCE_SECONDS }),
      mediaSender: 'process',
    }),
    {
      stt,
      // About eight seconds of speech per reply, so it is still playing when the client clears it.
      tts: new ScriptedTextToSpeech({ samplesFor: (_text, rate) => rate * 8 }),
      agent: new ScriptedAgent(() => [{ delta: 'A long answer.' }]),
      logger: memoryLogger(),
    },
  );
  url = await app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(() => app.close());

describe('GA audio buffer events on a call', () => {
  it('input_audio_buffer.commit ends the utterance now: committed, transcribed and answered', async () => {
    const client = await RealtimeClient.connect({ baseUrl: url, apiKey: KEY });
    try {
      await client.speak(toneSpeech(1.0, 0.5));
      const started = await client.waitForType('input_audio_buffer.speech_started');
      const sentAt = performance.now();
      client.send({ type: 'input_audio_buffer.commit' });
      const committed = await client.waitForType('input_audio_buffer.committed', { timeoutMs: 10_000 });
      expect(committed.event).toMatchObject({ item_id: (started.event as { item_id: string }).item_id });
      // Without the commit the endpoint waits for 4 s of silence.
      expect(committed.atMs - sentAt).toBeLessThan(2000);
      const transcribed = await client.waitForType('conversation.item.input_audio_transcription.completed');
      expect(transcribed.event).toMatchObject({ transcript: 'commit me' });
      await client.waitForType('response.created');
    } finally {
      await client.close();
    }
  });

  it('input_audio_buffer.clear drops the utterance in progress: nothing is transcribed, nothing left to commit', async () => {
    const client = await RealtimeClient.connect({ baseUrl: url, apiKey: KEY });
    const transcriptionsBefore = stt.calls.length;
    try {
      await client.speak(toneSpeech(1.0, 0.5));
      await client.waitForType('input_audio_buffer.speech_started');
      client.send({ type: 'input_audio_buffer.clear' });
      await client.waitForType('input_audio_buffer.cleared');
      client.send({ type: 'input_audio_buffer.commit' });
      const error = await client.waitForType('error');
      expect(error.event).toMatchObject({ error: { code: 'input_audio_buffer_commit_empty' } });
      expect(client.types()).not.toContain('input_audio_buffer.speech_stopped');
      expect(client.types()).not.toContain('input_audio_buffer.committed');
      expect(stt.calls.length).toBe(transcriptionsBefore);
    } finally {
      await client.close();
    }
  });

  it('output_audio_buffer.clear (the SDKs interrupt with it) stops the reply being heard: cancelled, cleared, silent', async () => {
    const client = await RealtimeClient.connect({ baseUrl: url, apiKey: KEY });
    try {
      client.send({
        type: 'conversation.item.create',
        item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Tell me everything' }] },
      });
      client.send({ type: 'response.create' });
      const created = await client.waitForType('response.created');
      const responseId = (created.event as { response: { id: string } }).response.id;
      const started = await client.waitForType('output_audio_buffer.started', { timeoutMs: 10_000 });
      await client.waitUntil(() => client.firstAudiblePacket(started.atMs), 10_000, 'audible reply');
      client.send({ type: 'output_audio_buffer.clear' });
      const cleared = await client.waitForType('output_audio_buffer.cleared');
      expect(cleared.event).toMatchObject({ response_id: responseId });
      expect(client.events.find((e) => e.event.type === 'response.done')?.event).toMatchObject({
        response: { id: responseId, status: 'cancelled' },
      });
      // Eight seconds of speech were coming; shortly after the clear the call is silent.
      await client.waitUntil(
        () => ((client.packets.at(-1)?.atMs ?? 0) > cleared.atMs + 600 ? true : undefined),
        10_000,
        'packets after the clear',
      );
      expect(
        client.packets.filter((p) => p.atMs > cleared.atMs + 300 && p.atMs < cleared.atMs + 600 && p.peak > 500),
      ).toEqual([]);
    } finally {
      await client.close();
    }
  });
});
