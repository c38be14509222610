/**
 * `npm run bench:watch-audio`: latency the Watch audio bridge adds, per direction, at BENCH_CALLS (10)
 * concurrent Watch calls (printed; the target is p99 ≤ 20 ms per direction).
 *
 * Everything runs on loopback: a real relay process (server-relay), the host service in this process,
 * an xAI realtime stand-in, and ten Watch stand-ins with their own sealing. Each call streams 20 ms of
 * 16 kHz PCM every 20 ms up, and the stand-in streams 20 ms of 24 kHz reply audio every 20 ms down, each
 * frame stamped with its index. A direct connection on loopback takes well under a millisecond, so the
 * time from a frame's send to its arrival is what the bridge adds:
 * - up: Watch seals → relay → host opens → `input_audio_buffer.append` → xAI stand-in;
 * - down: xAI stand-in's `response.output_audio.delta` → host paces and seals → relay → Watch opens.
 * The reply audio goes at real time, inside the pacer's lead, so pacing holds none of it back.
 * `BENCH_ENGINE=gpt_live` runs the same over real WebRTC calls instead: up is the Watch's frame to the
 * OpenAI-Realtime stand-in's Opus packet (the host codes it), down is the stand-in's echo to the Watch's
 * decoded 20 ms of PCM.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import WebSocket, { WebSocketServer } from 'ws';
import { createWatchAudioFeature } from '../src/features/watch-audio/index.js';
import { watchToolsFeature } from '../src/features/watch/index.js';
import { webSearchFeature } from '../src/features/web-search/index.js';
import { TEST_TOKEN, tempHermesHome, testConfig } from '../test/support/config.js';
import { startHost } from '../test/support/host.js';
import { RealRelay } from '../test/support/real-relay.js';
import {
  RealtimeStandIn,
  XAI_FIRST_EVENT,
  xaiHandshake,
  type RealtimeConnection,
} from '../test/support/realtime-stand-ins.js';
import {
  OpenAiRealtimeStandIn,
  WatchAudioStandIn,
  type AudioGrantAnswer,
  type RealtimeCall,
} from '../test/support/watch-audio-stand-ins.js';

const CALLS = Number(process.env.BENCH_CALLS ?? 10);
/** `grok` (the default: WebSocket to an xAI stand-in) or `gpt_live` (WebRTC to an OpenAI-Realtime stand-in). */
const ENGINE = process.env.BENCH_ENGINE === 'gpt_live' ? 'gpt_live' : 'grok';
const CODEX_TOKEN = 'codex-bench-access-token';
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const FRAME_MS = 20;
const XAI_KEY = 'xai-bench-key-0123456789';
/** The first second of each call is warm-up (JIT, socket buffers), left out of the figures. */
const WARM_UP_FRAMES = 50;

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

function describe(values: number[]): string {
  const f = (value: number) => value.toFixed(2);
  return `n=${values.length} p50=${f(percentile(values, 50))} ms p90=${f(percentile(values, 90))} ms p99=${f(percentile(values, 99))} ms max=${f(Math.max(...values))} ms`;
}

/** A frame of `bytes` whose first four bytes carry its call and index (the rest silence). */
function stamped(bytes: number, call: number, index: number): Buffer {
  const frame = Buffer.alloc(bytes);
  frame.writeUInt16LE(call, 0);
  frame.writeUInt16LE(index, 2);
  return frame;
}

async function main(): Promise<void> {
  const home = tempHermesHome();
  const xai = new RealtimeStandIn(xaiHandshake(XAI_KEY), XAI_FIRST_EVENT);
  const openai = new OpenAiRealtimeStandIn(CODEX_TOKEN);
  await Promise.all([xai.start(), openai.start()]);
  const relay = await RealRelay.start(home.root);
  const names = Array.from({ length: CALLS }, (_, index) => `bench${index}`);
  for (const name of names) {
    const dir = path.join(home.root, 'profiles', name);
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, '.env'), `XAI_API_KEY=${XAI_KEY}\n`);
    writeFileSync(
      path.join(dir, 'auth.json'),
      JSON.stringify({ providers: { 'openai-codex': { tokens: { access_token: CODEX_TOKEN, account_id: 'acct' } } } }),
    );
    await relay.pair(dir);
  }
  const host = await startHost(testConfig(home.root, { upstreams: { xai: xai.url, chatgpt: openai.url } }), {
    features: [createWatchAudioFeature({ callsPerHost: CALLS }), webSearchFeature, watchToolsFeature],
  });

  const upSent = new Map<string, number>();
  const downSent = new Map<string, number>();
  const up: number[] = [];
  const down: number[] = [];
  const calls: {
    watch: WatchAudioStandIn;
    upstream: RealtimeConnection | undefined;
    rtc: RealtimeCall | undefined;
    upSentAtMs: number[];
  }[] = [];
  // The baseline: the same frames at the same phases over plain loopback sockets in this process, which
  // shows what the shared machine itself adds (scheduling, GC) with no bridge at all.
  const direct = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false });
  await new Promise<void>((resolve) => direct.once('listening', () => resolve()));
  const directSent = new Map<string, number>();
  const baseline: number[] = [];
  direct.on('connection', (socket) =>
    socket.on('message', (data: Buffer) => {
      const index = data.readUInt16LE(2);
      const sentAt = directSent.get(`${data.readUInt16LE(0)}:${index}`);
      if (sentAt !== undefined && index >= WARM_UP_FRAMES) baseline.push(performance.now() - sentAt);
    }),
  );
  const directClients: WebSocket[] = [];
  for (let call = 0; call < CALLS; call += 1) {
    const client = new WebSocket(`ws://127.0.0.1:${(direct.address() as AddressInfo).port}`, {
      perMessageDeflate: false,
    });
    await new Promise<void>((resolve) => client.once('open', () => resolve()));
    directClients.push(client);
  }
  try {
    for (const name of names) {
      const response = await fetch(`${host.url}/api/plugins/conduit_push/watch-tools/grant?profile=${name}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TEST_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ tools: ['web_search'], audio: true }),
      });
      if (response.status !== 200) throw new Error(`grant ${response.status}: ${await response.text()}`);
      const grant = (await response.json()) as AudioGrantAnswer;
      const watch = new WatchAudioStandIn(grant);
      if ((await watch.opened) !== null) throw new Error('the Watch could not dial the relay');
      watch.hello();
      watch.control({ type: 'start', engine: ENGINE });
      const started = await watch.controls.next();
      if (started.type !== 'started') throw new Error(`start: ${JSON.stringify(started)}`);
      if (ENGINE === 'gpt_live') {
        const rtc = await openai.calls.next();
        await rtc.channel;
        calls.push({ watch, upstream: undefined, rtc, upSentAtMs: [] });
        continue;
      }
      const upstream = await xai.connections.next();
      upstream.socket.on('message', (data: Buffer, isBinary: boolean) => {
        if (isBinary) return;
        const event = JSON.parse(data.toString('utf8')) as { type: string; audio?: string };
        if (event.type !== 'input_audio_buffer.append' || !event.audio) return;
        const pcm = Buffer.from(event.audio, 'base64');
        const key = `${pcm.readUInt16LE(0)}:${pcm.readUInt16LE(2)}`;
        const sentAt = upSent.get(key);
        if (sentAt !== undefined && pcm.readUInt16LE(2) >= WARM_UP_FRAMES) up.push(performance.now() - sentAt);
      });
      calls.push({ watch, upstream, rtc: undefined, upSentAtMs: [] });
    }

    const frames = Math.round((SECONDS * 1000) / FRAME_MS);
    const startedAt = performance.now();
    // Independent calls run at independent phases: spread over the 20 ms frame, as ten Watches would be,
    // rather than arriving as one burst of twenty messages every 20 ms.
    const phaseMs = (call: number) => (call * FRAME_MS) / CALLS;
    await new Promise<void>((resolve) => {
      const sent = calls.map(() => 0);
      const tick = (): void => {
        const now = performance.now();
        for (const [call, { watch, upstream, upSentAtMs }] of calls.entries()) {
          const due = Math.min(frames, Math.floor((now - startedAt - phaseMs(call)) / FRAME_MS) + 1);
          for (; (sent[call] ?? 0) < due; sent[call] = (sent[call] ?? 0) + 1) {
            const index = sent[call] ?? 0;
            upSent.set(`${call}:${index}`, performance.now());
            upSentAtMs.push(performance.now());
            watch.pcm(stamped(640, call, index));
            directSent.set(`${call}:${index}`, performance.now());
            directClients[call]?.send(stamped(640, call, index));
            if (!upstream) continue; // GPT-Live's stand-in echoes each frame: that is the down direction
            downSent.set(`${call}:${index}`, performance.now());
            upstream.socket.send(
              JSON.stringify({
                type: 'response.output_audio.delta',
                delta: stamped(960, call, index).toString('base64'),
              }),
            );
          }
        }
        if (sent.every((count) => count >= frames)) resolve();
        else setTimeout(tick, 1);
      };
      tick();
    });
    // Let the last frames land.
    await new Promise((resolve) => setTimeout(resolve, 500));
    for (const { watch, rtc, upSentAtMs } of calls) {
      if (rtc) {
        // Opus is lossy, so frames are matched by order: the i-th frame sent is the i-th packet received
        // (loopback loses none), and the i-th echo the i-th 20 ms of PCM the Watch gets.
        const pcm = watch.arrivals.filter((arrival) => arrival.kind === 1);
        for (let index = WARM_UP_FRAMES; index < upSentAtMs.length; index += 1) {
          const arrived = rtc.arrivedAtMs[index];
          const sentAt = upSentAtMs[index];
          if (arrived !== undefined && sentAt !== undefined) up.push(arrived - sentAt);
          const echoed = rtc.echoedAtMs[index];
          const landed = pcm[index]?.atMs;
          if (echoed !== undefined && landed !== undefined) down.push(landed - echoed);
        }
        continue;
      }
      for (const arrival of watch.arrivals) {
        if (arrival.kind !== 1 || arrival.plaintext.length < 4) continue;
        const index = arrival.plaintext.readUInt16LE(2);
        const sentAt = downSent.get(`${arrival.plaintext.readUInt16LE(0)}:${index}`);
        if (sentAt !== undefined && index >= WARM_UP_FRAMES) down.push(arrival.atMs - sentAt);
      }
    }
    const expected = CALLS * (frames - WARM_UP_FRAMES);
    const provider = ENGINE === 'grok' ? 'xAI' : 'OpenAI (WebRTC, Opus)';
    console.log(
      `Watch audio bridge, ${CALLS} concurrent ${ENGINE === 'grok' ? 'Grok' : 'GPT-Live'} calls, ${SECONDS} s of 20 ms frames each way:`,
    );
    console.log(`  up   (Watch → relay → host → ${provider}):   ${describe(up)} (of ${expected} sent)`);
    console.log(`  down (${provider} → host → relay → Watch):   ${describe(down)} (of ${expected} sent)`);
    const ok = percentile(up, 99) <= 20 && percentile(down, 99) <= 20;
    console.log(`  baseline (plain loopback socket, same load): ${describe(baseline)}`);
    const addedUp = percentile(up, 99) - percentile(baseline, 99);
    const addedDown = percentile(down, 99) - percentile(baseline, 99);
    console.log(`  p99 added over the baseline: up ${addedUp.toFixed(2)} ms, down ${addedDown.toFixed(2)} ms`);
    console.log(`  target p99 ≤ 20 ms per direction (end to end): ${ok ? 'met' : 'NOT met'}`);
    console.log(
      `  (load average ${os
        .loadavg()
        .map((load) => load.toFixed(2))
        .join(' ')} on ${os.cpus().length} cores)`,
    );
  } finally {
    for (const client of directClients) client.close();
    direct.close();
    for (const { watch } of calls) watch.close();
    await host.app.close();
    await relay.stop();
    await Promise.all([xai.stop(), openai.stop()]);
    await rm(home.root, { recursive: true, force: true });
  }
}

await main();
