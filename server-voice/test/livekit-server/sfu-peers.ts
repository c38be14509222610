import {
  MediaStream,
  MediaStreamTrack,
  RTCPeerConnection,
  RTCRtpCodecParameters,
  type RTCDataChannel,
  type RTCTrackEvent,
} from 'werift';
import { continueAfterHandshakeRecords, peerConfig } from '../../src/media/call-peer.js';

/** LiveKit's data channel labels; the SDK picks the subscriber's channels by these names. */
export const RELIABLE_CHANNEL_LABEL = '_reliable';
export const LOSSY_CHANNEL_LABEL = '_lossy';
export type DataChannelKind = 'reliable' | 'lossy';

/** The JSON a LiveKit `TrickleRequest.candidateInit` carries (the SDKs' `RTCIceCandidateInit`). */
export interface CandidateInit {
  candidate: string;
  sdpMid?: string;
  sdpMLineIndex?: number;
}

/** A trickled candidate's JSON, or null when it is not one (validated before it reaches werift). */
export function parseCandidateInit(json: string): CandidateInit | null {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  const record = value as Record<string, unknown>;
  if (typeof record.candidate !== 'string') return null;
  return {
    candidate: record.candidate,
    ...(typeof record.sdpMid === 'string' ? { sdpMid: record.sdpMid } : {}),
    ...(typeof record.sdpMLineIndex === 'number' ? { sdpMLineIndex: record.sdpMLineIndex } : {}),
  };
}

function newPeerConnection(): RTCPeerConnection {
  // No loopback-only pairing: libwebrtc in the SDK gathers no loopback candidates (only the machine's
  // interface addresses), so a machine with nothing but `lo` cannot run these tests.
  const config = peerConfig({ iceServers: [], loopbackCandidate: true });
  return new RTCPeerConnection({
    ...config,
    // Cameras as the SDK publishes them without simulcast: VP8, with the keyframe requests it answers.
    codecs: {
      ...config.codecs,
      video: [
        new RTCRtpCodecParameters({
          mimeType: 'video/VP8',
          clockRate: 90_000,
          rtcpFeedback: [{ type: 'nack' }, { type: 'nack', parameter: 'pli' }, { type: 'ccm', parameter: 'fir' }],
        }),
      ],
    },
  });
}

/**
 * Arms the gateway's werift DTLS record-number fix on transports created by the last local description:
 * BoringSSL (in the SDK's libwebrtc, as in browsers) drops werift's 8th application record as a replay (see
 * `continueAfterHandshakeRecords`), and the SCTP retransmission that recovers it stalls data by a second or
 * more (measured without it: an RPC round trip of 1.5 s instead of 0.3 s).
 */
function armRecordContinuation(pc: RTCPeerConnection, armed: WeakSet<object>): void {
  for (const dtls of pc.dtlsTransports) {
    if (armed.has(dtls)) continue;
    armed.add(dtls);
    dtls.onStateChange.subscribe((state) => {
      if (state === 'connected') continueAfterHandshakeRecords(dtls);
    });
  }
}

/** Whether the SDP carries at least one ICE candidate (werift adds them once gathering completes). */
function hasCandidates(sdp: string): boolean {
  return /^a=candidate:/m.test(sdp);
}

/**
 * An audio track the publisher PeerConnection received, named by its msid track id: the SDK's local track
 * id, which its AddTrackRequest sent as `cid`.
 */
export interface PublishedMedia {
  cid: string;
  track: MediaStreamTrack;
  /** Asks the publisher for a keyframe (a video subscriber's decoder needs one to start). */
  requestKeyframe: () => void;
}

/** RTCP payload-specific feedback (206) asking for a keyframe: PLI (FMT 1) or FIR (FMT 4). */
function isKeyframeRequest(rtcp: { type: number; feedback?: { count?: number } }): boolean {
  return rtcp.type === 206 && (rtcp.feedback?.count === 1 || rtcp.feedback?.count === 4);
}

/**
 * The participant's publisher PeerConnection: the SDK offers, the server answers (LiveKit's dual-PC model).
 * Carries the participant's outgoing data channels and published tracks.
 */
export class PublisherPeer {
  readonly pc = newPeerConnection();
  private readonly armed = new WeakSet<object>();

  constructor(handlers: {
    onDataChannel: (kind: DataChannelKind, channel: RTCDataChannel) => void;
    onMedia: (media: PublishedMedia) => void;
  }) {
    this.pc.onDataChannel.subscribe((channel) => {
      const kind = channelKind(channel.label);
      if (kind) handlers.onDataChannel(kind, channel);
    });
    // Subscribed before any remote description is applied: werift reports remote tracks while applying it.
    this.pc.ontrack = (event: RTCTrackEvent) => {
      const cid = event.transceiver.receiver.remoteTrackId;
      if ((event.track.kind !== 'audio' && event.track.kind !== 'video') || !cid) return;
      const { receiver } = event.transceiver;
      const track = event.track;
      handlers.onMedia({
        cid,
        track,
        requestKeyframe: () => {
          if (track.ssrc !== undefined) void receiver.sendRtcpPLI(track.ssrc).catch(() => undefined);
        },
      });
    };
  }

  /** Applies the SDK's offer and returns the answer SDP, candidates included. */
  async answer(offerSdp: string): Promise<string> {
    await this.pc.setRemoteDescription({ type: 'offer', sdp: offerSdp });
    const answer = await this.pc.createAnswer();
    // The server takes the DTLS server role (a=setup:passive), as the voice gateway does: werift's DTLS
    // client fails when a slow peer answers a retransmitted ClientHello twice.
    await this.pc.setLocalDescription({
      type: 'answer',
      sdp: answer.sdp.replace(/^a=setup:active(\r?)$/gm, 'a=setup:passive$1'),
    });
    armRecordContinuation(this.pc, this.armed);
    const local = this.pc.localDescription;
    if (!local || !hasCandidates(local.sdp)) throw new Error('the publisher answer has no ICE candidates');
    return local.sdp;
  }

  async addCandidate(candidate: CandidateInit): Promise<void> {
    await this.pc.addIceCandidate(candidate);
  }

  async close(): Promise<void> {
    await this.pc.close();
  }
}

function channelKind(label: string): DataChannelKind | null {
  if (label === RELIABLE_CHANNEL_LABEL) return 'reliable';
  if (label === LOSSY_CHANNEL_LABEL) return 'lossy';
  return null;
}

/**
 * The participant's subscriber PeerConnection: the server offers (at join, for the data channels, and again
 * for every forwarded track) and the SDK answers. One offer is in flight at a time: a change while an offer
 * waits for its answer is folded into one follow-up offer, as LiveKit's SFU does.
 */
export class SubscriberPeer {
  readonly pc = newPeerConnection();
  readonly channels: Record<DataChannelKind, RTCDataChannel>;
  private readonly armed = new WeakSet<object>();
  private awaitingAnswer = false;
  private offerAgain = false;

  constructor(
    private readonly sendOffer: (sdp: string) => void,
    private readonly onError: (error: unknown) => void,
  ) {
    this.channels = {
      reliable: this.pc.createDataChannel(RELIABLE_CHANNEL_LABEL, { ordered: true }),
      lossy: this.pc.createDataChannel(LOSSY_CHANNEL_LABEL, { ordered: false, maxRetransmits: 0 }),
    };
  }

  /**
   * Adds a send-only audio section for a forwarded track. The SDK finds the publisher and the publication by
   * the msid stream id, `participantSid|trackSid`.
   */
  forwardAudio(streamId: string): MediaStreamTrack {
    return this.forward('audio', streamId, () => undefined);
  }

  /**
   * Adds a send-only section of either kind; the subscriber's keyframe requests (PLI/FIR) on it reach
   * `onKeyframeRequest`, which relays them to the publisher.
   */
  forward(kind: 'audio' | 'video', streamId: string, onKeyframeRequest: () => void): MediaStreamTrack {
    const track = new MediaStreamTrack({ kind });
    const transceiver = this.pc.addTransceiver(track, {
      direction: 'sendonly',
      streams: [new MediaStream({ id: streamId })],
    });
    transceiver.sender.onRtcp.subscribe((rtcp) => {
      if (isKeyframeRequest(rtcp as { type: number; feedback?: { count?: number } })) onKeyframeRequest();
    });
    this.negotiate();
    return track;
  }

  negotiate(): void {
    if (this.awaitingAnswer) {
      this.offerAgain = true;
      return;
    }
    this.awaitingAnswer = true;
    this.offer().catch(this.onError);
  }

  private async offer(): Promise<void> {
    await this.pc.setLocalDescription(await this.pc.createOffer());
    armRecordContinuation(this.pc, this.armed);
    const local = this.pc.localDescription;
    if (!local || !hasCandidates(local.sdp)) throw new Error('the subscriber offer has no ICE candidates');
    this.sendOffer(local.sdp);
  }

  async applyAnswer(sdp: string): Promise<void> {
    await this.pc.setRemoteDescription({ type: 'answer', sdp });
    this.awaitingAnswer = false;
    if (this.offerAgain) {
      this.offerAgain = false;
      this.negotiate();
    }
  }

  async addCandidate(candidate: CandidateInit): Promise<void> {
    await this.pc.addIceCandidate(candidate);
  }

  async close(): Promise<void> {
    await this.pc.close();
  }
}
