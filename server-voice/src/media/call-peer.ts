import {
  MediaStreamTrack,
  RTCPeerConnection,
  RTCRtpCodecParameters,
  RtpHeader,
  RtpPacket,
  type PeerConfig,
  type RTCDataChannel,
  type RTCRtpTransceiver,
} from 'werift';
import type { IceServer } from '../signalling/ice-servers.js';

/** The only data channel the gateway talks on; others are ignored. */
export const EVENTS_CHANNEL_LABEL = 'oai-events';
const OPUS_FRAME_TICKS = 960;

export interface PeerOptions {
  iceServers: IceServer[];
  /**
   * Also offer the loopback address as a host candidate. werift leaves it out by default, and without it a
   * client on the same machine (tests, probes, a local kiosk) cannot connect.
   */
  loopbackCandidate: boolean;
  /** Pair only loopback candidates (local clients: tests, probes, benchmarks), as the loopback recipe does. */
  loopbackOnly?: boolean;
}

export function peerConfig(options: PeerOptions): Partial<PeerConfig> {
  return {
    iceServers: options.iceServers.flatMap((server) =>
      (Array.isArray(server.urls) ? server.urls : [server.urls]).map((urls) => ({
        urls,
        ...(server.username !== undefined ? { username: server.username } : {}),
        ...(server.credential !== undefined ? { credential: server.credential } : {}),
      })),
    ),
    bundlePolicy: 'max-bundle',
    iceUseIpv6: false,
    ...(options.loopbackCandidate ? { iceAdditionalHostAddresses: ['127.0.0.1'] } : {}),
    ...(options.loopbackOnly
      ? {
          iceFilterCandidatePair: (pair: { localCandidate: { host: string }; remoteCandidate: { host: string } }) =>
            pair.localCandidate.host === '127.0.0.1' && pair.remoteCandidate.host === '127.0.0.1',
        }
      : {}),
    codecs: { audio: [new RTCRtpCodecParameters({ mimeType: 'audio/opus', clockRate: 48000, channels: 2 })] },
  };
}

export interface PeerEvents {
  /** A labelled `oai-events` channel opened (the caller announces the session on it). */
  onEventsChannel: (channel: RTCDataChannel) => void;
  /** One inbound Opus RTP payload of the first audio track. */
  onAudioPayload: (payload: Buffer, sequenceNumber: number) => void;
  onConnectionState: (state: string) => void;
}

/**
 * One WebRTC peer per call: answers the client's offer (non-trickle: werift gathers host candidates while
 * setting the local description, so the answer carries them all), sends paced Opus on one outbound audio
 * track and hands inbound Opus and the events channel to the call.
 */
export class CallPeer {
  readonly pc: RTCPeerConnection;
  private readonly outbound = new MediaStreamTrack({ kind: 'audio' });
  private transceiver: RTCRtpTransceiver | null = null;
  private sequence = Math.floor(Math.random() * 0x10000);
  private timestamp = Math.floor(Math.random() * 0x100000000);
  private readonly ssrc = Math.floor(Math.random() * 0xffffffff) >>> 0;
  private firstPacket = true;
  private inboundTaken = false;

  constructor(options: PeerOptions, events: PeerEvents) {
    this.pc = new RTCPeerConnection(peerConfig(options));
    this.pc.connectionStateChange.subscribe((state) => events.onConnectionState(state));
    // Subscribed before the remote description is applied: werift reports remote tracks while applying it.
    this.pc.onTrack.subscribe((track) => {
      if (track.kind !== 'audio' || this.inboundTaken) return;
      this.inboundTaken = true;
      track.onReceiveRtp.subscribe((packet) => events.onAudioPayload(packet.payload, packet.header.sequenceNumber));
    });
    this.pc.onDataChannel.subscribe((channel) => {
      if (channel.label !== EVENTS_CHANNEL_LABEL) return;
      if (channel.readyState === 'open') events.onEventsChannel(channel);
      else
        channel.stateChanged.subscribe((state) => {
          if (state === 'open') events.onEventsChannel(channel);
        });
    });
  }

  /** Applies the offer and returns the answer SDP. Throws on an offer werift cannot use. */
  async answer(offerSdp: string): Promise<string> {
    await this.pc.setRemoteDescription({ type: 'offer', sdp: offerSdp });
    const audio = this.pc.getTransceivers().find((t) => t.kind === 'audio');
    if (!audio) throw new Error('the offer has no audio section');
    audio.setDirection('sendrecv');
    await audio.sender.replaceTrack(this.outbound);
    this.transceiver = audio;
    const answer = await this.pc.createAnswer();
    // The gateway takes the DTLS server role (a=setup:passive, which RFC 5763 lets the answerer choose):
    // werift's DTLS client fails the handshake when a slow peer answers a retransmitted ClientHello twice,
    // while its DTLS server copes with a client's retransmissions. Browsers and werift clients both accept it.
    await this.pc.setLocalDescription({
      type: 'answer',
      sdp: answer.sdp.replace(/^a=setup:active(\r?)$/gm, 'a=setup:passive$1'),
    });
    const local = this.pc.localDescription;
    if (!local) throw new Error('no local description');
    return local.sdp;
  }

  /** Sends one 20 ms Opus packet; dropped silently until DTLS is up (werift's default). */
  sendOpus(payload: Buffer): void {
    const payloadType = this.transceiver?.codecs[0]?.payloadType;
    if (payloadType === undefined) return;
    const header = new RtpHeader({
      payloadType,
      sequenceNumber: this.sequence,
      timestamp: this.timestamp >>> 0,
      ssrc: this.ssrc,
      marker: this.firstPacket,
    });
    this.firstPacket = false;
    this.sequence = (this.sequence + 1) & 0xffff;
    this.timestamp = (this.timestamp + OPUS_FRAME_TICKS) >>> 0;
    this.outbound.writeRtp(new RtpPacket(header, payload));
  }

  async close(): Promise<void> {
    this.outbound.stop();
    await this.pc.close();
  }
}
