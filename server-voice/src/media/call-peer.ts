import {
  MediaStreamTrack,
  RTCPeerConnection,
  RTCRtpCodecParameters,
  RtcpSenderInfo,
  RtcpSrPacket,
  RtpHeader,
  type PeerConfig,
  type RTCDataChannel,
  type RTCRtpTransceiver,
} from 'werift';
import type { IceServer } from '../signalling/ice-servers.js';

/** The only data channel the gateway talks on; others are ignored. */
export const EVENTS_CHANNEL_LABEL = 'oai-events';
const OPUS_FRAME_TICKS = 960;
/** RTP clock ticks per millisecond (Opus: 48 kHz). */
const TICKS_PER_MS = 48;
/** Seconds from the NTP epoch (1900) to the Unix epoch (1970). */
const NTP_UNIX_OFFSET_S = 2_208_988_800;
/** Sender reports go out once a second while the call sends (werift's own sender: every 0.5–1.5 s). */
const SENDER_REPORT_MS = 1000;

/** The 64-bit NTP timestamp of a Unix time in milliseconds. */
function ntpTimestamp(unixMs: number): bigint {
  const seconds = Math.floor(unixMs / 1000);
  const fraction = Math.floor(((unixMs - seconds * 1000) / 1000) * 2 ** 32);
  return (BigInt(seconds + NTP_UNIX_OFFSET_S) << 32n) | BigInt(fraction);
}

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
  private firstPacket = true;
  private payloadType: number | null | undefined;
  private packetCount = 0;
  private octetCount = 0;
  /** The RTP timestamp and wall-clock time of the last packet sent (for sender reports). */
  private lastSent: { rtpTimestamp: number; atMs: number } | null = null;
  private reportTimer: NodeJS.Timeout | null = null;
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

  /**
   * Sends one 20 ms Opus packet; dropped silently until DTLS is up (werift's default).
   *
   * The packet goes straight to the DTLS transport's SRTP sender, not through werift's `RTCRtpSender`, which
   * per packet clones it, rebuilds and sorts header extensions (none are negotiated here), keeps a
   * retransmission copy (audio is not NACKed) and chains several promises: about 40 % of the gateway's
   * allocations at 40 calls, and the garbage collection behind late frames. The bytes on the wire are the
   * same — the sender's SSRC, the negotiated payload type, no extensions — and `sendReport` sends the
   * RTCP sender reports the bypassed sender would have.
   */
  sendOpus(payload: Buffer): void {
    const transceiver = this.transceiver;
    const dtls = transceiver?.sender.dtlsTransport;
    if (!transceiver || dtls?.state !== 'connected') return;
    this.payloadType ??= transceiver.codecs[0]?.payloadType ?? null;
    if (this.payloadType === null) return;
    const header = new RtpHeader({
      payloadType: this.payloadType,
      sequenceNumber: this.sequence,
      timestamp: this.timestamp >>> 0,
      ssrc: transceiver.sender.ssrc,
      marker: this.firstPacket,
    });
    this.firstPacket = false;
    this.lastSent = { rtpTimestamp: this.timestamp >>> 0, atMs: Date.now() };
    this.sequence = (this.sequence + 1) & 0xffff;
    this.timestamp = (this.timestamp + OPUS_FRAME_TICKS) >>> 0;
    this.packetCount = (this.packetCount + 1) >>> 0;
    this.octetCount = (this.octetCount + payload.length) >>> 0;
    void dtls.sendRtp(payload, header);
    if (!this.reportTimer) {
      this.reportTimer = setInterval(() => this.sendReport(), SENDER_REPORT_MS);
      this.reportTimer.unref();
    }
  }

  /** One RTCP sender report: the current media time against wall-clock time, and what was sent so far. */
  private sendReport(): void {
    const sender = this.transceiver?.sender;
    const dtls = sender?.dtlsTransport;
    const last = this.lastSent;
    if (!sender || !dtls || dtls.state !== 'connected' || !last) return;
    const nowMs = Date.now();
    const report = new RtcpSrPacket({
      ssrc: sender.ssrc,
      senderInfo: new RtcpSenderInfo({
        ntpTimestamp: ntpTimestamp(nowMs),
        rtpTimestamp: (last.rtpTimestamp + Math.round((nowMs - last.atMs) * TICKS_PER_MS)) >>> 0,
        packetCount: this.packetCount,
        octetCount: this.octetCount,
      }),
    });
    dtls.sendRtcp([report]).catch(() => undefined);
  }

  async close(): Promise<void> {
    if (this.reportTimer) clearInterval(this.reportTimer);
    this.reportTimer = null;
    this.outbound.stop();
    await this.pc.close();
  }
}
