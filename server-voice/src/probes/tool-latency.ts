/**
 * The tool latency probe (`npm run probe:tool-latency`): a werift client declares side-effect-free client
 * function tools, asks for a turn that uses them (typed, or spoken through ASR and the streaming speech path),
 * answers each `response.function_call_arguments.done` as an OpenAI Realtime client does
 * (`function_call_output` + `response.create`), and times every step from its reference: `text_submitted` or
 * `speech_end` (the last voiced frame sent). Cases: `dependent` (the second tool needs the first's integer
 * result), `parallel` (independent tools), `mixed` (one tool fails), `timeout` (the client never answers, the
 * gateway's deadline fires), `cancel` (the client cancels the resumed turn between tools). A call that is
 * missing, out of order or has a wrong argument is rejected: the run is reported invalid.
 */
import { randomInt } from 'node:crypto';
import { parseArgs } from 'node:util';
import type { ServerEvent } from '@conduit/contracts/voice/events';
import { RealtimeClient, type ReceivedEvent } from '../testing/realtime-client.js';
import { spokenSentence } from '../testing/spoken-fixture.js';
import { startFakeToolAgent, TOOL_CASE_PROMPTS, type ToolCase } from '../testing/fake-tool-agent.js';
import { startLocalGateway, type LocalGateway } from './local-gateway.js';
import { lastVoicedFrame } from './voice-latency.js';
import { EXIT_FAILED, EXIT_REFUSED, type ProbeIo } from './probe-io.js';

export const TOOL_CASES = ['dependent', 'parallel', 'mixed', 'timeout', 'cancel'] as const;
export type ToolInput = 'text' | 'voice';
export { TOOL_CASE_PROMPTS, type ToolCase };

const NO_ARGUMENTS = { type: 'object', properties: {}, additionalProperties: false };

/** The client tools the probe declares: side-effect free, each answer fresh. */
const PROBE_TOOLS: Record<string, { description: string; parameters: Record<string, unknown> }> = {
  probe_seed: { description: 'Returns a fresh integer seed.', parameters: NO_ARGUMENTS },
  probe_scale: {
    description: 'Scales a seed returned by probe_seed.',
    parameters: {
      type: 'object',
      properties: { seed: { type: 'integer', description: 'The seed probe_seed returned.' } },
      required: ['seed'],
      additionalProperties: false,
    },
  },
  probe_clock: { description: 'Returns the client clock in milliseconds.', parameters: NO_ARGUMENTS },
  probe_moon: { description: 'Returns a moon phase number.', parameters: NO_ARGUMENTS },
  probe_broken: { description: 'Always fails.', parameters: NO_ARGUMENTS },
  probe_slow: { description: 'Never answers.', parameters: NO_ARGUMENTS },
};

/** Which tools each case declares and must see called (in this order where order matters). */
const CASE_TOOLS: Record<ToolCase, string[]> = {
  dependent: ['probe_seed', 'probe_scale'],
  parallel: ['probe_clock', 'probe_moon'],
  mixed: ['probe_seed', 'probe_broken'],
  timeout: ['probe_slow'],
  cancel: ['probe_seed', 'probe_scale'],
};

/** The multiplier `probe_scale` applies: the answer must carry seed × this, so a stale seed is visible. */
const SCALE_FACTOR = 7;

export interface ToolProbeOptions {
  baseUrl: string;
  apiKey: string;
  case: ToolCase;
  input?: ToolInput;
  /** Per-wait bound in milliseconds (default 60 s: the timeout case waits for the gateway's 30 s deadline). */
  timeoutMs?: number;
  /** 48 kHz mono speech for `--input voice` (default: the case's prompt spoken by espeak-ng). */
  speech?: Int16Array;
}

export interface ToolCallTiming {
  name: string;
  arguments: string;
  call_id: string;
  /** Receipt of `response.function_call_arguments.done`, from the reference. */
  requested_ms: number;
  /** When the probe sent its output (null: not answered, the timeout case). */
  output_sent_ms: number | null;
  output: string | null;
}

export interface ToolProbeReport {
  case: ToolCase;
  input: ToolInput;
  reference: 'text_submitted' | 'speech_end';
  call_id: string;
  tool_calls: ToolCallTiming[];
  final_status: 'completed' | 'failed' | 'cancelled' | 'tool_timeout' | null;
  first_caption_ms: number | null;
  first_audio_event_ms: number | null;
  done_ms: number | null;
  /** timeout: the gateway's `tool_timeout` error, from the function call's receipt. */
  tool_deadline_ms?: number;
  /** cancel: `response.cancel` sent → `response.done` cancelled. */
  cancel_to_done_ms?: number;
  answer_words: number;
  valid: boolean;
  rejections: string[];
}

/** The probe could not run (setup, a wait that timed out). */
export class ToolProbeFailure extends Error {
  override readonly name = 'ToolProbeFailure';
}

function parseObject(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/**
 * The client side of the tools: validates each call against the case and what was returned before, and answers
 * (null: never answer). Rejections are recorded; the gateway still gets an error output so the turn can end.
 */
class ProbeTools {
  readonly rejections: string[] = [];
  private seed: number | null = null;
  private readonly called: string[] = [];

  constructor(private readonly toolCase: ToolCase) {}

  answer(name: string, args: string): string | null {
    this.called.push(name);
    const expected = CASE_TOOLS[this.toolCase];
    if (!expected.includes(name)) return this.reject(`${name} is not a tool of the ${this.toolCase} case`);
    const parsed = parseObject(args);
    if (!parsed) return this.reject(`${name} arguments are not a JSON object`);
    switch (name) {
      case 'probe_seed':
        this.seed = randomInt(1, 10_000);
        return JSON.stringify({ seed: this.seed });
      case 'probe_scale': {
        if (this.seed === null) return this.reject('probe_scale was called before probe_seed');
        const seed = parsed.seed;
        if (seed === undefined) return this.reject('probe_scale was called without its seed argument');
        if (typeof seed !== 'number' || !Number.isInteger(seed))
          return this.reject(`probe_scale got seed ${JSON.stringify(seed)}, not an integer`);
        if (seed !== this.seed)
          return this.reject(`probe_scale got seed ${seed}, but probe_seed returned ${this.seed}`);
        return JSON.stringify({ scaled: seed * SCALE_FACTOR });
      }
      case 'probe_clock':
        return JSON.stringify({ clock_ms: Date.now() });
      case 'probe_moon':
        return JSON.stringify({ phase: randomInt(0, 8) });
      case 'probe_broken':
        return JSON.stringify({ error: 'probe_broken failed on purpose' });
      default:
        return null;
    }
  }

  /** After the run: every tool the case needs was called once (order is checked as calls arrive). */
  checkComplete(): void {
    const expected = CASE_TOOLS[this.toolCase];
    const needed = this.toolCase === 'cancel' ? ['probe_seed'] : expected;
    for (const name of needed)
      if (this.called.filter((called) => called === name).length !== 1)
        this.rejections.push(`${name} was called ${this.called.filter((c) => c === name).length} times, expected once`);
  }

  get expectedScaled(): number | null {
    return this.seed === null ? null : this.seed * SCALE_FACTOR;
  }

  private reject(reason: string): string {
    this.rejections.push(reason);
    return JSON.stringify({ error: reason });
  }
}

const hasFunctionCall = (event: ServerEvent): boolean =>
  event.type === 'response.done' && event.response.output.some((item) => item.type === 'function_call');

/** Runs one case against a gateway and reports its timings and whether the calls were right. */
export async function runToolLatencyProbe(options: ToolProbeOptions): Promise<ToolProbeReport> {
  const input = options.input ?? 'text';
  const timeoutMs = options.timeoutMs ?? 60_000;
  const prompt = TOOL_CASE_PROMPTS[options.case];
  const speech = input === 'voice' ? (options.speech ?? (await spokenSentence(prompt, 1, 2))) : null;
  const tools = new ProbeTools(options.case);
  const client = await RealtimeClient.connect({
    baseUrl: options.baseUrl,
    apiKey: options.apiKey,
    session: {
      type: 'realtime',
      tools: CASE_TOOLS[options.case].map((name) => ({ type: 'function', name, ...PROBE_TOOLS[name] })),
      tool_choice: 'auto',
    },
  });
  try {
    await client.waitForType('session.created', { timeoutMs });
    let cursor = client.events.length;
    let referenceAt = 0;
    if (speech) {
      const voiced = lastVoicedFrame(speech);
      await client.speak(speech, (index, atMs) => {
        if (index === voiced) referenceAt = atMs;
      });
    } else {
      referenceAt = performance.now();
      client.send({
        type: 'conversation.item.create',
        item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: prompt }] },
      });
      client.send({ type: 'response.create' });
    }
    const since = (atMs: number) => Math.round(atMs - referenceAt);
    const calls: ToolCallTiming[] = [];
    let finalStatus: ToolProbeReport['final_status'] = null;
    let final: ReceivedEvent | null = null;
    let cancelSentAt: number | null = null;
    let deadlineMs: number | undefined;
    let answeredOnce = false;
    while (finalStatus === null) {
      const index = cursor;
      const received = await client
        .waitUntil(() => client.events[index], timeoutMs, 'the next event')
        .catch((error: unknown) => {
          throw new ToolProbeFailure(error instanceof Error ? error.message : String(error));
        });
      cursor += 1;
      const event = received.event;
      if (event.type === 'response.function_call_arguments.done') {
        const output = tools.answer(event.name, event.arguments);
        const timing: ToolCallTiming = {
          name: event.name,
          arguments: event.arguments,
          call_id: event.call_id,
          requested_ms: since(received.atMs),
          output_sent_ms: null,
          output,
        };
        calls.push(timing);
        if (output === null) continue;
        client.send({
          type: 'conversation.item.create',
          item: { type: 'function_call_output', call_id: event.call_id, output },
        });
        client.send({ type: 'response.create' });
        timing.output_sent_ms = since(performance.now());
        answeredOnce = true;
      } else if (event.type === 'response.created' && options.case === 'cancel' && answeredOnce && !cancelSentAt) {
        // Mid-tool: the turn resumed with the first result and the model has not reached the next tool yet.
        client.send({ type: 'response.cancel' });
        cancelSentAt = performance.now();
      } else if (event.type === 'error' && event.error.code === 'tool_timeout') {
        finalStatus = 'tool_timeout';
        final = received;
        const pending = calls.find((call) => call.output === null);
        if (pending) deadlineMs = since(received.atMs) - pending.requested_ms;
      } else if (event.type === 'error') {
        tools.rejections.push(`the gateway answered error ${event.error.code}: ${event.error.message}`);
      } else if (event.type === 'response.done' && !hasFunctionCall(event) && event.response.status !== 'in_progress') {
        finalStatus = event.response.status;
        final = received;
      }
    }
    if (options.case !== 'timeout') tools.checkComplete();
    const answerEvent = client.events.find(
      (e) => e.event.type === 'response.output_audio_transcript.done' && final && e.atMs <= final.atMs,
    );
    const answer =
      answerEvent?.event.type === 'response.output_audio_transcript.done' ? answerEvent.event.transcript : '';
    const rejections = [...tools.rejections];
    const expectStatus: Record<ToolCase, ToolProbeReport['final_status']> = {
      dependent: 'completed',
      parallel: 'completed',
      mixed: 'completed',
      timeout: 'tool_timeout',
      cancel: 'cancelled',
    };
    if (finalStatus !== expectStatus[options.case])
      rejections.push(`the turn ended ${finalStatus ?? 'without an end'}, expected ${expectStatus[options.case]}`);
    if (options.case === 'dependent' && tools.expectedScaled !== null && rejections.length === 0)
      if (!answer.includes(String(tools.expectedScaled)))
        rejections.push('the answer does not carry probe_scale’s result');
    if (speech) {
      const stops = client.events.filter((e) => e.event.type === 'input_audio_buffer.speech_stopped').length;
      if (stops !== 1) rejections.push(`the request was endpointed ${stops} times (an incomplete utterance)`);
    }
    const first = (type: ServerEvent['type']) =>
      client.events.find((e) => e.event.type === type && e.atMs >= referenceAt);
    const caption = client.events.find(
      (e) => e.event.type === 'response.output_audio_transcript.delta' && e.event.delta !== '' && e.atMs >= referenceAt,
    );
    const audio = first('output_audio_buffer.started');
    const report: ToolProbeReport = {
      case: options.case,
      input,
      reference: speech ? 'speech_end' : 'text_submitted',
      call_id: client.callId,
      tool_calls: calls,
      final_status: finalStatus,
      first_caption_ms: caption ? since(caption.atMs) : null,
      first_audio_event_ms: audio ? since(audio.atMs) : null,
      done_ms: final ? since(final.atMs) : null,
      answer_words: answer.split(/\s+/).filter(Boolean).length,
      valid: rejections.length === 0,
      rejections,
    };
    if (deadlineMs !== undefined) report.tool_deadline_ms = deadlineMs;
    if (cancelSentAt !== null && final) report.cancel_to_done_ms = Math.round(final.atMs - cancelSentAt);
    return report;
  } finally {
    await client.close();
  }
}

const TOOL_PROBE_USAGE =
  'usage: npm run probe:tool-latency -- --case dependent|parallel|mixed|timeout|cancel [--input text|voice] ' +
  '[--gateway URL --key K]';

/**
 * `npm run probe:tool-latency`'s command line. Without `--gateway` it starts a local gateway whose model is the
 * fake tool agent (src/testing/fake-tool-agent.ts). Exit 0 for a valid run, 1 for a rejected or failed one, 2
 * for bad arguments.
 */
export async function toolProbeCli(argv: string[], io: ProbeIo): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        case: { type: 'string' },
        input: { type: 'string', default: 'text' },
        gateway: { type: 'string' },
        key: { type: 'string' },
        timeout: { type: 'string', default: '60000' },
      },
    }));
  } catch (error) {
    io.err(`${error instanceof Error ? error.message : String(error)}\n${TOOL_PROBE_USAGE}`);
    return EXIT_REFUSED;
  }
  const toolCase = TOOL_CASES.find((c) => c === values.case);
  const input = values.input === 'text' || values.input === 'voice' ? values.input : null;
  const refusal = !toolCase
    ? `--case must be one of ${TOOL_CASES.join(', ')}`
    : !input
      ? '--input must be text or voice'
      : values.gateway && !values.key
        ? '--key is required with --gateway'
        : null;
  if (refusal || !toolCase || !input) {
    io.err(`${refusal ?? ''}\n${TOOL_PROBE_USAGE}`);
    return EXIT_REFUSED;
  }
  const local = values.gateway ? null : await startLocalToolGateway(toolCase);
  try {
    const report = await runToolLatencyProbe({
      baseUrl: values.gateway ?? local?.url ?? '',
      apiKey: values.key ?? local?.apiKey ?? '',
      case: toolCase,
      input,
      timeoutMs: Number(values.timeout),
    });
    io.out(JSON.stringify(report, null, 2));
    return report.valid ? 0 : EXIT_FAILED;
  } catch (error) {
    io.err(`probe:tool-latency: ${error instanceof Error ? error.message : String(error)}`);
    return EXIT_FAILED;
  } finally {
    await local?.close();
  }
}

/** The fake tool agent behind a local gateway process whose transcriber hears the case's prompt. */
async function startLocalToolGateway(toolCase: ToolCase): Promise<LocalGateway> {
  const agent = await startFakeToolAgent();
  try {
    const gateway = await startLocalGateway({
      transcript: () => TOOL_CASE_PROMPTS[toolCase],
      silenceSeconds: 0.7,
      openAiAgentUrl: agent.baseUrl,
    });
    return { ...gateway, close: async () => (await gateway.close(), await agent.close()) };
  } catch (error) {
    await agent.close();
    throw error;
  }
}
