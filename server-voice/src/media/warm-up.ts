import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { RTCPeerConnection } from 'werift';
import type { AgentBackend } from '../agent/agent-backend.js';
import { PcmResampler } from '../audio/resampler.js';
import { SAMPLE_RATE_HZ } from '../audio/types.js';
import type { SpeechToText, TextToSpeech } from '../providers/types.js';
import { peerConfig } from './call-peer.js';

let warming: Promise<void> | null = null;

/**
 * Runs one complete werift handshake between two local peers, once per process. The first DTLS handshake
 * of a fresh process pays one-time costs (module loading, JIT, the certificate) that can stall it for over
 * a second: long enough for the other side's DTLS client to retransmit its hello, and werift's DTLS client
 * fails the handshake when both answers arrive. The gateway warms up before it listens, so its first caller
 * gets a prompt handshake; local werift clients (tests, probe, benchmark) warm up before they dial.
 */
export function warmUpWebrtc(timeoutMs = 15_000): Promise<void> {
  warming ??= (async () => {
    const config = peerConfig({ iceServers: [], loopbackCandidate: true, loopbackOnly: true });
    const a = new RTCPeerConnection(config);
    const b = new RTCPeerConnection(config);
    try {
      a.createDataChannel('warm-up');
      const opened = new Promise<void>((resolve) => b.onDataChannel.subscribe(() => resolve()));
      await a.setLocalDescription(await a.createOffer());
      await b.setRemoteDescription(a.localDescription ?? { type: 'offer', sdp: '' });
      await b.setLocalDescription(await b.createAnswer());
      await a.setRemoteDescription(b.localDescription ?? { type: 'answer', sdp: '' });
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([opened, new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
      clearTimeout(timer);
    } finally {
      await a.close();
      await b.close();
    }
  })();
  return warming;
}

/** What `warmUpTurnPath` ran (tests, the startup log). */
export type WarmedPart = 'stt' | 'agent' | 'tts';

/** How long the provider warm-up may take before start-up goes on without it. */
const PROVIDER_WARM_UP_MS = 5_000;

/**
 * Runs a turn's code once before the gateway listens, against a throwaway local server, so the first caller
 * does not pay one-time costs (the first `fetch` of a process loads Node's HTTP client and its wasm parser:
 * a few hundred milliseconds; compiling the providers' own code: ~20 ms more on the first turn, bench:voice):
 * - the resampler's 48 → 16 kHz filter (speech-to-text upload, Silero) is designed;
 * - a multipart upload answered with JSON and a streamed answer read chunk by chunk, whatever is configured;
 * - the configured providers themselves, their fetch redirected to the local server, which answers in their
 *   wire formats (OpenAI-compatible transcription JSON, chat-completions SSE, raw PCM speech). espeak-ng speech
 *   is local and runs as it is; the Hermes agent's run protocol is not imitated (the generic round trip is
 *   what warms its path).
 * Nothing leaves the machine, and a failure or timeout here is never fatal. Returns the providers it warmed.
 */
export async function warmUpTurnPath(
  parts: {
    stt?: (fetchImpl: typeof fetch) => SpeechToText | null;
    agent?: (fetchImpl: typeof fetch) => AgentBackend | null;
    tts?: (fetchImpl: typeof fetch) => TextToSpeech | null;
  } = {},
): Promise<WarmedPart[]> {
  new PcmResampler(SAMPLE_RATE_HZ, 16_000).process(new Int16Array(4800));
  const server = http.createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      const path = request.url ?? '';
      if (path.endsWith('/audio/transcriptions')) {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end('{"text":"warm"}');
      } else if (path.endsWith('/chat/completions')) {
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.write('data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"Warm."}}]}\n\n');
        response.end('data: [DONE]\n\n');
      } else if (path.endsWith('/audio/speech')) {
        response.writeHead(200, { 'content-type': 'application/octet-stream' });
        response.write(Buffer.alloc(2400));
        response.end(Buffer.alloc(2400));
      } else {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.write('{"text":');
        response.end('"warm"}');
      }
    });
  });
  const warmed: WarmedPart[] = [];
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', resolve);
    });
    const { port } = server.address() as AddressInfo;
    const local: typeof fetch = (input, init) => {
      const target = new URL(input instanceof Request ? input.url : String(input));
      return fetch(`http://127.0.0.1:${port}${target.pathname}${target.search}`, init);
    };
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(64)], { type: 'audio/wav' }), 'warm.wav');
    await (await fetch(`http://127.0.0.1:${port}/warm`, { method: 'POST', body: form })).json();
    const streamed = await fetch(`http://127.0.0.1:${port}/warm`, { method: 'POST', body: '{}' });
    if (streamed.body) for await (const chunk of streamed.body) void chunk;
    const signal = AbortSignal.timeout(PROVIDER_WARM_UP_MS);
    const run = async (part: WarmedPart, work: () => Promise<unknown>) => {
      try {
        await work();
        warmed.push(part);
      } catch {
        // Only a warm-up: the first real turn pays instead.
      }
    };
    const stt = parts.stt?.(local);
    const agent = parts.agent?.(local);
    const tts = parts.tts?.(local);
    await Promise.all([
      stt && run('stt', () => stt.transcribe({ pcm: new Int16Array(9600), sampleRateHz: SAMPLE_RATE_HZ }, { signal })),
      agent &&
        run('agent', async () => {
          const reply = agent.respond({
            sessionKey: 'warm-up',
            text: 'warm',
            instructions: '',
            tools: [],
            toolChoice: 'auto',
            signal,
            callTool: () => Promise.resolve(''),
          });
          for (let step = await reply.next(); !step.done; step = await reply.next());
          agent.endSession('warm-up');
        }),
      tts &&
        run('tts', async () => {
          for await (const chunk of tts.synthesize('Warm.', { signal })) void chunk;
        }),
    ]);
  } catch {
    // As above.
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
  return warmed.sort();
}
