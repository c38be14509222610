import { randomBytes } from 'node:crypto';
import { DataPacket, ParticipantInfo, ParticipantInfo_State, Room } from '@livekit/protocol';
import type { MediaStreamTrack, RtpPacket } from 'werift';
import type { DataChannelKind } from './sfu-peers.js';

/** A LiveKit-style id: the prefix names the kind (`RM_`, `PA_`, `TR_`), the SDK checks it. */
export function livekitSid(prefix: 'RM' | 'PA' | 'TR'): string {
  return `${prefix}_${randomBytes(6).toString('hex')}`;
}

/** What the room needs from a joined participant's session. */
export interface RoomMember {
  readonly info: ParticipantInfo;
  /** Sends ParticipantUpdate with these participants' current info. */
  sendParticipantUpdate(participants: ParticipantInfo[]): void;
  /** Delivers an encoded DataPacket on the member's subscriber data channel of that kind. */
  deliverData(kind: DataChannelKind, packet: Uint8Array): void;
  /** Opens a send-only audio section on the member's subscriber PeerConnection for a forwarded track. */
  forwardAudio(streamId: string): MediaStreamTrack;
  /** Opens a send-only section of either kind; keyframe requests on it call `onKeyframeRequest`. */
  forwardMedia(kind: 'audio' | 'video', streamId: string, onKeyframeRequest: () => void): MediaStreamTrack;
}

interface PublishedTrack {
  publisher: RoomMember;
  trackSid: string;
  kind: 'audio' | 'video';
  requestKeyframe: () => void;
  /** Each subscriber's copy of the track, written with every RTP packet the publisher sends. */
  forwards: Map<RoomMember, MediaStreamTrack>;
}

/**
 * One room of the test server: who is in it, which audio tracks are published, and the fan-out of data
 * packets and RTP between members. Every member subscribes to every track (auto-subscribe, as the SDK
 * defaults to).
 */
export class TestRoom {
  readonly sid = livekitSid('RM');
  readonly createdAtMs = Date.now();
  private readonly members = new Map<string, RoomMember>();
  private readonly tracks: PublishedTrack[] = [];

  constructor(readonly name: string) {}

  get isEmpty(): boolean {
    return this.members.size === 0;
  }

  info(): Room {
    return new Room({
      sid: this.sid,
      name: this.name,
      emptyTimeout: 300,
      creationTime: BigInt(Math.floor(this.createdAtMs / 1000)),
      creationTimeMs: BigInt(this.createdAtMs),
      numParticipants: this.members.size,
    });
  }

  /** Every member's info (RoomService ListParticipants). */
  participants(): ParticipantInfo[] {
    return [...this.members.values()].map((member) => member.info);
  }

  /** The other members' info, for the newcomer's JoinResponse. */
  othersThan(member: RoomMember): ParticipantInfo[] {
    return [...this.members.values()].filter((other) => other !== member).map((other) => other.info);
  }

  /** Admits a member, tells the others, and forwards the tracks already published to it. */
  join(member: RoomMember): void {
    const replaced = [...this.members.values()].find((other) => other.info.identity === member.info.identity);
    if (replaced) this.leave(replaced);
    this.members.set(member.info.sid, member);
    this.broadcastUpdate(member, [member.info]);
    for (const track of this.tracks) this.forwardTo(track, member);
  }

  leave(member: RoomMember): void {
    if (this.members.get(member.info.sid) !== member) return;
    this.members.delete(member.info.sid);
    this.tracks.splice(0, this.tracks.length, ...this.tracks.filter((track) => track.publisher !== member));
    for (const track of this.tracks) track.forwards.delete(member);
    const gone = member.info.clone();
    gone.state = ParticipantInfo_State.DISCONNECTED;
    this.broadcastUpdate(member, [gone]);
  }

  /** Announces a member's new info (a published track) to everyone, the member included, as LiveKit does. */
  announce(member: RoomMember): void {
    for (const other of this.members.values()) other.sendParticipantUpdate([member.info]);
  }

  /**
   * Starts forwarding a published audio track's RTP to every other member. Called once both halves are
   * known: the TrackInfo (from AddTrackRequest) and the media (from the publisher PeerConnection).
   */
  publishAudio(publisher: RoomMember, trackSid: string, media: MediaStreamTrack): void {
    this.publishMedia(publisher, trackSid, media, 'audio', () => undefined);
  }

  /** Starts forwarding a published track of either kind (video: keyframe requests go back to the publisher). */
  publishMedia(
    publisher: RoomMember,
    trackSid: string,
    media: MediaStreamTrack,
    kind: 'audio' | 'video',
    requestKeyframe: () => void,
  ): void {
    const track: PublishedTrack = { publisher, trackSid, kind, requestKeyframe, forwards: new Map() };
    this.tracks.push(track);
    media.onReceiveRtp.subscribe((packet: RtpPacket) => {
      for (const forward of track.forwards.values()) forward.writeRtp(packet.clone());
    });
    for (const member of this.members.values()) this.forwardTo(track, member);
  }

  private forwardTo(track: PublishedTrack, member: RoomMember): void {
    if (member === track.publisher) return;
    const streamId = `${track.publisher.info.sid}|${track.trackSid}`;
    track.forwards.set(
      member,
      track.kind === 'audio'
        ? member.forwardAudio(streamId)
        : member.forwardMedia('video', streamId, track.requestKeyframe),
    );
    // A new video subscriber cannot decode until the next keyframe: ask for one now.
    if (track.kind === 'video') track.requestKeyframe();
  }

  /**
   * Relays a data packet a member sent: stamps the sender (the SDK trusts the server's identity, not the
   * client's) and delivers it to the packet's destinations, or to everyone else when it names none.
   */
  relayData(sender: RoomMember, kind: DataChannelKind, bytes: Uint8Array): void {
    let packet: DataPacket;
    try {
      packet = DataPacket.fromBinary(bytes);
    } catch {
      return;
    }
    packet.participantIdentity = sender.info.identity;
    packet.participantSid = sender.info.sid;
    if (packet.value.case === 'user') {
      packet.value.value.participantIdentity = sender.info.identity;
      packet.value.value.participantSid = sender.info.sid;
    }
    const destinations = new Set(packet.destinationIdentities);
    packet.destinationIdentities = [];
    const encoded = packet.toBinary();
    for (const member of this.members.values()) {
      if (member === sender) continue;
      if (destinations.size > 0 && !destinations.has(member.info.identity)) continue;
      member.deliverData(kind, encoded);
    }
  }

  private broadcastUpdate(about: RoomMember, participants: ParticipantInfo[]): void {
    for (const other of this.members.values()) if (other !== about) other.sendParticipantUpdate(participants);
  }
}
