/**
 * The TTS canary (`npm run canary:tts`): the text-to-speech a Hermes profile configures, exercised through the
 * gateway's real streaming speech path and real local RTP peers. `HERMES_TTS_CANARY_CONFIG` names the profile's
 * `config.yaml`; its `tts` section and its `.env` (keys) are read as the gateway reads them (hermes-speech.ts).
 * An in-process gateway on loopback answers one typed turn with a fixed sentence, and a werift client receives
 * the reply as Opus RTP. Printed: timings (provider first byte, first audio event, first audible RTP, total)
 * from `text_submitted`, and the provider, model and voice — never a key, a URL or audio. It opts in
 * explicitly: nothing runs without the variable, and nothing is played on a device.
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { buildApp } from '../app.js';
import { ScriptedAgent } from '../agent/scripted-agent.js';
import { voiceConfig } from '../config.js';
import { memoryLogger } from '../log.js';
import { profileConfigFromText } from '../profile-config.js';
import { profileVariables } from '../profile-dotenv.js';
import { speechProvidersFromEnv } from '../providers/config.js';
import { resolveSpeech } from '../providers/hermes-speech.js';
import type { SynthesizeOptions, TextToSpeech } from '../providers/types.js';
import { RealtimeClient } from '../testing/realtime-client.js';
import { EXIT_FAILED, EXIT_REFUSED, type ProbeIo } from './probe-io.js';

export const CANARY_CONFIG_VARIABLE = 'HERMES_TTS_CANARY_CONFIG';
/** Two clauses, so the streaming path speaks the first while the second is still being synthesized. */
export const CANARY_SENTENCE = 'This is the Conduit speech canary. If you can read this timing, speech works.';
/** Bound on each wait: a provider that has not answered in this long has failed the canary. */
const CANARY_WAIT_MS = 60_000;
const AUDIBLE_PEAK = 500;

/** The canary cannot run: the variable is missing, or the profile's speech cannot be used here. */
export class CanaryRefusal extends Error {
  override readonly name = 'CanaryRefusal';
}

export interface CanaryReport {
  reference: 'text_submitted';
  provider: string;
  model: string | null;
  voice: string | null;
  provider_first_byte_ms: number;
  first_audio_event_ms: number;
  first_audible_rtp_ms: number;
  total_ms: number;
  audible_packets: number;
}

/** The configured provider, reporting when it was asked and when its first PCM arrived. */
class TimedTextToSpeech implements TextToSpeech {
  readonly label: string;
  readonly sampleRateHz: number;
  firstChunkAt: number | null = null;

  constructor(private readonly inner: TextToSpeech) {
    this.label = inner.label;
    this.sampleRateHz = inner.sampleRateHz;
  }

  async *synthesize(text: string, options?: SynthesizeOptions): AsyncIterable<Int16Array> {
    for await (const chunk of this.inner.synthesize(text, options)) {
      this.firstChunkAt ??= performance.now();
      yield chunk;
    }
  }
}

/** Reads the profile's TTS settings (its `.env` beside `config.yaml`) as the gateway would. */
export async function canarySpeech(configPath: string) {
  let text: string;
  try {
    text = await readFile(configPath, 'utf8');
  } catch (error) {
    throw new CanaryRefusal(
      `cannot read ${CANARY_CONFIG_VARIABLE}=${configPath} (${(error as NodeJS.ErrnoException).code ?? 'unreadable'})`,
    );
  }
  const profile = profileConfigFromText(text, configPath);
  // The profile home is the config's directory: its `.env` holds the keys, read only for the provider.
  const variable = profileVariables({ HERMES_HOME: path.dirname(path.resolve(configPath)) });
  const { speechEnv, selection } = resolveSpeech({}, { config: profile, variable });
  if (selection.tts.source !== 'hermes')
    throw new CanaryRefusal(
      `the profile's text-to-speech cannot be used by the gateway: ${selection.tts.note ?? selection.tts.provider}`,
    );
  return { speechEnv, choice: selection.tts };
}

/** Runs the canary once against the profile at `configPath`. */
export async function runTtsCanary(configPath: string): Promise<CanaryReport> {
  const { speechEnv, choice } = await canarySpeech(configPath);
  const tts = new TimedTextToSpeech(speechProvidersFromEnv(speechEnv).tts);
  const apiKey = randomBytes(16).toString('hex');
  const app = await buildApp(voiceConfig({ apiKey, speechEnv, mediaSender: 'inline' }), {
    agent: new ScriptedAgent(() => [{ delta: CANARY_SENTENCE }]),
    tts,
    // The gateway's own log stays in memory: the canary prints its report only.
    logger: memoryLogger(),
  });
  try {
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    const client = await RealtimeClient.connect({ baseUrl: url, apiKey });
    try {
      await client.waitForType('session.created', { timeoutMs: CANARY_WAIT_MS });
      const from = client.events.length;
      const submittedAt = performance.now();
      client.send({
        type: 'conversation.item.create',
        item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Speak the canary sentence.' }] },
      });
      client.send({ type: 'response.create' });
      const started = await client.waitForEvent(
        (event) => event.type === 'output_audio_buffer.started' || event.type === 'response.done',
        { from, timeoutMs: CANARY_WAIT_MS },
      );
      // A provider that failed before any audio ends the response without speech (the gateway logs why).
      if (started.event.type === 'response.done')
        throw new Error(`the reply ended ${started.event.response.status} before any audio`);
      const audible = await client.waitUntil(
        () => client.firstAudiblePacket(submittedAt, AUDIBLE_PEAK),
        CANARY_WAIT_MS,
        'audible RTP',
      );
      const stopped = await client.waitForType('output_audio_buffer.stopped', { from, timeoutMs: CANARY_WAIT_MS });
      const since = (atMs: number) => Math.round(atMs - submittedAt);
      return {
        reference: 'text_submitted',
        provider: choice.provider,
        model: choice.model ?? null,
        voice: choice.voice ?? null,
        provider_first_byte_ms: since(tts.firstChunkAt ?? stopped.atMs),
        first_audio_event_ms: since(started.atMs),
        first_audible_rtp_ms: since(audible.atMs),
        total_ms: since(stopped.atMs),
        audible_packets: client.packets.filter((p) => p.atMs >= submittedAt && p.peak > AUDIBLE_PEAK).length,
      };
    } finally {
      await client.close();
    }
  } finally {
    await app.close();
  }
}

/**
 * `npm run canary:tts`'s command line: refuses (exit 2) without `HERMES_TTS_CANARY_CONFIG` or with a profile
 * whose speech the gateway cannot use; exit 1 when the provider failed; the report and exit 0 otherwise. Errors
 * are reported by name and message only, which the providers keep free of keys.
 */
export async function ttsCanaryCli(env: NodeJS.ProcessEnv, io: ProbeIo): Promise<number> {
  const configPath = env[CANARY_CONFIG_VARIABLE]?.trim();
  if (!configPath) {
    io.err(
      `${CANARY_CONFIG_VARIABLE} is not set: point it at a Hermes profile's config.yaml to run the TTS canary ` +
        '(it calls that profile’s configured speech provider)',
    );
    return EXIT_REFUSED;
  }
  try {
    io.out(JSON.stringify(await runTtsCanary(configPath), null, 2));
    return 0;
  } catch (error) {
    if (error instanceof CanaryRefusal) {
      io.err(`canary:tts: ${error.message}`);
      return EXIT_REFUSED;
    }
    io.err(`canary:tts failed: ${error instanceof Error ? `${error.name}: ${error.message}` : 'unknown error'}`);
    return EXIT_FAILED;
  }
}
