import { MediaStreamTrack, RTCPeerConnection } from 'werift';
import { peerConfig } from '../../src/media/call-peer.js';

/** A real SDP offer (audio send/receive + the oai-events channel) from a werift peer, and its peer to close. */
export async function makeOffer(): Promise<{ sdp: string; close: () => Promise<void> }> {
  const pc = new RTCPeerConnection(peerConfig({ iceServers: [], loopbackCandidate: true }));
  pc.addTransceiver(new MediaStreamTrack({ kind: 'audio' }), { direction: 'sendrecv' });
  pc.createDataChannel('oai-events');
  await pc.setLocalDescription(await pc.createOffer());
  return { sdp: pc.localDescription?.sdp ?? '', close: () => pc.close() };
}

/** A multipart body built by hand, so tests control every byte (part names, sizes, extra parts). */
export function multipart(parts: { name: string; value: string | Buffer; type?: string }[]): {
  body: Buffer;
  contentType: string;
} {
  const boundary = 'conduit-test-boundary-7d1f';
  const chunks: Buffer[] = [];
  for (const part of parts) {
    chunks.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="${part.name}"\r\n` +
          (part.type ? `Content-Type: ${part.type}\r\n` : '') +
          '\r\n',
      ),
    );
    chunks.push(Buffer.isBuffer(part.value) ? part.value : Buffer.from(part.value));
    chunks.push(Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}
