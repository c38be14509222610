/**
 * `npm run bench:voice-conference`: Conference mode against Realtime mode in one run, with instant fake
 * providers (scripted transcript, agent and tone speech). For each mode: the time from the client receiving
 * `input_audio_buffer.speech_stopped` (the endpoint decision, which both transports publish as it is taken)
 * to the first audible reply audio the client hears, and CPU milliseconds per participant-second. Everything
 * runs in this one process — gateway, the LiveKit-compatible test server (Conference) and the clients — so
 * the CPU figure covers all of them, alike for both modes. Turns run one at a time (Conference has one
 * shared conversation). Prints JSON. Options: --participants 3 --turns 2 (turns per participant).
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/app.js';
import { ScriptedAgent } from '../src/agent/scripted-agent.js';
import { parseAudioSettings } from '../src/audio/settings.js';
import { voiceConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { ScriptedSpeechToText, ScriptedTextToSpeech } from '../src/providers/scripted.js';
import { RealtimeClient } from '../src/testing/realtime-client.js';
import {
  API_KEY,
  API_SECRET,
  TestParticipant,
  conferenceConfig,
  speech,
  startGateway,
} from '../test/conference/conference-harness.js';
import { startLiveKitTestServer } from '../test/livekit-server/livekit-test-server.js';

const { values } = parseArgs({
  options: {
    participants: { type: 'string', default: '3' },
    turns: { type: 'string', default: '2' },
  },
});
const participants = Math.max(1, Number(values.participants));
const turns = Math.max(1, Number(values.turns));
const SILENCE_SECONDS = 0.5;
const providers = () => ({
  agent: new ScriptedAgent(() => [{ delta: 'Sure.' }]),
  stt: new ScriptedSpeechToText(['hello']),
  tts: new ScriptedTextToSpeech(),
});

interface ModeResult {
  turns: number;
  endpoint_to_first_audio_ms: { p50: number; p90: number; max: number };
  cpu_ms_per_participant_second: number;
  wall_s: number;
}

function summarize(latencies: number[], cpuMs: number, wallMs: number): ModeResult {
  const sorted = [...latencies].sort((a, b) => a - b);
  const at = (q: number) =>
    Math.round((sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0) * 10) / 10;
  return {
    turns: sorted.length,
    endpoint_to_first_audio_ms: { p50: at(0.5), p90: at(0.9), max: at(1) },
    cpu_ms_per_participant_second: Math.round((cpuMs / (participants * (wallMs / 1000))) * 100) / 100,
    wall_s: Math.round(wallMs / 100) / 10,
  };
}

function cpuMs(since: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1000;
}

async function conference(): Promise<ModeResult> {
  const server = await startLiveKitTestServer({ apiKey: API_KEY, apiSecret: API_SECRET });
  const identities = Array.from({ length: participants }, (_, i) => `p${i}`);
  const config = conferenceConfig(server.url, { allowedUsers: new Set(identities) });
  const under = startGateway(config, providers(), { silenceSeconds: SILENCE_SECONDS });
  const clients: TestParticipant[] = [];
  try {
    for (const identity of identities) clients.push(await TestParticipant.join(server, identity, config.room));
    await under.reaches('joined');
    await Promise.all(clients.map((client) => client.waitForType('session.created')));
    const latencies: number[] = [];
    const startCpu = process.cpuUsage();
    const started = performance.now();
    for (let turn = 0; turn < turns; turn += 1) {
      for (const client of clients) {
        const from = client.events.length;
        await client.speak(speech(0.8, 0.3, 0.8));
        const stopped = await client.waitForType('input_audio_buffer.speech_stopped', from);
        const stoppedAt = client.eventTimes[client.events.indexOf(stopped)] ?? 0;
        // Listening starts at the endpoint, not before: every participant hears the agent's replies to the
        // others too, and the tail of the previous reply must not count as this turn's first audio.
        const heard = client.hearsAgent(under.gateway.agentIdentity).then(() => performance.now());
        latencies.push((await heard) - stoppedAt);
        await client.waitForType('output_audio_buffer.stopped', from);
      }
    }
    return summarize(latencies, cpuMs(startCpu), performance.now() - started);
  } finally {
    await under.gateway.stop();
    await Promise.allSettled(clients.map((client) => client.leave()));
    await server.close();
  }
}

async function realtime(): Promise<ModeResult> {
  const key = randomBytes(16).toString('hex');
  const app: FastifyInstance = await buildApp(
    voiceConfig({
      apiKey: key,
      audio: parseAudioSettings({ vad_backend: 'rms', silence_duration: SILENCE_SECONDS }),
      mediaSender: 'inline',
    }),
    { ...providers(), logger: createLogger({ debug: false, write: () => undefined }), delay: () => Promise.resolve() },
  );
  const baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
  const clients: RealtimeClient[] = [];
  try {
    for (let i = 0; i < participants; i += 1) clients.push(await RealtimeClient.connect({ baseUrl, apiKey: key }));
    const latencies: number[] = [];
    const startCpu = process.cpuUsage();
    const started = performance.now();
    for (let turn = 0; turn < turns; turn += 1) {
      for (const client of clients) {
        const from = client.events.length;
        await client.speak(speech(0.8, 0.3, 0.8));
        const stopped = await client.waitForType('input_audio_buffer.speech_stopped', { from, timeoutMs: 20_000 });
        const packet = await client.waitUntil(() => client.firstAudiblePacket(stopped.atMs), 20_000, 'reply audio');
        latencies.push(packet.atMs - stopped.atMs);
        await client.waitForType('output_audio_buffer.stopped', { from, timeoutMs: 20_000 });
      }
    }
    return summarize(latencies, cpuMs(startCpu), performance.now() - started);
  } finally {
    await Promise.allSettled(clients.map((client) => client.close()));
    await app.close();
  }
}

const realtimeResult = await realtime();
const conferenceResult = await conference();
console.log(
  JSON.stringify(
    {
      participants,
      turns_per_participant: turns,
      silence_duration_s: SILENCE_SECONDS,
      note: 'one process: gateway, clients and (conference) the LiveKit-compatible test server; instant fake providers',
      realtime: realtimeResult,
      conference: conferenceResult,
    },
    null,
    2,
  ),
);
process.exit(0);
