/**
 * The voice latency probe (`npm run probe:voice`): a werift client speaks a fixed question into a gateway and
 * times, from the last voiced frame it sent (`speech_end`), the endpoint, the transcript, the first caption, the
 * first audio event and the first audible RTP packet of the reply. Several turns replay the identical PCM on
 * the same connection; `/reasoning <level>` can be sent first as the session-only Hermes command. A turn whose
 * endpoint was split or premature, whose reply audio started early or came twice, or that followed residual
 * audio is reported invalid, never as a latency.
 */
import { createHash } from 'node:crypto';
import { parseArgs } from 'node:util';
import type { ServerEvent } from '@conduit/contracts/voice/events';
import { pcmRms, pcmToBytes } from '../audio/pcm.js';
import { FRAME_SAMPLES } from '../audio/types.js';
import { RealtimeClient, type ReceivedEvent } from '../testing/realtime-client.js';
import { spokenSentence } from '../testing/spoken-fixture.js';
import { startLocalGateway } from './local-gateway.js';
import { EXIT_FAILED, EXIT_REFUSED, type ProbeIo } from './probe-io.js';

export type VoiceCase = 'greeting' | 'fact' | 'calculation' | 'first_sentence';
export type ReasoningChoice = 'profile' | 'low' | 'medium' | 'high';

export const VOICE_CASES = ['greeting', 'fact', 'calculation', 'first_sentence'] as const;
export const REASONING_CHOICES = ['profile', 'low', 'medium', 'high'] as const;

/** The answer `first_sentence` asks for: a short first sentence, then a second one. */
export const FIRST_SENTENCE_ANSWER = 'Yes. Water is made of hydrogen and oxygen.';

/** Each case's spoken question and, for `first_sentence`, the instructions of this call only. */
export const VOICE_CASE_SCRIPTS: Record<VoiceCase, { question: string; instructions?: string }> = {
  greeting: { question: 'Hello there, how are you today?' },
  fact: { question: 'What is the capital city of Portugal?' },
  calculation: { question: 'What is twelve times seven?' },
  first_sentence: {
    question: 'Is water made of hydrogen and oxygen?',
    instructions: `Reply with exactly these two sentences and nothing else: ${FIRST_SENTENCE_ANSWER}`,
  },
};

/** Turns per connection: enough to compare a cold first reply with warm ones, bounded so a run stays short. */
export const MAX_TURNS = 10;
/** Quiet time between a completed reply and the next utterance; outside every measured interval. */
export const SETTLE_MS = 1_000;
/** A frame counts as voiced (the fixture's speech end) above this RMS; the gateway's gate starts at ≥300. */
const VOICED_RMS = 300;
/** Decoded peak above which a received packet is audible speech (comfort silence decodes near zero). */
const AUDIBLE_PEAK = 500;
/**
 * Audible packets this long after a reply's `stopped` event still count as that reply (in flight and in the
 * receiver's buffers); later ones in the settling interval are residual audio.
 */
const RESIDUAL_GRACE_MS = 200;
/** `--show-answer` shows at most this much of the answer. */
const MAX_SHOWN_ANSWER_CHARS = 500;

export interface VoiceProbeOptions {
  baseUrl: string;
  apiKey: string;
  case: VoiceCase;
  turns?: number;
  reasoning?: ReasoningChoice;
  /** Per-wait bound in milliseconds (default 30 s). */
  timeoutMs?: number;
  /** 48 kHz mono speech to send (default: the case's question spoken by espeak-ng). */
  speech?: Int16Array;
  showAnswer?: boolean;
}

export interface TurnReport {
  turn: number;
  response_id: string | null;
  reference: 'speech_end';
  endpoint_ms: number | null;
  transcript_ms: number | null;
  first_audio_event_ms: number | null;
  first_audible_rtp_ms: number | null;
  /** From the first nonempty caption frame of this response (client receipt times; omitted without one). */
  caption_after_speech_s?: number;
  caption_to_audio_event_s?: number;
  caption_to_audible_rtp_s?: number;
  transcript: string;
  answer_words: number;
  answer?: string;
  valid: boolean;
  /** Why the turn is not a valid measurement. */
  invalid?: string[];
}

export interface VoiceProbeReport {
  call_id: string;
  case: VoiceCase;
  reasoning: ReasoningChoice;
  fixture_sha256: string;
  turns: TurnReport[];
  valid: boolean;
}

/** The probe could not run (setup, the reasoning command, a wait that timed out). */
export class VoiceProbeFailure extends Error {
  override readonly name = 'VoiceProbeFailure';
}

/** Index of the last frame louder than `VOICED_RMS` (the fixture's end of speech). */
export function lastVoicedFrame(pcm: Int16Array): number {
  let last = -1;
  for (let frame = 0; frame * FRAME_SAMPLES < pcm.length; frame += 1)
    if (pcmRms(pcm, frame * FRAME_SAMPLES, Math.min(pcm.length, (frame + 1) * FRAME_SAMPLES)) > VOICED_RMS)
      last = frame;
  return last;
}

/**
 * Whether `answer` is the fixed first_sentence answer, whitespace aside. Exactly that text: a different second
 * sentence, a third one or a missing "Yes." would measure a different split into clauses.
 */
export function isFirstSentenceAnswer(answer: string): boolean {
  return answer.trim().replace(/\s+/g, ' ') === FIRST_SENTENCE_ANSWER;
}

const responseOf = (event: ServerEvent): string | null => {
  if (event.type === 'response.created' || event.type === 'response.done') return event.response.id;
  return 'response_id' in event && typeof event.response_id === 'string' ? event.response_id : null;
};

/** The final caption of a response (`response.output_audio_transcript.done`; also sent with final-only captions). */
function answerOf(events: ReceivedEvent[], responseId: string): string {
  const done = events.find(
    (e) => e.event.type === 'response.output_audio_transcript.done' && e.event.response_id === responseId,
  );
  if (done?.event.type === 'response.output_audio_transcript.done') return done.event.transcript;
  return '';
}

/** Sends `/reasoning <level>` as typed text and waits for Hermes' acknowledgement; anything else fails. */
async function setReasoning(client: RealtimeClient, level: Exclude<ReasoningChoice, 'profile'>, timeoutMs: number) {
  const from = client.events.length;
  client.send({
    type: 'conversation.item.create',
    item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: `/reasoning ${level}` }] },
  });
  client.send({ type: 'response.create' });
  const done = await client.waitForType('response.done', { from, timeoutMs });
  const after = client.events.slice(from);
  const error = after.find((e) => e.event.type === 'error');
  if (
    error?.event.type === 'error' ||
    done.event.type !== 'response.done' ||
    done.event.response.status !== 'completed'
  )
    throw new VoiceProbeFailure(
      `/reasoning ${level} was not acknowledged: ${
        error?.event.type === 'error' ? `${error.event.error.code}: ${error.event.error.message}` : 'the reply failed'
      }`,
    );
  const responseId = done.event.response.id;
  const acknowledgement = answerOf(after, responseId);
  // Hermes answers in English naming the effort it set; an unrelated reply is not an acknowledgement.
  if (!/reasoning|effort/i.test(acknowledgement) || !acknowledgement.toLowerCase().includes(level))
    throw new VoiceProbeFailure(`/reasoning ${level} got no acknowledgement naming "${level}"`);
  // The acknowledgement is spoken like any reply: let it finish before the measured turn.
  if (after.some((e) => e.event.type === 'output_audio_buffer.started' && responseOf(e.event) === responseId))
    await client.waitForEvent(
      (event) => event.type === 'output_audio_buffer.stopped' && event.response_id === responseId,
      { from, timeoutMs },
    );
}

/** Runs one probe: connects, optionally sets reasoning, speaks `turns` times and reports each reply. */
export async function runVoiceLatencyProbe(options: VoiceProbeOptions): Promise<VoiceProbeReport> {
  const turns = options.turns ?? 1;
  if (!Number.isInteger(turns) || turns < 1 || turns > MAX_TURNS)
    throw new VoiceProbeFailure(`--turns must be an integer from 1 to ${MAX_TURNS}`);
  const reasoning = options.reasoning ?? 'profile';
  const timeoutMs = options.timeoutMs ?? 30_000;
  const script = VOICE_CASE_SCRIPTS[options.case];
  const pcm = options.speech ?? (await spokenSentence(script.question, 1, 2));
  const voicedFrame = lastVoicedFrame(pcm);
  if (voicedFrame < 0) throw new VoiceProbeFailure('the speech fixture has no voiced frame');
  const fixtureSha256 = createHash('sha256').update(pcmToBytes(pcm)).digest('hex');
  const client = await RealtimeClient.connect({
    baseUrl: options.baseUrl,
    apiKey: options.apiKey,
    session: { type: 'realtime', ...(script.instructions ? { instructions: script.instructions } : {}) },
  });
  try {
    await client.waitForType('session.created', { timeoutMs });
    if (reasoning !== 'profile') await setReasoning(client, reasoning, timeoutMs);
    const reports: TurnReport[] = [];
    for (let turn = 1; turn <= turns; turn += 1) {
      const quietSince = performance.now() + RESIDUAL_GRACE_MS;
      // After anything was spoken (an earlier reply, the acknowledgement) the line settles before the next utterance.
      if (turn > 1 || reasoning !== 'profile') await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
      reports.push(await measureTurn(client, pcm, voicedFrame, turn, quietSince, options, timeoutMs));
    }
    return {
      call_id: client.callId,
      case: options.case,
      reasoning,
      fixture_sha256: fixtureSha256,
      turns: reports,
      valid: reports.every((report) => report.valid),
    };
  } finally {
    await client.close();
  }
}

async function measureTurn(
  client: RealtimeClient,
  pcm: Int16Array,
  voicedFrame: number,
  turn: number,
  quietSince: number,
  options: VoiceProbeOptions,
  timeoutMs: number,
): Promise<TurnReport> {
  const invalid: string[] = [];
  // Residual audio: the previous reply (or the acknowledgement) still audible during the settling interval.
  if (client.packets.some((packet) => packet.atMs >= quietSince && packet.peak > AUDIBLE_PEAK))
    invalid.push('residual audio before the utterance');
  const from = client.events.length;
  const packetsFrom = client.packets.length;
  let speechEndAt = 0;
  await client.speak(pcm, (index, atMs) => {
    if (index === voicedFrame) speechEndAt = atMs;
  });
  const wait = (predicate: (event: ServerEvent) => boolean) => client.waitForEvent(predicate, { from, timeoutMs });
  const transcribed = await wait((e) => e.type === 'conversation.item.input_audio_transcription.completed');
  const created = await wait((e) => e.type === 'response.created');
  const responseId = responseOf(created.event) ?? '';
  const done = await wait((e) => e.type === 'response.done' && e.response.id === responseId);
  const status = done.event.type === 'response.done' ? done.event.response.status : 'failed';
  if (status !== 'completed') invalid.push(`reply ${status}`);
  const audioEvent = client.events
    .slice(from)
    .find((e) => e.event.type === 'output_audio_buffer.started' && responseOf(e.event) === responseId);
  if (audioEvent)
    await wait((e) => e.type === 'output_audio_buffer.stopped' && e.response_id === responseId).catch(() => {
      invalid.push('reply audio did not stop');
    });
  const events = client.events.slice(from);
  const stops = events.filter((e) => e.event.type === 'input_audio_buffer.speech_stopped');
  const starts = events.filter((e) => e.event.type === 'input_audio_buffer.speech_started');
  if (stops.length !== 1 || starts.length !== 1) invalid.push(`split endpoint (${stops.length} endpoints)`);
  const endpoint = stops[0];
  if (endpoint && endpoint.atMs < speechEndAt) invalid.push('premature endpoint before the end of speech');
  if (events.filter((e) => e.event.type === 'response.created').length !== 1) invalid.push('more than one reply');
  const audioStarts = events.filter((e) => e.event.type === 'output_audio_buffer.started');
  if (audioStarts.length > 1) invalid.push('multiple audio replies');
  if (audioEvent && endpoint && audioEvent.atMs < endpoint.atMs) invalid.push('reply audio before the endpoint');
  if (!audioEvent) invalid.push('no reply audio');
  const audible = client.packets
    .slice(packetsFrom)
    .find((packet) => packet.atMs >= speechEndAt && packet.peak > AUDIBLE_PEAK);
  // The first caption frame with text for this response: a nonempty delta, or a snapshot replacement.
  const caption = events.find(
    (e) =>
      e.event.type === 'response.output_audio_transcript.delta' &&
      e.event.response_id === responseId &&
      (e.event.delta !== '' || (e.event.transcript ?? '') !== ''),
  );
  const answer = answerOf(events, responseId);
  if (options.case === 'first_sentence' && !isFirstSentenceAnswer(answer))
    invalid.push('first_sentence answer is not the fixed two sentences starting "Yes."');
  const since = (atMs: number | undefined) => (atMs === undefined ? null : Math.round(atMs - speechEndAt));
  const seconds = (ms: number) => Math.round(ms) / 1000;
  const report: TurnReport = {
    turn,
    response_id: responseId || null,
    reference: 'speech_end',
    endpoint_ms: since(endpoint?.atMs),
    transcript_ms: since(transcribed.atMs),
    first_audio_event_ms: since(audioEvent?.atMs),
    first_audible_rtp_ms: since(audible?.atMs),
    transcript:
      transcribed.event.type === 'conversation.item.input_audio_transcription.completed'
        ? transcribed.event.transcript
        : '',
    answer_words: answer.split(/\s+/).filter(Boolean).length,
    valid: invalid.length === 0,
  };
  if (caption) {
    report.caption_after_speech_s = seconds(caption.atMs - speechEndAt);
    if (audioEvent) report.caption_to_audio_event_s = seconds(audioEvent.atMs - caption.atMs);
    if (audible) report.caption_to_audible_rtp_s = seconds(audible.atMs - caption.atMs);
  }
  if (options.showAnswer) report.answer = answer.slice(0, MAX_SHOWN_ANSWER_CHARS);
  if (invalid.length > 0) report.invalid = invalid;
  return report;
}

/** What the local fake agent answers each case (a running gateway answers with its own agent). */
const LOCAL_ANSWERS: Record<VoiceCase, string[]> = {
  greeting: ['Hello! ', 'I am well, thank you.'],
  fact: ['The capital of Portugal ', 'is Lisbon.'],
  calculation: ['Twelve times seven ', 'is eighty-four.'],
  first_sentence: ['Yes. ', FIRST_SENTENCE_ANSWER.slice('Yes. '.length)],
};

const VOICE_PROBE_USAGE =
  'usage: npm run probe:voice -- [--gateway URL --key K] [--case greeting|fact|calculation|first_sentence] ' +
  '[--turns 1-10] [--reasoning profile|low|medium|high] [--silence 0.7] [--show-answer]';

function oneOf<T extends string>(choices: readonly T[], value: string): T | null {
  return (choices as readonly string[]).includes(value) ? (value as T) : null;
}

/**
 * `npm run probe:voice`'s command line. Without `--gateway` it starts a local gateway with fake providers.
 * Prints the report; exit 0 when every turn is a valid measurement, 1 when one is not or the probe failed, 2 for
 * bad arguments.
 */
export async function voiceProbeCli(argv: string[], io: ProbeIo): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        gateway: { type: 'string' },
        key: { type: 'string' },
        case: { type: 'string', default: 'greeting' },
        turns: { type: 'string', default: '1' },
        reasoning: { type: 'string', default: 'profile' },
        silence: { type: 'string', default: '0.7' },
        timeout: { type: 'string', default: '30000' },
        'show-answer': { type: 'boolean', default: false },
      },
    }));
  } catch (error) {
    io.err(`${error instanceof Error ? error.message : String(error)}\n${VOICE_PROBE_USAGE}`);
    return EXIT_REFUSED;
  }
  const probeCase = oneOf(VOICE_CASES, values.case);
  const reasoning = oneOf(REASONING_CHOICES, values.reasoning);
  const turns = Number(values.turns);
  const refusal = !probeCase
    ? `--case must be one of ${VOICE_CASES.join(', ')}`
    : !reasoning
      ? `--reasoning must be one of ${REASONING_CHOICES.join(', ')}`
      : !Number.isInteger(turns) || turns < 1 || turns > MAX_TURNS
        ? `--turns must be an integer from 1 to ${MAX_TURNS}`
        : values.gateway && !values.key
          ? '--key is required with --gateway'
          : null;
  if (refusal || !probeCase || !reasoning) {
    io.err(`${refusal ?? ''}\n${VOICE_PROBE_USAGE}`);
    return EXIT_REFUSED;
  }
  const script = VOICE_CASE_SCRIPTS[probeCase];
  const local = values.gateway
    ? null
    : await startLocalGateway({
        transcript: () => script.question,
        reply: () => LOCAL_ANSWERS[probeCase],
        silenceSeconds: Number(values.silence),
      });
  try {
    const report = await runVoiceLatencyProbe({
      baseUrl: values.gateway ?? local?.url ?? '',
      apiKey: values.key ?? local?.apiKey ?? '',
      case: probeCase,
      turns,
      reasoning,
      timeoutMs: Number(values.timeout),
      showAnswer: values['show-answer'],
    });
    io.out(JSON.stringify(report, null, 2));
    return report.valid ? 0 : EXIT_FAILED;
  } catch (error) {
    io.err(`probe:voice: ${error instanceof Error ? error.message : String(error)}`);
    return EXIT_FAILED;
  } finally {
    await local?.close();
  }
}
