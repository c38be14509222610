import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { threadScheduling } from '../src/media/thread-priority.js';
import { RealtimeClient } from '../src/testing/realtime-client.js';
import { startFakeUpstreams, type FakeUpstreams } from '../src/testing/fake-upstreams.js';
import {
  runGatewayExpectingFailure,
  startGatewayProcess,
  toneSpeech,
  type GatewayProcess,
} from '../src/testing/gateway-process.js';

const KEY = 'process-test-key';
let upstream: FakeUpstreams;
let gateway: GatewayProcess;

beforeAll(async () => {
  upstream = await startFakeUpstreams({
    transcript: () => 'What is the weather like?',
    reply: (text) => ['Sunny. ', `You asked: ${text}`],
  });
  gateway = await startGatewayProcess({
    HERMES_REALTIME_API_KEY: KEY,
    HERMES_REALTIME_VAD_BACKEND: 'rms',
    HERMES_REALTIME_SILENCE_DURATION: '0.5',
    HERMES_REALTIME_AGENT: 'openai',
    HERMES_REALTIME_AGENT_URL: upstream.openAiBaseUrl,
    HERMES_REALTIME_AGENT_MODEL: 'fake-model',
    HERMES_REALTIME_AGENT_KEY: 'agent-secret-key',
    HERMES_REALTIME_STT_BASE_URL: upstream.openAiBaseUrl,
    HERMES_REALTIME_TTS_PROVIDER: 'openai',
    HERMES_REALTIME_TTS_BASE_URL: upstream.openAiBaseUrl,
  });
});
afterAll(async () => {
  await gateway?.stop();
  await upstream?.close();
});

describe('a real gateway process with a werift client', () => {
  it('completes a spoken turn: endpoint, transcript, streamed reply, audible Opus back', async () => {
    const client = await RealtimeClient.connect({ baseUrl: gateway.url, apiKey: KEY });
    try {
      await client.waitForType('session.created');
      const spokeAt = performance.now();
      await client.speak(toneSpeech(1.2, 0.6));
      const stopped = await client.waitForType('output_audio_buffer.stopped', { timeoutMs: 20_000 });
      const types = client.types();
      const expectedOrder = [
        'input_audio_buffer.speech_started',
        'input_audio_buffer.speech_stopped',
        'conversation.item.input_audio_transcription.completed',
        'response.created',
        'output_audio_buffer.started',
        'response.output_audio_transcript.done',
        'response.done',
        'output_audio_buffer.stopped',
      ];
      const positions = expectedOrder.map((type) => types.indexOf(type));
      expect(positions.every((p) => p >= 0)).toBe(true);
      expect([...positions].sort((a, b) => a - b)).toEqual(positions);
      const transcription = client.events.find(
        (e) => e.event.type === 'conversation.item.input_audio_transcription.completed',
      );
      expect(transcription?.event).toMatchObject({ transcript: 'What is the weather like?' });
      const done = client.events.find((e) => e.event.type === 'response.output_audio_transcript.done');
      expect(done?.event).toMatchObject({ transcript: 'Sunny. You asked: What is the weather like?' });
      expect(client.firstAudiblePacket(spokeAt)).toBeDefined();
      expect(client.packets.filter((p) => p.atMs <= stopped.atMs && p.peak > 500).length).toBeGreaterThanOrEqual(15);
      expect(upstream.requests).toContain('POST /v1/audio/transcriptions');
    } finally {
      await client.close();
    }
  });

  it('completes a typed turn on the alias path, and answers response.cancel', async () => {
    const client = await RealtimeClient.connect({ baseUrl: gateway.url, apiKey: KEY, path: '/realtime/calls' });
    try {
      await client.waitForType('session.created');
      client.send({
        type: 'conversation.item.create',
        item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Hello' }] },
      });
      client.send({ type: 'response.create' });
      await client.waitForType('output_audio_buffer.stopped', { timeoutMs: 20_000 });
      const done = client.events.find((e) => e.event.type === 'response.output_audio_transcript.done');
      expect(done?.event).toMatchObject({ transcript: 'Sunny. You asked: Hello' });
      const from = client.events.length;
      client.send({ type: 'response.cancel' });
      const error = await client.waitForType('error', { from });
      expect(error.event).toMatchObject({ error: { code: 'no_active_response' } });
    } finally {
      await client.close();
    }
  });

  it('answers malformed input on one call with the contract errors and never disturbs another call', async () => {
    const noisy = await RealtimeClient.connect({ baseUrl: gateway.url, apiKey: KEY });
    const calm = await RealtimeClient.connect({ baseUrl: gateway.url, apiKey: KEY });
    try {
      await noisy.waitForType('session.created');
      await calm.waitForType('session.created');
      const garbage = [
        '{',
        '[]',
        'null',
        JSON.stringify({ type: 'nope' }),
        JSON.stringify({
          type: 'conversation.item.create',
          item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: ' ' }] },
        }),
      ];
      for (const message of garbage) noisy.send(message);
      for (let i = 0; i < 50; i += 1) noisy.sendRawPayload(Buffer.from([0xff, 0xfe, i]));
      const errors = await noisy.waitUntil(
        () => {
          const found = noisy.events.filter((e) => e.event.type === 'error');
          return found.length >= 5 ? found : undefined;
        },
        10_000,
        'errors',
      );
      expect(errors.map((e) => (e.event.type === 'error' ? e.event.error.code : ''))).toEqual([
        'invalid_json',
        'invalid_event',
        'invalid_event',
        'unsupported_client_event',
        'invalid_conversation_item',
      ]);
      calm.send({
        type: 'conversation.item.create',
        item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Still there?' }] },
      });
      calm.send({ type: 'response.create' });
      await calm.waitForType('response.done', { timeoutMs: 20_000 });
      expect(calm.types()).not.toContain('error');
      // The noisy call itself keeps working after its bad input.
      noisy.send({
        type: 'conversation.item.create',
        item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'ok' }] },
      });
      noisy.send({ type: 'response.create' });
      await noisy.waitForType('response.done', { timeoutMs: 20_000 });
    } finally {
      await noisy.close();
      await calm.close();
    }
  });

  it('logs ids and timings but no transcript, reply text or credentials', () => {
    const log = gateway.output();
    // The listening line reports the helper threads it put below the event loop (Linux).
    const listening = JSON.parse(log.split('\n').find((line) => line.includes('"event":"listening"')) ?? '{}') as {
      helper_threads_lowered?: number;
    };
    expect(listening.helper_threads_lowered).toBeGreaterThan(0);
    expect(log).toContain('"event":"transcribed"');
    expect(log).not.toContain('What is the weather');
    expect(log).not.toContain('Sunny');
    expect(log).not.toContain('agent-secret-key');
    expect(log).not.toContain(KEY);
  });

  it('paces outbound audio in its media sender process, which leaves with the gateway', async () => {
    const lines = gateway
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const started = lines.find((line) => line.event === 'media_sender_started') as
      { pid: number; policy: string; priority: number } | undefined;
    const ready = lines.find((line) => line.event === 'gateway_ready');
    expect(started?.pid).toBeGreaterThan(0);
    expect(ready).toMatchObject({ media_sender: 'process', media_sender_scheduling: started?.policy });
    // What it reported is what the kernel gave its thread.
    expect(threadScheduling(started!.pid)).toMatchObject({ policy: started!.policy, priority: started!.priority });
    // The calls of this file handed their streams over (none fell back to pacing in the gateway).
    expect(lines.some((line) => line.event === 'media_sender_local')).toBe(false);
    await gateway.stop();
    const end = performance.now() + 5000;
    while (existsSync(`/proc/${started!.pid}`) && performance.now() < end)
      await new Promise((resolve) => setTimeout(resolve, 50));
    expect(existsSync(`/proc/${started!.pid}`)).toBe(false);
  });
});

describe('startup', () => {
  it('fails closed without a key and names a bad setting', async () => {
    const noKey = await runGatewayExpectingFailure({});
    expect(noKey.code).toBe(1);
    expect(noKey.output).toContain('HERMES_REALTIME_API_KEY');
    const badSilence = await runGatewayExpectingFailure({
      HERMES_REALTIME_API_KEY: 'k',
      HERMES_REALTIME_SILENCE_DURATION: '9',
    });
    expect(badSilence.code).toBe(1);
    expect(badSilence.output).toContain('silence_duration');
  });

  it('does not start when the realtime platform is disabled (HERMES_REALTIME_ENABLED=false)', async () => {
    const disabled = await runGatewayExpectingFailure({
      HERMES_REALTIME_API_KEY: 'k',
      HERMES_REALTIME_ENABLED: 'false',
    });
    expect(disabled.code).toBe(1);
    expect(disabled.output).toContain(
      'HERMES_REALTIME_ENABLED is false: the realtime platform is disabled for this profile, so the voice gateway does not start.',
    );
    expect(disabled.output).not.toContain('"event":"listening"');
  });
});
