import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { parseAudioSettings } from '../src/audio/settings.js';
import { voiceConfig, type AgentConfig } from '../src/config.js';
import { memoryLogger } from '../src/log.js';
import { ScriptedSpeechToText, ScriptedTextToSpeech } from '../src/providers/scripted.js';
import { startFakeHermesDashboard, type FakeHermesDashboard } from '../src/testing/fake-hermes-dashboard.js';
import { startFakeUpstreams, type FakeUpstreams } from '../src/testing/fake-upstreams.js';
import { toneSpeech } from '../src/testing/gateway-process.js';
import { RealtimeClient } from '../src/testing/realtime-client.js';

const KEY = 'commands-key';
const DASHBOARD_TOKEN = 'dashboard-session-token';

/** A gateway with the given agent, a transcriber that hears `transcripts` in order, and instant speech. */
async function gateway(agent: AgentConfig, transcripts: string[]): Promise<{ app: FastifyInstance; url: string }> {
  const app = await buildApp(
    voiceConfig({ apiKey: KEY, agent, audio: parseAudioSettings({ vad_backend: 'rms', silence_duration: 0.5 }) }),
    { stt: new ScriptedSpeechToText(transcripts), tts: new ScriptedTextToSpeech(), logger: memoryLogger() },
  );
  return { app, url: await app.listen({ host: '127.0.0.1', port: 0 }) };
}

function typed(client: RealtimeClient, text: string): void {
  client.send({
    type: 'conversation.item.create',
    item: { type: 'message', role: 'user', content: [{ type: 'input_text', text }] },
  });
  client.send({ type: 'response.create' });
}

describe('native Hermes slash commands on a call with the Hermes agent', () => {
  let upstream: FakeUpstreams;
  let dashboard: FakeHermesDashboard;
  let app: FastifyInstance;
  let url: string;

  beforeAll(async () => {
    upstream = await startFakeUpstreams({ reply: (text) => ['Chat answer to ', text, '.'] });
    dashboard = await startFakeHermesDashboard({
      token: DASHBOARD_TOKEN,
      answer: (command) => ({ output: `Hermes ran ${command}.` }),
    });
    ({ app, url } = await gateway(
      {
        kind: 'hermes',
        baseUrl: upstream.hermesBaseUrl,
        apiKey: '',
        commands: { dashboardUrl: dashboard.url, token: DASHBOARD_TOKEN },
      },
      ['Slash reasoning high.', 'Slash the budget by half.'],
    ));
  });
  afterAll(async () => {
    await app.close();
    await dashboard.close();
    await upstream.close();
  });

  it('a typed /command reaches Hermes as a command and its answer comes back as a captioned reply', async () => {
    const client = await RealtimeClient.connect({ baseUrl: url, apiKey: KEY, microphone: false });
    try {
      typed(client, '/reasoning low');
      const done = await client.waitForType('response.done', { timeoutMs: 10_000 });
      expect(done.event).toMatchObject({
        response: { status: 'completed', output: [{ content: [{ transcript: 'Hermes ran /reasoning low.' }] }] },
      });
      expect(client.types()).toContain('response.output_audio_transcript.delta');
      expect(dashboard.requests.filter((r) => r.method === 'slash.exec').map((r) => r.params.command)).toEqual([
        '/reasoning low',
      ]);
      // The command never went to the model as chat text.
      expect(upstream.requests.filter((r) => r.startsWith('POST /v1/runs'))).toEqual([]);
      // Ordinary text still goes to the agent.
      const from = client.events.length;
      typed(client, 'what is /reasoning?');
      const chat = await client.waitForType('response.done', { from, timeoutMs: 10_000 });
      expect(chat.event).toMatchObject({
        response: { output: [{ content: [{ transcript: 'Chat answer to what is /reasoning?.' }] }] },
      });
      expect(upstream.bodies).toMatchObject([{ input: 'what is /reasoning?' }]);
    } finally {
      await client.close();
    }
  });

  it('"slash reasoning high" said reaches Hermes as /reasoning high; "slash the budget" stays words', async () => {
    const client = await RealtimeClient.connect({ baseUrl: url, apiKey: KEY });
    try {
      await client.speak(toneSpeech(0.8, 0.5, 0.8));
      const first = await client.waitForType('response.done', { timeoutMs: 20_000 });
      expect(first.event).toMatchObject({
        response: { status: 'completed', output: [{ content: [{ transcript: 'Hermes ran /reasoning high.' }] }] },
      });
      expect(dashboard.requests.filter((r) => r.method === 'slash.exec').map((r) => r.params.command)).toContain(
        '/reasoning high',
      );
      const from = client.events.indexOf(first) + 1;
      await client.waitForType('output_audio_buffer.stopped', { from: from - 1, timeoutMs: 20_000 });
      await client.speak(toneSpeech(0.8, 0.2, 0.8));
      const second = await client.waitForType('response.done', { from, timeoutMs: 20_000 });
      expect(second.event).toMatchObject({
        response: { output: [{ content: [{ transcript: 'Chat answer to Slash the budget by half..' }] }] },
      });
      expect(upstream.bodies.at(-1)).toMatchObject({ input: 'Slash the budget by half.' });
    } finally {
      await client.close();
    }
  });
});

describe('slash commands with an agent that is not Hermes', () => {
  let upstream: FakeUpstreams;
  let app: FastifyInstance;
  let url: string;

  beforeAll(async () => {
    upstream = await startFakeUpstreams();
    ({ app, url } = await gateway({ kind: 'openai', baseUrl: upstream.openAiBaseUrl, apiKey: '', model: 'm' }, ['x']));
  });
  afterAll(async () => {
    await app.close();
    await upstream.close();
  });

  it('are refused with an error event and never sent as chat', async () => {
    const client = await RealtimeClient.connect({ baseUrl: url, apiKey: KEY, microphone: false });
    try {
      typed(client, '/model gpt-5.6-terra');
      const error = await client.waitForType('error', { timeoutMs: 10_000 });
      expect(error.event).toMatchObject({
        error: {
          type: 'invalid_request_error',
          code: 'command_unavailable',
          message: "/model is a Hermes command, and this gateway's agent (openai:m) is not Hermes, so it was not sent.",
        },
      });
      const done = await client.waitForType('response.done', { timeoutMs: 10_000 });
      expect(done.event).toMatchObject({ response: { status: 'failed' } });
      expect(upstream.requests.filter((r) => r.includes('/chat/completions'))).toEqual([]);
    } finally {
      await client.close();
    }
  });
});
