import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { ScriptedAgent } from '../src/agent/scripted-agent.js';
import { voiceConfig } from '../src/config.js';
import { memoryLogger } from '../src/log.js';
import { parseAudioSettings } from '../src/audio/settings.js';
import { ScriptedSpeechToText, ScriptedTextToSpeech } from '../src/providers/scripted.js';
import { RealtimeClient } from '../src/testing/realtime-client.js';
import { toneSpeech } from './support/gateway-process.js';

const KEY = 'turns-key';
let app: FastifyInstance;
let url: string;

beforeAll(async () => {
  app = await buildApp(
    voiceConfig({
      apiKey: KEY,
      bargeIn: true,
      audio: parseAudioSettings({ vad_backend: 'rms', silence_duration: 0.5 }),
    }),
    {
      stt: new ScriptedSpeechToText(['tell me a long story']),
      // A long reply: about eight seconds of speech.
      tts: new ScriptedTextToSpeech({ samplesFor: (_text, rate) => rate * 8 }),
      agent: new ScriptedAgent(() => [{ delta: 'Once upon a time there was a very long story.' }]),
      logger: memoryLogger(),
    },
  );
  url = await app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(() => app.close());

describe('spoken turns on a call (in-process gateway, werift client)', () => {
  it('barge-in: speech over a reply cancels it at once and clears queued audio', async () => {
    const client = await RealtimeClient.connect({ baseUrl: url, apiKey: KEY });
    try {
      await client.speak(toneSpeech(0.8, 0.5));
      const started = await client.waitForType('output_audio_buffer.started', { timeoutMs: 20_000 });
      const from = client.events.indexOf(started);
      void client.speak(toneSpeech(0.8, 0));
      const done = await client.waitForType('response.done', { from, timeoutMs: 20_000 });
      expect(done.event).toMatchObject({ response: { status: 'cancelled' } });
      // The gateway publishes done, cleared and the new speech_started together; let them all arrive.
      await client.waitForType('input_audio_buffer.speech_started', { from, timeoutMs: 10_000 });
      const after = client.types().slice(from);
      expect(after).toContain('output_audio_buffer.cleared');
      expect(after).toContain('input_audio_buffer.speech_started');
      expect(after).not.toContain('output_audio_buffer.stopped');
      // Speech stopped arriving: no audible frames a little after the cancellation.
      await client.waitUntil(
        () => (client.packets.at(-1)?.atMs ?? 0) > done.atMs + 400 || undefined,
        10_000,
        'packets',
      );
      expect(
        client.packets.filter((p) => p.atMs > done.atMs + 300 && p.atMs < done.atMs + 400 && p.peak > 500),
      ).toEqual([]);
    } finally {
      await client.close();
    }
  });

  it('mute ignores the microphone; unmute recalibrates and listens again', async () => {
    const client = await RealtimeClient.connect({ baseUrl: url, apiKey: KEY });
    try {
      await client.waitForType('session.created');
      client.send({ type: 'hermes.input_audio.state', muted: true });
      await client.waitForEvent((e) => e.type === 'hermes.input_audio.state_updated' && e.muted);
      await client.speak(toneSpeech(0.8, 0.5, 0.8));
      expect(client.types()).not.toContain('input_audio_buffer.speech_started');
      client.send({ type: 'hermes.input_audio.state', muted: false });
      await client.waitForEvent((e) => e.type === 'hermes.input_audio.state_updated' && !e.muted);
      await client.speak(toneSpeech(0.8, 0.6));
      await client.waitForType('input_audio_buffer.speech_started', { timeoutMs: 10_000 });
    } finally {
      await client.close();
    }
  });
});
