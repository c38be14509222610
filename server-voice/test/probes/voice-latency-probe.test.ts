import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { pcmToBytes } from '../../src/audio/pcm.js';
import { parseAudioSettings } from '../../src/audio/settings.js';
import { voiceConfig } from '../../src/config.js';
import { memoryLogger } from '../../src/log.js';
import { reasoningAcknowledgement } from '../../src/probes/local-gateway.js';
import { memoryIo } from '../../src/probes/probe-io.js';
import {
  FIRST_SENTENCE_ANSWER,
  isFirstSentenceAnswer,
  runVoiceLatencyProbe,
  voiceProbeCli,
  VoiceProbeFailure,
} from '../../src/probes/voice-latency.js';
import { ScriptedSpeechToText, ScriptedTextToSpeech } from '../../src/providers/scripted.js';
import { startFakeHermesDashboard, type FakeHermesDashboard } from '../../src/testing/fake-hermes-dashboard.js';
import { startFakeUpstreams, type FakeUpstreams } from '../../src/testing/fake-upstreams.js';
import { toneSpeech } from '../../src/testing/gateway-process.js';

const KEY = 'voice-probe-key';
const TOKEN = 'voice-probe-dashboard';
/** The fake Hermes' answer and the dashboard's command behaviour, switched per test. */
let answer = ['Yes. ', FIRST_SENTENCE_ANSWER.slice(5)];
let commandsFail = false;
let upstream: FakeUpstreams;
let dashboard: FakeHermesDashboard;
let app: FastifyInstance;
let url: string;
const speech = toneSpeech(0.8, 0.5, 0.2);

beforeAll(async () => {
  upstream = await startFakeUpstreams({ reply: () => answer });
  dashboard = await startFakeHermesDashboard({
    token: TOKEN,
    answer: (command) =>
      commandsFail ? { error: 'reasoning is locked by the operator' } : reasoningAcknowledgement(command),
  });
  app = await buildApp(
    voiceConfig({
      apiKey: KEY,
      agent: {
        kind: 'hermes',
        baseUrl: upstream.hermesBaseUrl,
        apiKey: '',
        commands: { dashboardUrl: dashboard.url, token: TOKEN },
      },
      audio: parseAudioSettings({ vad_backend: 'rms', silence_duration: 0.5 }),
    }),
    {
      stt: new ScriptedSpeechToText(['Is water made of hydrogen and oxygen?']),
      tts: new ScriptedTextToSpeech(),
      logger: memoryLogger(),
    },
  );
  url = await app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  await app.close();
  await dashboard.close();
  await upstream.close();
});

describe('the voice latency probe against the gateway', () => {
  it('--case first_sentence --turns 2 --reasoning low: one call, identical PCM, a response per reply, caption timings', async () => {
    answer = ['Yes. ', FIRST_SENTENCE_ANSWER.slice(5)];
    const report = await runVoiceLatencyProbe({
      baseUrl: url,
      apiKey: KEY,
      case: 'first_sentence',
      turns: 2,
      reasoning: 'low',
      speech,
    });
    expect(report.valid).toBe(true);
    expect(report.call_id).toMatch(/^call_/);
    expect(report.fixture_sha256).toBe(createHash('sha256').update(pcmToBytes(speech)).digest('hex'));
    expect(report.turns.map((t) => t.turn)).toEqual([1, 2]);
    const [first, second] = report.turns;
    expect(first?.response_id).toMatch(/^resp_/);
    expect(second?.response_id).not.toBe(first?.response_id);
    for (const turn of report.turns) {
      expect(turn).toMatchObject({ reference: 'speech_end', valid: true, answer_words: 8 });
      // The endpoint follows the 0.5 s silence target after the speech ends.
      expect(turn.endpoint_ms).toBeGreaterThanOrEqual(450);
      expect(turn.first_audible_rtp_ms).toBeGreaterThanOrEqual(turn.first_audio_event_ms! - 100);
      expect(turn.caption_after_speech_s).toBeGreaterThan(0);
      expect(typeof turn.caption_to_audio_event_s).toBe('number');
      expect(typeof turn.caption_to_audible_rtp_s).toBe('number');
      expect(turn.answer).toBeUndefined();
    }
    // The session-only command reached Hermes as a command, once, before the turns.
    const commands = dashboard.requests.filter((r) => r.method === 'slash.exec').map((r) => r.params.command);
    expect(commands).toEqual(['/reasoning low']);
  });

  it('first_sentence rejects a different answer', async () => {
    answer = ['No. ', 'Water is a kind of fire.'];
    const report = await runVoiceLatencyProbe({
      baseUrl: url,
      apiKey: KEY,
      case: 'first_sentence',
      speech,
      showAnswer: true,
    });
    expect(report.valid).toBe(false);
    expect(report.turns[0]?.invalid).toEqual(['first_sentence answer is not the fixed two sentences starting "Yes."']);
    expect(report.turns[0]?.answer).toBe('No. Water is a kind of fire.');
    expect(isFirstSentenceAnswer(`${FIRST_SENTENCE_ANSWER} And more.`)).toBe(false);
    expect(isFirstSentenceAnswer(` ${FIRST_SENTENCE_ANSWER} `)).toBe(true);
  });

  it('a refused /reasoning command fails the probe before anything is spoken', async () => {
    commandsFail = true;
    try {
      const failure = runVoiceLatencyProbe({ baseUrl: url, apiKey: KEY, case: 'fact', reasoning: 'high', speech });
      await expect(failure).rejects.toBeInstanceOf(VoiceProbeFailure);
      await expect(failure).rejects.toThrow(/\/reasoning high was not acknowledged: command_failed/);
    } finally {
      commandsFail = false;
    }
  });

  it('the command line refuses bad options with a message and exit 2', async () => {
    for (const [args, message] of [
      [['--turns', '11'], '--turns must be an integer from 1 to 10'],
      [['--case', 'weather'], '--case must be one of greeting, fact, calculation, first_sentence'],
      [['--reasoning', 'extreme'], '--reasoning must be one of profile, low, medium, high'],
      [['--gateway', url], '--key is required with --gateway'],
    ] as const) {
      const io = memoryIo();
      expect(await voiceProbeCli([...args], io)).toBe(2);
      expect(io.stderr.join('\n')).toContain(message);
    }
  });
});
