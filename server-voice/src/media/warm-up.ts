import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { RTCPeerConnection } from 'werift';
import { PcmResampler } from '../audio/resampler.js';
import { SAMPLE_RATE_HZ } from '../audio/types.js';
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

let warmingHttp: Promise<void> | null = null;

/**
 * Exercises the provider path once per process against a throwaway local server: the first `fetch` of a
 * process loads and compiles Node's HTTP client (and its wasm HTTP parser), which added a few hundred
 * milliseconds to the first caller's first reply. A multipart upload answered with JSON (speech-to-text) and
 * a streamed answer read chunk by chunk (agent and speech) are what a turn does; the resampler's 48 → 16 kHz
 * filter (speech-to-text upload, Silero) is designed too. Speech needs none: 24 kHz goes straight to Opus. Nothing leaves the machine, and a failure here is never fatal.
 */
export function warmUpTurnPath(): Promise<void> {
  warmingHttp ??= (async () => {
    new PcmResampler(SAMPLE_RATE_HZ, 16_000).process(new Int16Array(4800));
    const server = http.createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.write('{"text":');
        response.end('"warm"}');
      });
    });
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, '127.0.0.1', resolve);
      });
      const { port } = server.address() as AddressInfo;
      const form = new FormData();
      form.append('file', new Blob([new Uint8Array(64)], { type: 'audio/wav' }), 'warm.wav');
      await (await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', body: form })).json();
      const streamed = await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', body: '{}' });
      if (streamed.body) for await (const chunk of streamed.body) void chunk;
    } catch {
      // Only a warm-up: the first real request pays the cost instead.
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  })();
  return warmingHttp;
}
