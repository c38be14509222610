import {
  AudioFrame,
  AudioSource,
  AudioStream,
  LocalAudioTrack,
  Room,
  RoomEvent,
  TrackKind,
  TrackPublishOptions,
  TrackSource,
  type LocalParticipant,
  type RemoteParticipant,
  type RemoteTrack,
} from '@livekit/rtc-node';
import { AccessToken } from 'livekit-server-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLiveKitTestServer, type LiveKitTestServer } from './livekit-test-server.js';

const API_KEY = 'conduit-test-key';
const API_SECRET = 'conduit-test-secret-that-is-long-enough';
/** One generous bound per awaited event: a shared 2-core machine can stall for seconds, a broken path never arrives. */
const EVENT_DEADLINE_MS = 10_000;
/** Several of the SDK's 15 KiB stream chunks, so chunking and reassembly are exercised. */
const BYTE_STREAM_BYTES = 100_000;
const SAMPLE_RATE_HZ = 48_000;
/** The SDK's AudioSource takes 10 ms frames. */
const FRAME_SAMPLES = SAMPLE_RATE_HZ / 100;
const SINE_HZ = 440;
const SINE_AMPLITUDE = 12_000;
/** A decoded frame louder than this carries the sine (Opus keeps most of the amplitude; silence is ~0). */
const HEARD_PEAK = 3_000;
/** Half a second of received audio is analysed: enough periods for the tone's frequency to within a few Hz. */
const ANALYSED_SAMPLES = SAMPLE_RATE_HZ / 2;
/** Frames (10 ms) skipped after the first audible one, while the receiving decoder settles. */
const ONSET_FRAMES = 10;

let server: LiveKitTestServer;
const rooms: Room[] = [];

async function token(identity: string, room: string, secret = API_SECRET): Promise<string> {
  const accessToken = new AccessToken(API_KEY, secret, { identity, name: identity, ttl: '10m' });
  accessToken.addGrant({ room, roomJoin: true, canPublish: true, canSubscribe: true, canPublishData: true });
  return accessToken.toJwt();
}

/**
 * Resolves with the first value `listen` reports, or rejects after the deadline naming what never came and
 * the server's last signal messages. `listen` subscribes and returns its unsubscribe.
 */
function within<T>(what: string, listen: (report: (value: T) => void) => () => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const settle = (): boolean => {
      if (settled) return false;
      settled = true;
      clearTimeout(timer);
      return true;
    };
    const timer = setTimeout(() => {
      if (!settle()) return;
      unsubscribe();
      const recent = server.trace.slice(-30).map((entry) => `${entry.identity} ${entry.direction} ${entry.message}`);
      reject(new Error(`timed out waiting for ${what}; last signal messages:\n${recent.join('\n')}`));
    }, EVENT_DEADLINE_MS);
    const unsubscribe = listen((value) => {
      if (!settle()) return;
      // Deferred: a listener may report before `listen` has returned its unsubscribe.
      queueMicrotask(() => unsubscribe());
      resolve(value);
    });
  });
}

/** The room's local participant; it exists once `connect` resolved. */
function local(room: Room): LocalParticipant {
  const participant = room.localParticipant;
  if (!participant) throw new Error('the room is not connected');
  return participant;
}

async function join(identity: string, roomName: string): Promise<Room> {
  const room = new Room();
  rooms.push(room);
  await room.connect(server.url, await token(identity, roomName), { autoSubscribe: true, dynacast: false });
  return room;
}

function remoteJoined(room: Room, identity: string): Promise<RemoteParticipant> {
  return within(`${identity} to join`, (resolve) => {
    const present = room.remoteParticipants.get(identity);
    if (present) resolve(present);
    const listener = (participant: RemoteParticipant): void => {
      if (participant.identity === identity) resolve(participant);
    };
    room.on(RoomEvent.ParticipantConnected, listener);
    return () => room.off(RoomEvent.ParticipantConnected, listener);
  });
}

/** The next audio track the room subscribes to from that participant. */
function trackSubscribed(room: Room, publisher: string): Promise<RemoteTrack> {
  return within(`a subscription to ${publisher}'s audio`, (resolve) => {
    const listener = (track: RemoteTrack, _publication: unknown, participant: RemoteParticipant): void => {
      if (participant.identity === publisher && track.kind === TrackKind.KIND_AUDIO) resolve(track);
    };
    room.on(RoomEvent.TrackSubscribed, listener);
    return () => room.off(RoomEvent.TrackSubscribed, listener);
  });
}

function peakOf(samples: Int16Array): number {
  return samples.reduce((max, sample) => Math.max(max, Math.abs(sample)), 0);
}

/** The frequency of a pure tone, from its zero crossings (two per period). */
function dominantHz(samples: Int16Array): number {
  let crossings = 0;
  for (let i = 1; i < samples.length; i++) if (samples[i - 1]! < 0 !== samples[i]! < 0) crossings++;
  return (crossings / 2) * (SAMPLE_RATE_HZ / samples.length);
}

function encode(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}

/** The text of the next data packet the room receives. */
function nextData(room: Room, what: string): Promise<string> {
  return within(what, (resolve) => {
    const listener = (payload: Uint8Array): void => resolve(new TextDecoder().decode(payload));
    room.on(RoomEvent.DataReceived, listener);
    return () => room.off(RoomEvent.DataReceived, listener);
  });
}

function sineFrame(startSample: number): AudioFrame {
  const data = new Int16Array(FRAME_SAMPLES);
  for (let i = 0; i < FRAME_SAMPLES; i++)
    data[i] = Math.round(SINE_AMPLITUDE * Math.sin((2 * Math.PI * SINE_HZ * (startSample + i)) / SAMPLE_RATE_HZ));
  return new AudioFrame(data, SAMPLE_RATE_HZ, 1, FRAME_SAMPLES);
}

beforeAll(async () => {
  server = await startLiveKitTestServer({ apiKey: API_KEY, apiSecret: API_SECRET });
});

afterAll(async () => {
  await Promise.allSettled(rooms.map((room) => room.disconnect()));
  await server?.close();
});

describe('LiveKit-compatible test server with the real @livekit/rtc-node SDK', () => {
  let alice: Room;
  let bob: Room;
  let carol: Room;

  it('two participants join one room and see each other', async () => {
    alice = await join('alice', 'conference');
    const bobSeen = remoteJoined(alice, 'bob');
    bob = await join('bob', 'conference');
    const [aliceSeenByBob, bobSeenByAlice] = await Promise.all([remoteJoined(bob, 'alice'), bobSeen]);
    expect(aliceSeenByBob.identity).toBe('alice');
    expect(bobSeenByAlice.identity).toBe('bob');
    expect(alice.isConnected && bob.isConnected).toBe(true);
  });

  it('a reliable data packet from one participant reaches the other with its sender and topic', async () => {
    const received = within<{ text: string; from: string | undefined; topic: string | undefined }>(
      'bob to receive the data packet',
      (resolve) => {
        const listener = (payload: Uint8Array, participant?: RemoteParticipant, _kind?: unknown, topic?: string) =>
          resolve({ text: new TextDecoder().decode(payload), from: participant?.identity, topic });
        bob.on(RoomEvent.DataReceived, listener);
        return () => bob.off(RoomEvent.DataReceived, listener);
      },
    );
    await local(alice).publishData(new TextEncoder().encode('hello bob'), {
      reliable: true,
      topic: 'greetings',
    });
    expect(await received).toEqual({ text: 'hello bob', from: 'alice', topic: 'greetings' });
  });

  it('a lossy data packet travels the lossy channels', async () => {
    const received = nextData(bob, 'bob to receive the lossy packet');
    // One packet between two local peers: nothing to lose it, so the test is not flaky for being lossy.
    await local(alice).publishData(encode('quick'), { reliable: false });
    expect(await received).toBe('quick');
  });

  it('a data packet addressed to one participant reaches only that participant', async () => {
    carol = await join('carol', 'conference');
    await Promise.all([remoteJoined(alice, 'carol'), remoteJoined(bob, 'carol')]);
    const carolGets = nextData(carol, 'carol to receive the addressed packet');
    const bobGets = nextData(bob, 'bob to receive the broadcast packet');
    const sender = local(alice);
    await sender.publishData(encode('for carol only'), { reliable: true, destination_identities: ['carol'] });
    // Sent after the addressed one on the same ordered channel: bob's first packet shows he was skipped.
    await sender.publishData(encode('for everyone'), { reliable: true });
    expect(await carolGets).toBe('for carol only');
    expect(await bobGets).toBe('for everyone');
  });

  it('an RPC call reaches the named participant and its answer comes back', async () => {
    local(bob).registerRpcMethod('greet', async (data) => `hello ${data.callerIdentity}: ${data.payload}`);
    const answer = await local(alice).performRpc({
      destinationIdentity: 'bob',
      method: 'greet',
      payload: 'ping',
      responseTimeout: EVENT_DEADLINE_MS,
    });
    expect(answer).toBe('hello alice: ping');
  });

  it('a byte stream larger than one data packet arrives whole', async () => {
    const blob = Uint8Array.from({ length: BYTE_STREAM_BYTES }, (_, i) => (i * 31) % 251);
    const received = within<{ bytes: Uint8Array; from: string }>('bob to receive the byte stream', (resolve) => {
      bob.registerByteStreamHandler('blobs', (reader, participant) => {
        void reader.readAll().then((chunks) => resolve({ bytes: Buffer.concat(chunks), from: participant.identity }));
      });
      return () => bob.unregisterByteStreamHandler('blobs');
    });
    const writer = await local(alice).streamBytes({ topic: 'blobs', destinationIdentities: ['bob'] });
    await writer.write(blob);
    await writer.close();
    const { bytes, from } = await received;
    expect(from).toBe('alice');
    expect(Buffer.compare(Buffer.from(bytes), Buffer.from(blob))).toBe(0);
  });

  it('a text stream from one participant reaches the other', async () => {
    const received = within<{ text: string; from: string }>('bob to receive the text stream', (resolve) => {
      bob.registerTextStreamHandler('notes', (reader, participant) => {
        void reader.readAll().then((text) => resolve({ text, from: participant.identity }));
      });
      return () => bob.unregisterTextStreamHandler('notes');
    });
    await local(alice).sendText('a longer note', { topic: 'notes' });
    expect(await received).toEqual({ text: 'a longer note', from: 'alice' });
  });

  it("a published sine reaches every other participant, and one's AudioStream hears the tone", async () => {
    const subscribed = trackSubscribed(bob, 'alice');
    const carolSubscribed = trackSubscribed(carol, 'alice');
    const source = new AudioSource(SAMPLE_RATE_HZ, 1, 100);
    const track = LocalAudioTrack.createAudioTrack('microphone', source);
    await local(alice).publishTrack(track, new TrackPublishOptions({ source: TrackSource.SOURCE_MICROPHONE }));
    let speaking = true;
    const speak = (async () => {
      for (let sample = 0; speaking; sample += FRAME_SAMPLES) await source.captureFrame(sineFrame(sample));
    })();
    try {
      const [remote] = await Promise.all([subscribed, carolSubscribed]);
      const stream = new AudioStream(remote, { sampleRate: SAMPLE_RATE_HZ, numChannels: 1 });
      const heard = await within<Int16Array>('half a second of the sine on bob’s AudioStream', (resolve) => {
        let stopped = false;
        void (async () => {
          const samples: number[] = [];
          let audibleFrames = 0;
          for await (const frame of stream) {
            if (stopped) break;
            // Counted from the first audible frame: the stream starts with silence until RTP arrives.
            if (audibleFrames === 0 && peakOf(frame.data) < HEARD_PEAK) continue;
            // The first frames after onset are skipped too: the decoder's ramp-up adds zero crossings.
            if (++audibleFrames <= ONSET_FRAMES) continue;
            samples.push(...frame.data);
            if (samples.length >= ANALYSED_SAMPLES) {
              resolve(Int16Array.from(samples));
              break;
            }
          }
        })();
        return () => {
          stopped = true;
        };
      });
      expect(dominantHz(heard)).toBeGreaterThan(SINE_HZ - 20);
      expect(dominantHz(heard)).toBeLessThan(SINE_HZ + 20);
      expect(peakOf(heard)).toBeGreaterThan(HEARD_PEAK);
    } finally {
      speaking = false;
      await speak;
      await source.close();
    }
  });

  it('a participant that leaves is reported gone to the others', async () => {
    const gone = within<string>('alice to see carol leave', (resolve) => {
      const listener = (participant: RemoteParticipant): void => {
        if (participant.identity === 'carol') resolve(participant.identity);
      };
      alice.on(RoomEvent.ParticipantDisconnected, listener);
      return () => alice.off(RoomEvent.ParticipantDisconnected, listener);
    });
    await carol.disconnect();
    expect(await gone).toBe('carol');
    expect(alice.remoteParticipants.has('carol')).toBe(false);
  });

  it('a participant the server drops reconnects, is seen again and receives again', async () => {
    const reconnected = within<void>('bob to reconnect', (resolve) => {
      const listener = (): void => resolve();
      bob.on(RoomEvent.Reconnected, listener);
      return () => bob.off(RoomEvent.Reconnected, listener);
    });
    const seenLeaving = within<void>('alice to see bob dropped', (resolve) => {
      const listener = (participant: RemoteParticipant): void => {
        if (participant.identity === 'bob') resolve();
      };
      alice.on(RoomEvent.ParticipantDisconnected, listener);
      return () => alice.off(RoomEvent.ParticipantDisconnected, listener);
    });
    const resubscribed = trackSubscribed(bob, 'alice');
    expect(await server.dropParticipant('bob')).toBe(true);
    await seenLeaving;
    const seenAgain = remoteJoined(alice, 'bob');
    await reconnected;
    await seenAgain;
    // The full reconnect renegotiated bob's subscriber PeerConnection: alice's published track comes back.
    await resubscribed;
    const bobGets = nextData(bob, 'bob to receive a packet after reconnecting');
    await local(alice).publishData(encode('welcome back'), { reliable: true });
    expect(await bobGets).toBe('welcome back');
  });

  it('a token signed with the wrong secret is refused', async () => {
    const room = new Room();
    rooms.push(room);
    const forged = await token('mallory', 'conference', 'not-the-secret-at-all-000000');
    // The SDK learns why from /rtc/validate after the refused upgrade, and reports the 401.
    await expect(room.connect(server.url, forged)).rejects.toThrow(/401/);
    expect(room.isConnected).toBe(false);
  });
});
