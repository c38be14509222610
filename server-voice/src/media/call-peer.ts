import {
  MediaStreamTrack,
  RTCPeerConnection,
  RTCRtpCodecParameters,
  RtcpSenderInfo,
  RtcpSrPacket,
  RtpHeader,
  type PeerConfig,
  type RTCDataChannel,
  type RTCDtlsTransport,
  type RTCRtpTransceiver,
} from 'werift';
import { Socket as UdpSocket } from 'node:dgram';
import { isIP } from 'node:net';
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

/**
 * Numbering and counting of one outbound RTP stream: sequence numbers, +960 timestamps, the marker on the
 * first packet, and what RTCP sender reports announce. Used where the packets are sent: in the call's
 * `CallPeer`, or in the media sender process.
 */
export class OutboundRtpStream {
  private sequence = Math.floor(Math.random() * 0x10000);
  private timestamp = Math.floor(Math.random() * 0x100000000);
  private firstPacket = true;
  private packetCount = 0;
  private octetCount = 0;
  /** The RTP timestamp and wall-clock time of the last packet sent (for sender reports). */
  private lastSent: { rtpTimestamp: number; atMs: number } | null = null;

  constructor(
    readonly ssrc: number,
    readonly payloadType: number,
  ) {}

  /** The header of the next packet, counted as sent with `payloadBytes` of payload. */
  next(payloadBytes: number): RtpHeader {
    const header = new RtpHeader({
      payloadType: this.payloadType,
      sequenceNumber: this.sequence,
      timestamp: this.timestamp >>> 0,
      ssrc: this.ssrc,
      marker: this.firstPacket,
    });
    this.firstPacket = false;
    this.lastSent = { rtpTimestamp: this.timestamp >>> 0, atMs: Date.now() };
    this.sequence = (this.sequence + 1) & 0xffff;
    this.timestamp = (this.timestamp + OPUS_FRAME_TICKS) >>> 0;
    this.packetCount = (this.packetCount + 1) >>> 0;
    this.octetCount = (this.octetCount + payloadBytes) >>> 0;
    return header;
  }

  /** A sender report: the current media time against wall-clock time, and what was sent so far (null before the first packet). */
  senderReport(nowMs = Date.now()): RtcpSrPacket | null {
    const last = this.lastSent;
    if (!last) return null;
    return new RtcpSrPacket({
      ssrc: this.ssrc,
      senderInfo: new RtcpSenderInfo({
        ntpTimestamp: ntpTimestamp(nowMs),
        rtpTimestamp: (last.rtpTimestamp + Math.round((nowMs - last.atMs) * TICKS_PER_MS)) >>> 0,
        packetCount: this.packetCount,
        octetCount: this.octetCount,
      }),
    });
  }
}

/** Everything another process needs to send this call's outbound RTP on the call's own UDP socket. */
export interface OutboundRoute {
  socket: UdpSocket;
  remoteAddress: string;
  remotePort: number;
  ssrc: number;
  payloadType: number;
  /** The SRTP profile and master keys the DTLS handshake produced (werift's `SrtpSession` configuration). */
  srtp: {
    profile: number;
    keys: { localMasterKey: Buffer; localMasterSalt: Buffer; remoteMasterKey: Buffer; remoteMasterSalt: Buffer };
  };
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

/** The fields of werift's DTLS context that `continueAfterHandshakeRecords` reads and sets. */
interface DtlsRecordState {
  epoch: number;
  recordSequenceNumber: number;
  /** The last handshake flight sent (its records, serialized), kept for retransmission. */
  lastMessage: unknown;
}

function dtlsRecordState(transport: RTCDtlsTransport): DtlsRecordState | null {
  const context = (transport.dtls as unknown as { dtls?: Partial<DtlsRecordState> } | undefined)?.dtls;
  if (!context || typeof context.epoch !== 'number' || typeof context.recordSequenceNumber !== 'number') return null;
  return context as DtlsRecordState;
}

/** The highest record sequence number of `epoch` among serialized DTLS records (13-byte headers). */
function highestSequenceInEpoch(buffers: readonly Buffer[], epoch: number): number {
  let highest = 0;
  for (const buffer of buffers) {
    for (let offset = 0; offset + 13 <= buffer.length; offset += 13 + buffer.readUInt16BE(offset + 11)) {
      if (buffer.readUInt16BE(offset + 3) === epoch) highest = Math.max(highest, buffer.readUIntBE(offset + 5, 6));
    }
  }
  return highest;
}

/**
 * Makes the gateway's DTLS records continue after the numbers its handshake used. werift 0.25 numbers its
 * Finished record (the first of epoch 1) with the handshake's running count (8 with a browser) and only then
 * restarts at 0 for application data, so its 8th application record repeats the Finished's sequence number.
 * A browser's DTLS (BoringSSL's replay window) discards that record as a replay: one SCTP packet of the events
 * channel lost a few messages after it opened, resent only when SCTP's retransmission timer fires (1 s at
 * least) — the ~1 s stall of the first replies on a call. Returns whether the numbers had to move.
 */
export function continueAfterHandshakeRecords(transport: RTCDtlsTransport): boolean {
  const state = dtlsRecordState(transport);
  const flight = state?.lastMessage;
  if (!state || !Array.isArray(flight) || !flight.every((part) => Buffer.isBuffer(part))) return false;
  const used = highestSequenceInEpoch(flight as Buffer[], state.epoch);
  if (state.recordSequenceNumber >= used) return false;
  state.recordSequenceNumber = used;
  return true;
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
  private stream: OutboundRtpStream | null | undefined;
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
    // Before any application data: the DTLS transport connects first, the events channel's SCTP after it.
    for (const dtls of this.pc.dtlsTransports)
      dtls.onStateChange.subscribe((state) => {
        if (state === 'connected') continueAfterHandshakeRecords(dtls);
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
    const dtls = this.transceiver?.sender.dtlsTransport;
    if (dtls?.state !== 'connected') return;
    const stream = this.outboundStream();
    if (!stream) return;
    void dtls.sendRtp(payload, stream.next(payload.length));
    if (!this.reportTimer) {
      this.reportTimer = setInterval(() => this.sendReport(), SENDER_REPORT_MS);
      this.reportTimer.unref();
    }
  }

  private outboundStream(): OutboundRtpStream | null {
    if (this.stream !== undefined) return this.stream;
    const transceiver = this.transceiver;
    const payloadType = transceiver?.codecs[0]?.payloadType;
    if (!transceiver) return null;
    this.stream = payloadType === undefined ? null : new OutboundRtpStream(transceiver.sender.ssrc, payloadType);
    return this.stream;
  }

  /** One RTCP sender report for what `sendOpus` sent. */
  private sendReport(): void {
    const dtls = this.transceiver?.sender.dtlsTransport;
    const report = this.stream?.senderReport();
    if (!dtls || dtls.state !== 'connected' || !report) return;
    dtls.sendRtcp([report]).catch(() => undefined);
  }

  /**
   * Where and how this call's outbound RTP can be sent by another process, once connected: the nominated
   * pair's UDP socket and remote address, the stream's SSRC and payload type, and the SRTP keys. Null when
   * that is not possible — not connected yet, a TURN-relayed pair (its data is wrapped per packet), or an
   * unresolved remote — and the call then sends from this process.
   */
  outboundRoute(): OutboundRoute | null {
    const transceiver = this.transceiver;
    const dtls = transceiver?.sender.dtlsTransport;
    const payloadType = transceiver?.codecs[0]?.payloadType;
    if (!transceiver || !dtls || dtls.state !== 'connected' || payloadType === undefined || this.stream) return null;
    const pair = dtls.iceTransport.connection.nominated as
      | { protocol: { type?: string; transport?: { type?: string; socket?: unknown } }; remoteAddr: [string, number] }
      | undefined;
    const transport = pair?.protocol.transport;
    const socket = transport?.socket;
    const srtp = (dtls.srtp as unknown as { config?: OutboundRoute['srtp'] } | undefined)?.config;
    if (!pair || pair.protocol.type !== 'stun' || transport?.type !== 'udp' || !(socket instanceof UdpSocket) || !srtp)
      return null;
    const [remoteAddress, remotePort] = pair.remoteAddr;
    if (!isIP(remoteAddress)) return null;
    return { socket, remoteAddress, remotePort, ssrc: transceiver.sender.ssrc, payloadType, srtp };
  }

  async close(): Promise<void> {
    if (this.reportTimer) clearInterval(this.reportTimer);
    this.reportTimer = null;
    this.outbound.stop();
    await this.pc.close();
  }
}
