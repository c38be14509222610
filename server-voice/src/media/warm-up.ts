import { RTCPeerConnection } from 'werift';
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
