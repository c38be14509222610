import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { parseAudioSettings } from '../../src/audio/settings.js';
import { voiceConfig } from '../../src/config.js';
import { memoryLogger } from '../../src/log.js';
import { memoryIo } from '../../src/probes/probe-io.js';
import { runToolLatencyProbe, TOOL_CASE_PROMPTS, toolProbeCli } from '../../src/probes/tool-latency.js';
import { ScriptedSpeechToText, ScriptedTextToSpeech } from '../../src/providers/scripted.js';
import { startFakeToolAgent, type FakeToolAgent, type ToolAgentFault } from '../../src/testing/fake-tool-agent.js';
import { toneSpeech } from '../../src/testing/gateway-process.js';

const KEY = 'tool-probe-key';
/** The real deadline, shortened: long enough for a prompt answer, short enough for a test. */
const TOOL_TIMEOUT_MS = 400;

interface Gateway {
  app: FastifyInstance;
  url: string;
  agent: FakeToolAgent;
}

async function gateway(fault?: ToolAgentFault): Promise<Gateway> {
  const agent = await startFakeToolAgent(fault ? { fault } : {});
  const app = await buildApp(
    voiceConfig({
      apiKey: KEY,
      agent: { kind: 'openai', baseUrl: agent.baseUrl, apiKey: '', model: 'probe' },
      audio: parseAudioSettings({ vad_backend: 'rms', silence_duration: 0.5 }),
    }),
    {
      stt: new ScriptedSpeechToText([TOOL_CASE_PROMPTS.dependent]),
      tts: new ScriptedTextToSpeech(),
      logger: memoryLogger(),
      toolTimeoutMs: TOOL_TIMEOUT_MS,
    },
  );
  return { app, agent, url: await app.listen({ host: '127.0.0.1', port: 0 }) };
}

let good: Gateway;
beforeAll(async () => {
  good = await gateway();
});
afterAll(async () => {
  await good.app.close();
  await good.agent.close();
});

describe('the tool latency probe against the gateway', () => {
  it('dependent: the second tool gets the first result as its integer argument; timed from text_submitted', async () => {
    const report = await runToolLatencyProbe({ baseUrl: good.url, apiKey: KEY, case: 'dependent' });
    expect(report).toMatchObject({
      valid: true,
      rejections: [],
      final_status: 'completed',
      reference: 'text_submitted',
    });
    expect(report.tool_calls.map((c) => c.name)).toEqual(['probe_seed', 'probe_scale']);
    const seed = (JSON.parse(report.tool_calls[0]!.output!) as { seed: number }).seed;
    expect(JSON.parse(report.tool_calls[1]!.arguments)).toEqual({ seed });
    expect(report.tool_calls[1]!.requested_ms).toBeGreaterThanOrEqual(report.tool_calls[0]!.output_sent_ms!);
    expect(report.done_ms).toBeGreaterThanOrEqual(report.tool_calls[1]!.output_sent_ms!);
    expect(report.first_caption_ms).not.toBeNull();
  });

  it('parallel: independent tools each answered once', async () => {
    const report = await runToolLatencyProbe({ baseUrl: good.url, apiKey: KEY, case: 'parallel' });
    expect(report).toMatchObject({ valid: true, final_status: 'completed' });
    expect(report.tool_calls.map((c) => c.name).sort()).toEqual(['probe_clock', 'probe_moon']);
  });

  it('mixed: one tool fails and the turn still completes', async () => {
    const report = await runToolLatencyProbe({ baseUrl: good.url, apiKey: KEY, case: 'mixed' });
    expect(report).toMatchObject({ valid: true, final_status: 'completed' });
    expect(report.tool_calls.find((c) => c.name === 'probe_broken')?.output).toContain('failed on purpose');
  });

  it('timeout: the gateway deadline fires while the client never answers', async () => {
    const report = await runToolLatencyProbe({ baseUrl: good.url, apiKey: KEY, case: 'timeout' });
    expect(report).toMatchObject({ valid: true, final_status: 'tool_timeout' });
    expect(report.tool_calls).toMatchObject([{ name: 'probe_slow', output: null, output_sent_ms: null }]);
    expect(report.tool_deadline_ms).toBeGreaterThanOrEqual(TOOL_TIMEOUT_MS - 50);
  });

  it('cancel: the client cancels the resumed turn between tools; the model stream is abandoned', async () => {
    const aborted = good.agent.aborted;
    const report = await runToolLatencyProbe({ baseUrl: good.url, apiKey: KEY, case: 'cancel' });
    expect(report).toMatchObject({ valid: true, final_status: 'cancelled' });
    expect(report.tool_calls.map((c) => c.name)).toEqual(['probe_seed']);
    expect(report.cancel_to_done_ms).toBeGreaterThanOrEqual(0);
    // The model's stream, held open after the first result, was abandoned by the cancelled turn.
    await good.agent.waitForAborts(aborted + 1);
    expect(good.agent.aborted).toBe(aborted + 1);
  });

  it('--input voice: the request is spoken through ASR and timed from speech_end', async () => {
    const report = await runToolLatencyProbe({
      baseUrl: good.url,
      apiKey: KEY,
      case: 'dependent',
      input: 'voice',
      speech: toneSpeech(0.8, 0.5, 0.2),
    });
    expect(report).toMatchObject({ valid: true, reference: 'speech_end', final_status: 'completed' });
    // The endpoint waits 0.5 s of silence after the speech ends, before any tool can be asked for.
    expect(report.tool_calls[0]!.requested_ms).toBeGreaterThanOrEqual(450);
  });

  it.each([
    ['wrong_argument', /probe_scale got seed \d+, but probe_seed returned \d+/],
    ['missing_argument', /probe_scale was called without its seed argument/],
    ['out_of_order', /probe_scale was called before probe_seed/],
  ] as const)('a model that gives %s is rejected', async (fault, reason) => {
    const broken = await gateway(fault);
    try {
      const io = memoryIo();
      expect(await toolProbeCli(['--case', 'dependent', '--gateway', broken.url, '--key', KEY], io)).toBe(1);
      const report = JSON.parse(io.stdout.join('\n')) as { valid: boolean; rejections: string[] };
      expect(report.valid).toBe(false);
      expect(report.rejections.join('\n')).toMatch(reason);
    } finally {
      await broken.app.close();
      await broken.agent.close();
    }
  });

  it('the command line refuses an unknown case', async () => {
    const io = memoryIo();
    expect(await toolProbeCli(['--case', 'sideways'], io)).toBe(2);
    expect(io.stderr.join('\n')).toContain('--case must be one of dependent, parallel, mixed, timeout, cancel');
  });
});
