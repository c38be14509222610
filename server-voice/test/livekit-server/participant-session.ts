import {
  AddTrackRequest,
  JoinResponse,
  ParticipantInfo,
  ParticipantInfo_State,
  ParticipantPermission,
  ParticipantUpdate,
  Pong,
  ServerInfo,
  ServerInfo_Edition,
  SessionDescription,
  SignalRequest,
  SignalResponse,
  SignalTarget,
  TrackInfo,
  TrackPublishedResponse,
  TrackType,
} from '@livekit/protocol';
import type { MediaStreamTrack, RTCDataChannel } from 'werift';
import type { WebSocket } from 'ws';
import {
  PublisherPeer,
  SubscriberPeer,
  parseCandidateInit,
  type DataChannelKind,
  type PublishedMedia,
} from './sfu-peers.js';
import { livekitSid, type RoomMember, type TestRoom } from './test-room.js';

/** The signal protocol version the server claims in ServerInfo (the SDK speaks 17 and does not check it). */
const SERVER_PROTOCOL = 16;
/**
 * Ping cadence the SDK is told to keep. The timeout is generous: a test machine shared with other jobs can
 * stall the event loop for seconds, and a missed pong makes the SDK tear the session down.
 */
const PING_INTERVAL_S = 5;
const PING_TIMEOUT_S = 20;
/** Data packets queued per subscriber channel until it opens (it opens a moment after the PeerConnection). */
const MAX_QUEUED_PACKETS = 256;

/** One line of the signal trace: what went over a participant's signal socket, by message case. */
export interface SignalTraceEntry {
  atMs: number;
  identity: string;
  direction: 'in' | 'out';
  message: string;
}

/** Who is joining, from the verified access token and the connect URL. */
export interface JoinGrant {
  identity: string;
  name: string;
  metadata: string;
  attributes: Record<string, string>;
  canPublish: boolean;
  canSubscribe: boolean;
  canPublishData: boolean;
  /** The client protocol the SDK advertised (`client_protocol`), which other SDKs read to pick RPC / stream versions. */
  clientProtocol: number;
}

/**
 * One participant's signal connection and its two PeerConnections. Requests are handled one at a time, in
 * arrival order: a trickled candidate must not overtake the offer it belongs to.
 */
export class ParticipantSession implements RoomMember {
  readonly info: ParticipantInfo;
  private readonly publisher: PublisherPeer;
  private readonly subscriber: SubscriberPeer;
  /** Tracks announced by AddTrackRequest, by the SDK's local id (`cid`), waiting for or matched to media. */
  private readonly tracksByCid = new Map<string, TrackInfo>();
  private readonly mediaByCid = new Map<string, PublishedMedia>();
  private readonly published = new Set<string>();
  private readonly queued: Record<DataChannelKind, Uint8Array[]> = { reliable: [], lossy: [] };
  private chain: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(
    private readonly socket: WebSocket,
    private readonly room: TestRoom,
    grant: JoinGrant,
    private readonly trace: (entry: SignalTraceEntry) => void,
  ) {
    const joinedAtMs = Date.now();
    this.info = new ParticipantInfo({
      sid: livekitSid('PA'),
      identity: grant.identity,
      name: grant.name,
      metadata: grant.metadata,
      attributes: grant.attributes,
      state: ParticipantInfo_State.ACTIVE,
      joinedAt: BigInt(Math.floor(joinedAtMs / 1000)),
      joinedAtMs: BigInt(joinedAtMs),
      version: 1,
      clientProtocol: grant.clientProtocol,
      permission: new ParticipantPermission({
        canPublish: grant.canPublish,
        canSubscribe: grant.canSubscribe,
        canPublishData: grant.canPublishData,
      }),
    });
    this.publisher = new PublisherPeer({
      onDataChannel: (kind, channel) => this.relayFrom(kind, channel),
      onMedia: (media) => this.mediaArrived(media),
    });
    this.subscriber = new SubscriberPeer(
      (sdp) => this.send({ case: 'offer', value: new SessionDescription({ type: 'offer', sdp }) }),
      (error) => this.fail(error),
    );
    for (const kind of ['reliable', 'lossy'] as const) {
      this.subscriber.channels[kind].stateChanged.subscribe((state) => {
        if (state === 'open') this.flush(kind);
      });
    }
    socket.on('message', (data, isBinary) => {
      if (!isBinary || !(data instanceof Buffer)) return;
      this.enqueue(() => this.handle(data));
    });
    socket.on('close', () => void this.close());
  }

  /** Sends the JoinResponse, enters the room and makes the first subscriber offer (data channels). */
  start(): void {
    this.send({
      case: 'join',
      value: new JoinResponse({
        room: this.room.info(),
        participant: this.info,
        otherParticipants: this.room.othersThan(this),
        serverVersion: '1.9.0-conduit-test',
        serverInfo: new ServerInfo({
          edition: ServerInfo_Edition.Standard,
          version: '1.9.0-conduit-test',
          protocol: SERVER_PROTOCOL,
          nodeId: 'conduit-test-node',
        }),
        // The subscriber PeerConnection carries what the participant receives, data included; the SDK
        // waits for it (not the publisher) before its connect resolves.
        subscriberPrimary: true,
        pingInterval: PING_INTERVAL_S,
        pingTimeout: PING_TIMEOUT_S,
      }),
    });
    this.room.join(this);
    this.subscriber.negotiate();
  }

  sendParticipantUpdate(participants: ParticipantInfo[]): void {
    this.send({ case: 'update', value: new ParticipantUpdate({ participants }) });
  }

  deliverData(kind: DataChannelKind, packet: Uint8Array): void {
    const channel = this.subscriber.channels[kind];
    if (channel.readyState === 'open') {
      channel.send(Buffer.from(packet));
      return;
    }
    if (this.queued[kind].length < MAX_QUEUED_PACKETS) this.queued[kind].push(packet);
  }

  forwardAudio(streamId: string): MediaStreamTrack {
    return this.subscriber.forwardAudio(streamId);
  }

  forwardMedia(kind: 'audio' | 'video', streamId: string, onKeyframeRequest: () => void): MediaStreamTrack {
    return this.subscriber.forward(kind, streamId, onKeyframeRequest);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.room.leave(this);
    if (this.socket.readyState === this.socket.OPEN) this.socket.close();
    await Promise.allSettled([this.publisher.close(), this.subscriber.close()]);
  }

  /** Cuts the participant off without a word, as a failing server node would: the socket and both PeerConnections. */
  async drop(): Promise<void> {
    this.socket.terminate();
    await this.close();
  }

  private flush(kind: DataChannelKind): void {
    const channel = this.subscriber.channels[kind];
    for (const packet of this.queued[kind].splice(0)) channel.send(Buffer.from(packet));
  }

  private relayFrom(kind: DataChannelKind, channel: RTCDataChannel): void {
    channel.onMessage.subscribe((message) => {
      if (typeof message === 'string') return;
      this.room.relayData(this, kind, message);
    });
  }

  private enqueue(step: () => Promise<void>): void {
    this.chain = this.chain.then(step).catch((error: unknown) => this.fail(error));
  }

  private fail(error: unknown): void {
    const message = error instanceof Error ? error.message : String(error);
    this.trace({ atMs: Date.now(), identity: this.info.identity, direction: 'in', message: `error: ${message}` });
    void this.close();
  }

  private async handle(data: Buffer): Promise<void> {
    const request = SignalRequest.fromBinary(data);
    const message = request.message;
    this.trace({ atMs: Date.now(), identity: this.info.identity, direction: 'in', message: message.case ?? 'empty' });
    switch (message.case) {
      case 'offer': {
        const sdp = await this.publisher.answer(message.value.sdp);
        this.send({ case: 'answer', value: new SessionDescription({ type: 'answer', sdp, id: message.value.id }) });
        return;
      }
      case 'answer':
        await this.subscriber.applyAnswer(message.value.sdp);
        return;
      case 'trickle': {
        const candidate = parseCandidateInit(message.value.candidateInit);
        if (!candidate) return;
        if (message.value.target === SignalTarget.SUBSCRIBER) await this.subscriber.addCandidate(candidate);
        else await this.publisher.addCandidate(candidate);
        return;
      }
      case 'addTrack':
        this.addTrack(message.value);
        return;
      case 'pingReq':
        this.send({
          case: 'pongResp',
          value: new Pong({ lastPingTimestamp: message.value.timestamp, timestamp: BigInt(Date.now()) }),
        });
        return;
      case 'ping':
        this.send({ case: 'pong', value: BigInt(Date.now()) });
        return;
      case 'leave':
        await this.close();
        return;
      default:
        // Subscription, track settings, metadata and the rest change nothing this test server models.
        return;
    }
  }

  private addTrack(request: AddTrackRequest): void {
    const track = new TrackInfo({
      sid: livekitSid('TR'),
      type: request.type,
      name: request.name,
      source: request.source,
      muted: request.muted,
      disableDtx: request.disableDtx,
      disableRed: request.disableRed,
      stream: request.stream,
      mimeType: request.type === TrackType.AUDIO ? 'audio/opus' : request.type === TrackType.VIDEO ? 'video/vp8' : '',
      width: request.width,
      height: request.height,
    });
    this.tracksByCid.set(request.cid, track);
    this.send({ case: 'trackPublished', value: new TrackPublishedResponse({ cid: request.cid, track }) });
    this.info.tracks.push(track);
    this.info.version += 1;
    this.info.isPublisher = true;
    this.room.announce(this);
    this.startForwarding(request.cid);
  }

  private mediaArrived(media: PublishedMedia): void {
    this.mediaByCid.set(media.cid, media);
    this.startForwarding(media.cid);
  }

  /** Forwards a published track once both its TrackInfo and its media are known (either may come first). */
  private startForwarding(cid: string): void {
    const track = this.tracksByCid.get(cid);
    const media = this.mediaByCid.get(cid);
    if (!track || !media || this.published.has(cid)) return;
    this.published.add(cid);
    if (track.type === TrackType.VIDEO)
      this.room.publishMedia(this, track.sid, media.track, 'video', media.requestKeyframe);
    else this.room.publishAudio(this, track.sid, media.track);
  }

  private send(message: SignalResponse['message']): void {
    if (this.socket.readyState !== this.socket.OPEN) return;
    this.trace({ atMs: Date.now(), identity: this.info.identity, direction: 'out', message: message.case ?? 'empty' });
    this.socket.send(new SignalResponse({ message }).toBinary());
  }
}
