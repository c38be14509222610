/**
 * `npm run bench:voice`: (a) concurrent calls one core sustains — the gateway pinned to CPU 0, werift clients
 * on the other core (this process is pinned to CPU 1), continuous Opus both ways (each call first asks a typed question whose long reply keeps
 * the gateway speaking; the clients loop a quiet room-noise track, and barge-in is on so capture is not paused
 * during replies: every inbound frame is decoded and goes through detection) — with the p99 of outbound frame
 * pacing jitter (|inter-arrival − 20 ms| at the client, and as the gateway sent them); (b) gateway-added latency from the endpoint decision
 * to the first outbound RTP of the reply with instant local fake providers; (c) Silero inference time per
 * window. Prints JSON. Options: --calls 10,20,40 (0: none) --seconds 8 --turns 10, --concurrency-only, --cpu-prof DIR,
 * --node-flags="FLAGS" for the gateway, --gateway-log FILE,
 * --wire-dump FILE, --gateway-env KEY=VALUE,... (gateway settings, e.g. HERMES_REALTIME_MEDIA_SENDER=inline).
 */
import { execFileSync } from 'node:child_process';
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { SileroModel, SILERO_CONTEXT_SAMPLES, SILERO_WINDOW_SAMPLES } from '../src/audio/silero.js';
import { FRAME_SAMPLES } from '../src/audio/types.js';
import { OpusEncoder } from '../src/media/opus-codec.js';
import { startFakeUpstreams } from '../src/testing/fake-upstreams.js';
import { RealtimeClient } from '../src/testing/realtime-client.js';
import { startGatewayProcess, toneSpeech } from '../src/testing/gateway-process.js';
import { startWireCapture, udpPortsOf } from './wire-capture.js';

const { values } = parseArgs({
  options: {
    calls: { type: 'string', default: '10,20,40' },
    seconds: { type: 'string', default: '8' },
    turns: { type: 'string', default: '10' },
    /** Writes a V8 CPU profile of each gateway process (node --cpu-prof) into this folder. */
    'cpu-prof': { type: 'string' },
    /** Extra Node flags for the gateway processes, space-separated (e.g. "--trace-gc"). */
    'node-flags': { type: 'string' },
    /** Writes the wire capture's RTP sightings and the gateway's ports of each concurrency run to FILE-<calls>.json. */
    'wire-dump': { type: 'string' },
    /** Extra gateway settings, comma-separated KEY=VALUE (e.g. HERMES_REALTIME_MEDIA_SENDER=inline). */
    'gateway-env': { type: 'string' },
    /** Appends every gateway process's output (its logs, and what --node-flags print) to this file. */
    'gateway-log': { type: 'string' },
    /** Only the concurrency runs (no latency turns, no Silero). */
    'concurrency-only': { type: 'boolean', default: false },
  },
});
const KEY = 'bench-key';
const percentile = (sorted: number[], p: number) =>
  sorted.length === 0 ? NaN : (sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number);
const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits;
const pinned = (() => {
  try {
    execFileSync('taskset', ['-c', '0', 'true']);
    return os.cpus().length > 1;
  } catch {
    return false;
  }
})();
// The clients and fake providers (this process, all its threads) stay off the gateway's core.
if (pinned) execFileSync('taskset', ['-a', '-p', '-c', '1', String(process.pid)], { stdio: 'ignore' });

/** CPU seconds used so far by a process and its descendants (Linux /proc). */
function cpuSeconds(pid: number): number {
  let total = 0;
  const visit = (id: number) => {
    try {
      const fields = readFileSync(`/proc/${id}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
      total += (Number(fields[11]) + Number(fields[12])) / 100;
      for (const task of readFileSync(`/proc/${id}/task/${id}/children`, 'utf8').trim().split(/\s+/).filter(Boolean))
        visit(Number(task));
    } catch {
      // the process ended
    }
  };
  visit(pid);
  return total;
}

/**
 * Milliseconds the main threads of the gateway and its descendant processes spent runnable but waiting for a
 * CPU (Linux schedstat): when this grows, late frames come from other load on the core (other processes, or
 * the gateway's own GC and worker threads pinned beside it), not from the event loop's own work.
 */
function runQueueWaitMs(pid: number): number {
  let total = 0;
  const visit = (id: number) => {
    try {
      total += Number(readFileSync(`/proc/${id}/task/${id}/schedstat`, 'utf8').split(' ')[1]) / 1e6;
      for (const child of readFileSync(`/proc/${id}/task/${id}/children`, 'utf8').trim().split(/\s+/).filter(Boolean))
        visit(Number(child));
    } catch {
      // the process ended, or no schedstat on this kernel
    }
  };
  visit(pid);
  return total;
}

const upstream = await startFakeUpstreams({
  transcript: () => 'benchmark question',
  // About 40 s of speech per reply, so every call still speaks through the measurement window.
  reply: () => ['Here is a long answer that keeps the gateway speaking. '.repeat(30)],
  speechMsPerChar: 25,
});
const extraEnv = Object.fromEntries(
  (values['gateway-env'] ?? '')
    .split(',')
    .filter(Boolean)
    .map((pair) => {
      const at = pair.indexOf('=');
      if (at <= 0) throw new Error(`--gateway-env takes KEY=VALUE pairs, not "${pair}"`);
      return [pair.slice(0, at), pair.slice(at + 1)];
    }),
);
const gatewayEnv = {
  HERMES_REALTIME_API_KEY: KEY,
  HERMES_REALTIME_MAX_CALLS: '500',
  HERMES_REALTIME_VAD_BACKEND: 'rms',
  HERMES_REALTIME_SILENCE_DURATION: '0.5',
  HERMES_REALTIME_AGENT: 'openai',
  HERMES_REALTIME_AGENT_URL: upstream.openAiBaseUrl,
  HERMES_REALTIME_AGENT_MODEL: 'bench',
  HERMES_REALTIME_STT_BASE_URL: upstream.openAiBaseUrl,
  HERMES_REALTIME_TTS_PROVIDER: 'openai',
  HERMES_REALTIME_TTS_BASE_URL: upstream.openAiBaseUrl,
  ...extraEnv,
};

// What the clients send continuously: two seconds of quiet room noise (RMS ≈ 23, under any speech threshold),
// encoded once and looped. With barge-in on, detection scores every frame and never interrupts the reply.
const encoder = new OpusEncoder();
let seed = 12345;
const roomNoise = Int16Array.from({ length: 2 * 48_000 }, () => {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff;
  return (seed % 81) - 40;
});
const loop: Buffer[] = [];
for (let offset = 0; offset + FRAME_SAMPLES <= roomNoise.length; offset += FRAME_SAMPLES)
  loop.push(encoder.encode(roomNoise.subarray(offset, offset + FRAME_SAMPLES)));

const wrapper = pinned ? ['taskset', '-c', '0'] : [];
const nodeFlags = [
  ...(values['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${values['cpu-prof']}`] : []),
  ...(values['node-flags']?.split(/\s+/).filter(Boolean) ?? []),
];
const keepLog = (output: string) => {
  if (values['gateway-log']) appendFileSync(values['gateway-log'], output);
};
const concurrency: Record<string, unknown>[] = [];
for (const calls of values.calls
  .split(',')
  .map(Number)
  .filter((n) => n > 0)) {
  const gateway = await startGatewayProcess({ ...gatewayEnv, HERMES_REALTIME_BARGE_IN: 'true' }, wrapper, nodeFlags);
  const pid = gateway.child.pid ?? 0;
  const clients: RealtimeClient[] = [];
  try {
    for (let i = 0; i < calls; i += 1) {
      const client = await RealtimeClient.connect({
        baseUrl: gateway.url,
        apiKey: KEY,
        decode: false,
        microphone: false,
      });
      client.send({
        type: 'conversation.item.create',
        item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'talk' }] },
      });
      client.send({ type: 'response.create' });
      clients.push(client);
    }
    await Promise.all(clients.map((c) => c.waitForType('output_audio_buffer.started', { timeoutMs: 60_000 })));
    // Spread over the 20 ms frame as independent microphones would be (not one burst of packets per frame).
    for (const [index, client] of clients.entries()) client.loopOpus(loop, { phaseMs: (index * 20) / calls });
    const capture = await startWireCapture();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const windowStart = performance.now();
    const windowStartWall = Date.now();
    const cpuStart = cpuSeconds(pid);
    const waitStart = runQueueWaitMs(pid);
    const marks = clients.map((c) => c.packets.length);
    await new Promise((resolve) => setTimeout(resolve, Number(values.seconds) * 1000));
    const cpu = cpuSeconds(pid) - cpuStart;
    const waited = runQueueWaitMs(pid) - waitStart;
    const elapsed = (performance.now() - windowStart) / 1000;
    const jitter: number[] = [];
    let packets = 0;
    for (const [index, client] of clients.entries()) {
      const arrivals = client.packets.slice(marks[index]).map((p) => p.atMs);
      packets += arrivals.length;
      for (let i = 1; i < arrivals.length; i += 1)
        jitter.push(Math.abs((arrivals[i] as number) - (arrivals[i - 1] as number) - 20));
    }
    jitter.sort((a, b) => a - b);
    // On the wire: kernel timestamps of the gateway's RTP on the loopback interface, per outbound stream.
    const gatewayPorts = capture ? udpPortsOf(pid) : new Set<number>();
    const sightings = capture ? await capture.stop() : null;
    if (sightings && values['wire-dump'])
      writeFileSync(`${values['wire-dump']}-${calls}.json`, JSON.stringify({ ports: [...gatewayPorts], sightings }));
    const wireEndWall = Date.now();
    let wire: Record<string, number> | null = null;
    if (sightings) {
      const streams = new Map<number, { atMs: number; sequence: number }[]>();
      for (const seen of sightings) {
        if (!gatewayPorts.has(seen.sourcePort) || seen.atMs < windowStartWall || seen.atMs > wireEndWall) continue;
        const stream = streams.get(seen.ssrc) ?? [];
        stream.push(seen);
        streams.set(seen.ssrc, stream);
      }
      const deviations: number[] = [];
      let gaps = 0;
      let rates = 0;
      for (const stream of streams.values()) {
        if (stream.length > 1) rates += ((stream.length - 1) * 1000) / (stream.at(-1)!.atMs - stream[0]!.atMs);
        for (let i = 1; i < stream.length; i += 1) {
          const [before, after] = [stream[i - 1]!, stream[i]!];
          deviations.push(Math.abs(after.atMs - before.atMs - 20));
          if (((after.sequence - before.sequence) & 0xffff) !== 1) gaps += 1;
        }
      }
      deviations.sort((a, b) => a - b);
      wire = {
        streams: streams.size,
        packets_per_call_per_s: round(rates / Math.max(1, streams.size), 1),
        jitter_p50_ms: round(percentile(deviations, 50)),
        jitter_p99_ms: round(percentile(deviations, 99)),
        jitter_max_ms: round(deviations.at(-1) ?? NaN),
        sequence_gaps: gaps,
      };
    }
    // The gateway's own view of its pacing (logged every 5 s): the reports that cover only this window.
    const windowEndWall = Date.now();
    const pacing = gateway
      .output()
      .split('\n')
      .filter((line) => line.includes('"event":"pacing"'))
      .map((line) => JSON.parse(line) as { time: string; first_jitter_p99_ms: number; last_jitter_p99_ms: number })
      .filter((line) => {
        const at = Date.parse(line.time);
        return at >= windowStartWall + 5000 && at <= windowEndWall;
      });
    const speaking = clients.filter((c) => !c.types().includes('output_audio_buffer.stopped')).length;
    // Who paced: the media sender process (and the scheduling its thread got) or the gateway's own loop.
    const readyLine = gateway
      .output()
      .split('\n')
      .find((line) => line.includes('"event":"gateway_ready"'));
    const ready = readyLine
      ? (JSON.parse(readyLine) as { media_sender?: string; media_sender_scheduling?: string })
      : {};
    concurrency.push({
      calls,
      pinned_to_one_core: pinned,
      media_sender: ready.media_sender ?? null,
      media_sender_scheduling: ready.media_sender_scheduling ?? null,
      packets_per_call_per_s: round(packets / calls / elapsed, 1),
      jitter_p50_ms: round(percentile(jitter, 50)),
      jitter_p99_ms: round(percentile(jitter, 99)),
      // Kernel timestamps on the loopback interface (tcpdump): the gateway's pacing free of client-side delays.
      wire,
      gateway_send_jitter_p99_ms: pacing.length
        ? {
            first_call: Math.max(...pacing.map((line) => line.first_jitter_p99_ms)),
            last_call: Math.max(...pacing.map((line) => line.last_jitter_p99_ms)),
          }
        : null,
      gateway_cpu_percent: round((cpu / elapsed) * 100, 1),
      cpu_percent_per_call: round(((cpu / elapsed) * 100) / calls, 2),
      // Load-insensitive: gateway CPU milliseconds spent per second of one call.
      cpu_ms_per_call_second: round((cpu * 1000) / elapsed / calls, 1),
      // The gateway's main thread runnable but not running, per second of the window.
      gateway_main_thread_runqueue_wait_ms_per_s: round(waited / elapsed, 1),
      calls_still_speaking: speaking,
    });
    console.error(JSON.stringify(concurrency.at(-1)));
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    await gateway.stop();
    keepLog(gateway.output());
  }
}

// (b) endpoint decision → first outbound RTP of the reply, gateway-measured, instant fake providers.
/** Per turn, each stage's time after the endpoint decision (from the gateway's `reply_audio_sent` log line). */
const stageTimes = new Map<string, number[]>();

/** The first turn of the fresh gateway process (compiles the turn path's code and opens the upstream connections). */
let firstTurnMs = NaN;

/**
 * One request to each fake provider endpoint from here, so the fakes' own first-request costs (compiling their
 * handlers) are not counted as gateway latency: the providers are meant to be instant.
 */
async function warmFakeProviders(): Promise<void> {
  const base = upstream.openAiBaseUrl;
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(64)], { type: 'audio/wav' }), 'warm.wav');
  form.append('model', 'bench');
  await (await fetch(`${base}/audio/transcriptions`, { method: 'POST', body: form })).text();
  const json = { 'content-type': 'application/json' };
  const chat = { model: 'bench', stream: true, messages: [{ role: 'user', content: 'warm' }] };
  await (await fetch(`${base}/chat/completions`, { method: 'POST', headers: json, body: JSON.stringify(chat) })).text();
  const speech = { model: 'bench', voice: 'bench', input: 'Warm.', response_format: 'pcm' };
  await (await fetch(`${base}/audio/speech`, { method: 'POST', headers: json, body: JSON.stringify(speech) })).text();
}

async function measureLatency(): Promise<number[]> {
  await warmFakeProviders();
  const latencyGateway = await startGatewayProcess(gatewayEnv, wrapper, nodeFlags);
  const latencies: number[] = [];
  try {
    const client = await RealtimeClient.connect({ baseUrl: latencyGateway.url, apiKey: KEY, decode: false });
    for (let turn = 0; turn < Number(values.turns); turn += 1) {
      const from = client.events.length;
      await client.speak(toneSpeech(0.8, 0.2));
      await client.waitForType('output_audio_buffer.started', { from, timeoutMs: 30_000 });
      // Let the first frames go out (the gateway logs the first one it sends), then stop the long reply.
      await new Promise((resolve) => setTimeout(resolve, 300));
      client.send({ type: 'response.cancel' });
      await client.waitForType('response.done', { from, timeoutMs: 30_000 });
      await new Promise((resolve) => setTimeout(resolve, 900)); // echo guard, then the next question
    }
    await client.close();
    for (const line of latencyGateway.output().split('\n')) {
      if (!line.includes('"reply_audio_sent"')) continue;
      const parsed = JSON.parse(line) as { endpoint_to_first_rtp_ms?: number; stages_ms?: Record<string, number> };
      if (typeof parsed.endpoint_to_first_rtp_ms !== 'number') continue;
      if (Number.isNaN(firstTurnMs)) firstTurnMs = parsed.endpoint_to_first_rtp_ms;
      latencies.push(parsed.endpoint_to_first_rtp_ms);
      for (const [stage, ms] of Object.entries(parsed.stages_ms ?? {}))
        stageTimes.set(stage, [...(stageTimes.get(stage) ?? []), ms]);
    }
  } finally {
    await latencyGateway.stop();
    keepLog(latencyGateway.output());
  }
  return latencies.sort((a, b) => a - b);
}

// (c) Silero: one inference per 32 ms window (64 context + 512 samples at 16 kHz), one thread.
async function measureSilero(): Promise<number[]> {
  const model = await SileroModel.load();
  const input = new Float32Array(SILERO_CONTEXT_SAMPLES + SILERO_WINDOW_SAMPLES);
  const state = new Float32Array(2 * 128);
  const inference: number[] = [];
  for (let i = 0; i < 300; i += 1) {
    for (let j = 0; j < input.length; j += 1) input[j] = Math.sin((j + i) / 9) * 0.3;
    const start = performance.now();
    await model.infer(input, state);
    if (i >= 20) inference.push(performance.now() - start);
  }
  await model.close();
  return inference.sort((a, b) => a - b);
}

const latencies = values['concurrency-only'] ? [] : await measureLatency();
await upstream.close();
const inference = values['concurrency-only'] ? [] : await measureSilero();

const afterFirst = [...latencies];
afterFirst.splice(afterFirst.indexOf(firstTurnMs), 1);
const sustained = concurrency
  .filter((row) => ((row.wire as { jitter_p99_ms: number } | null)?.jitter_p99_ms ?? (row.jitter_p99_ms as number)) < 5)
  .map((row) => row.calls as number);
console.log(
  JSON.stringify(
    {
      machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, loadavg_1m: round(os.loadavg()[0] ?? 0) },
      concurrency,
      // Judged on the wire figure when tcpdump could capture, else on the client-side one.
      max_calls_with_jitter_p99_under_5ms: sustained.length ? Math.max(...sustained) : 0,
      endpoint_to_first_rtp_ms: {
        turns: latencies.length,
        p50: round(percentile(latencies, 50), 1),
        p99: round(percentile(latencies, 99), 1),
        max: round(latencies.at(-1) ?? NaN, 1),
        // The process's very first turn, and the rest without it: a gateway pays the first once, not per call.
        first_turn_after_start: round(firstTurnMs, 1),
        after_first_turn_p99: round(percentile(afterFirst, 99), 1),
        stage_p50_ms: Object.fromEntries(
          [...stageTimes].map(([stage, times]) => [
            stage,
            round(
              percentile(
                [...times].sort((a, b) => a - b),
                50,
              ),
              1,
            ),
          ]),
        ),
      },
      silero_inference_ms_per_window: {
        p50: round(percentile(inference, 50), 3),
        p99: round(percentile(inference, 99), 3),
      },
    },
    null,
    2,
  ),
);
process.exit(0);
