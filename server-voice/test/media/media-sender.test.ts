import { randomBytes } from 'node:crypto';
import dgram from 'node:dgram';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ProtectionProfileAes128CmHmacSha1_80,
  RtcpPacketConverter,
  RtcpSrPacket,
  RtpPacket,
  SrtcpSession,
  SrtpSession,
} from 'werift';
import { memoryLogger } from '../../src/log.js';
import type { OutboundRoute } from '../../src/media/call-peer.js';
import { ManualFrameClock } from '../../src/media/frame-clock.js';
import { MediaSender, type RemoteOutput } from '../../src/media/media-sender.js';
import { OpusEncoder } from '../../src/media/opus-codec.js';
import { MAX_QUEUED_FRAMES } from '../../src/media/paced-output.js';

/** A loud 20 ms frame at 48 kHz (its Opus packet is far larger than the 3-byte silence packet). */
function toneFrame(): Int16Array {
  const frame = new Int16Array(960);
  for (let i = 0; i < frame.length; i += 1) frame[i] = Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 48_000));
  return frame;
}

interface Received {
  atMs: number;
  sequence: number;
  timestamp: number;
  marker: boolean;
  ssrc: number;
  payloadType: number;
  speech: boolean;
}

/**
 * One call's ends: the "gateway" socket whose handle the sender process borrows, and the "client" socket
 * that receives, decrypts and parses what the process sends (SRTP with the mirrored keys, as a peer would).
 */
async function callEnds(ssrc: number) {
  const gateway = dgram.createSocket('udp4');
  const client = dgram.createSocket('udp4');
  await new Promise<void>((resolve) => gateway.bind(0, '127.0.0.1', resolve));
  await new Promise<void>((resolve) => client.bind(0, '127.0.0.1', resolve));
  const keys = {
    localMasterKey: randomBytes(16),
    localMasterSalt: randomBytes(14),
    remoteMasterKey: randomBytes(16),
    remoteMasterSalt: randomBytes(14),
  };
  const mirrored = {
    profile: ProtectionProfileAes128CmHmacSha1_80,
    keys: {
      localMasterKey: keys.remoteMasterKey,
      localMasterSalt: keys.remoteMasterSalt,
      remoteMasterKey: keys.localMasterKey,
      remoteMasterSalt: keys.localMasterSalt,
    },
  };
  const srtp = new SrtpSession(mirrored);
  const srtcp = new SrtcpSession(mirrored);
  const packets: Received[] = [];
  /** Sender reports, each with the number of RTP packets that had arrived before it. */
  const reports: { report: RtcpSrPacket; received: number }[] = [];
  client.on('message', (data) => {
    // RTCP packet types 200–204 sit where RTP's marker and payload type are (RFC 5761).
    const type = data[1] ?? 0;
    if (type >= 200 && type <= 204) {
      for (const packet of RtcpPacketConverter.deSerialize(srtcp.decrypt(data)))
        if (packet instanceof RtcpSrPacket) reports.push({ report: packet, received: packets.length });
      return;
    }
    const packet = RtpPacket.deSerialize(srtp.decrypt(data));
    packets.push({
      atMs: performance.now(),
      sequence: packet.header.sequenceNumber,
      timestamp: packet.header.timestamp,
      marker: packet.header.marker,
      ssrc: packet.header.ssrc,
      payloadType: packet.header.payloadType,
      speech: packet.payload.length > 10,
    });
  });
  let inbound = 0;
  gateway.on('message', () => (inbound += 1));
  const route: OutboundRoute = {
    socket: gateway,
    remoteAddress: '127.0.0.1',
    remotePort: client.address().port,
    ssrc,
    payloadType: 111,
    srtp: { profile: ProtectionProfileAes128CmHmacSha1_80, keys },
  };
  return {
    route,
    packets,
    reports,
    inbound: () => inbound,
    /** Sends `count` datagrams to the gateway socket, as a client's RTP, STUN and DTLS would arrive. */
    sendToGateway: (count: number) => {
      for (let i = 0; i < count; i += 1)
        client.send(Buffer.from([0x80, 0, 0, i & 0xff]), gateway.address().port, '127.0.0.1');
    },
    close: () => {
      gateway.close();
      client.close();
    },
  };
}

async function until<T>(check: () => T | undefined | false, timeoutMs: number, what: string): Promise<T> {
  const end = performance.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value) return value;
    if (performance.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('the media sender process', () => {
  const logger = memoryLogger();
  const sender = new MediaSender(logger, { lowerHelperThreads: false, realtimePriority: 0 });
  const events = () => logger.lines.map((line) => JSON.parse(line) as { event: string; [key: string]: unknown });

  /** A call's output whose callbacks the test does not need. */
  const quietOutput = (id: string) =>
    sender.output(id, new OpusEncoder(), { onSpeechSent: () => undefined, onLost: () => undefined });

  beforeAll(() => sender.start());
  afterAll(() => sender.close());

  it('paces held and written frames on the call socket as one SRTP stream, with silence between and sender reports', async () => {
    const ends = await callEnds(0x1234);
    const sent: number[] = [];
    const output = sender.output('call-a', new OpusEncoder(), {
      onSpeechSent: () => sent.push(performance.now()),
      onLost: () => undefined,
    });
    try {
      // Written before the call connects: held, then handed over with the route.
      for (let i = 0; i < 3; i += 1) expect(await output.write(toneFrame(), output.epoch)).toBe(true);
      expect(output.queuedFrames).toBe(3);
      await output.attach(ends.route);
      await output.drained();
      expect(sent).toHaveLength(3);
      // Backpressure: 40 frames written at once never put more than 500 ms in flight.
      let most = 0;
      const writes = Array.from({ length: 40 }, async () => {
        const accepted = await output.write(toneFrame(), output.epoch);
        most = Math.max(most, output.queuedFrames);
        return accepted;
      });
      expect(await Promise.all(writes)).toEqual(Array(40).fill(true));
      expect(most).toBeLessThanOrEqual(MAX_QUEUED_FRAMES);
      await output.drained();
      await until(() => ends.reports.length > 0 && ends.packets.length > 60, 5000, 'a sender report');

      const packets = ends.packets;
      expect(packets.filter((p) => p.speech)).toHaveLength(43);
      expect(sent).toHaveLength(43);
      expect(new Set(packets.map((p) => p.ssrc))).toEqual(new Set([0x1234]));
      expect(new Set(packets.map((p) => p.payloadType))).toEqual(new Set([111]));
      expect(packets.filter((p) => p.marker)).toEqual([packets[0]]);
      for (let i = 1; i < packets.length; i += 1) {
        expect((packets[i]!.sequence - packets[i - 1]!.sequence) & 0xffff).toBe(1);
        expect((packets[i]!.timestamp - packets[i - 1]!.timestamp) >>> 0).toBe(960);
      }
      // One packet per 20 ms: the 43 speech frames took 43 ticks, with silence only before and after them.
      const speech = packets.flatMap((p, index) => (p.speech ? [index] : []));
      expect(speech.at(-1)! - speech[0]! + 1).toBeLessThanOrEqual(43 + 2);
      const span = packets.at(-1)!.atMs - packets[0]!.atMs;
      expect(span / (packets.length - 1)).toBeGreaterThan(17);
      expect(span / (packets.length - 1)).toBeLessThan(23);
      const { report, received } = ends.reports.at(-1)!;
      expect(report.ssrc).toBe(0x1234);
      expect(Math.abs(report.senderInfo.packetCount - received)).toBeLessThanOrEqual(2);
    } finally {
      output.stop();
      ends.close();
    }
  });

  it('never reads the call socket: every inbound datagram still reaches the gateway', async () => {
    const ends = await callEnds(0x2000);
    const output = quietOutput('call-b');
    try {
      await output.attach(ends.route);
      await until(() => ends.packets.length >= 3, 2000, 'silence packets');
      ends.sendToGateway(200);
      await until(() => ends.inbound() === 200 || undefined, 2000, 'all 200 datagrams at the gateway');
      expect(ends.inbound()).toBe(200);
    } finally {
      output.stop();
      ends.close();
    }
  });

  it('clear drops queued speech at once and cancels waiting writes; stop ends the stream', async () => {
    const ends = await callEnds(0x3000);
    const output = quietOutput('call-c');
    try {
      await output.attach(ends.route);
      const epoch = output.epoch;
      const writes = Array.from({ length: 40 }, () => output.write(toneFrame(), epoch));
      await until(() => ends.packets.some((p) => p.speech), 2000, 'speech');
      output.clear();
      const clearedAt = performance.now();
      const results = await Promise.all(writes);
      // Writes still waiting for room when the clear came were cancelled.
      expect(results.filter((accepted) => !accepted).length).toBeGreaterThan(0);
      expect(output.queuedFrames).toBe(0);
      await output.drained();
      await until(() => ends.packets.some((p) => p.atMs > clearedAt + 200) || undefined, 2000, 'packets after clear');
      // At most the frames already on their way (the clear crosses one IPC hop); then silence.
      expect(ends.packets.filter((p) => p.atMs > clearedAt + 150 && p.speech)).toEqual([]);
      expect(ends.packets.filter((p) => p.speech).length).toBeLessThan(MAX_QUEUED_FRAMES);
      output.stop();
      const stoppedAt = ends.packets.length;
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(ends.packets.length - stoppedAt).toBeLessThanOrEqual(2);
    } finally {
      output.stop();
      ends.close();
    }
  });

  it('ends the calls it was sending for when it dies, and the next call starts a new one', async () => {
    const ends = await callEnds(0x4000);
    const lost: string[] = [];
    const output = sender.output('call-d', new OpusEncoder(), {
      onSpeechSent: () => undefined,
      onLost: (r) => lost.push(r),
    });
    let next: RemoteOutput | null = null;
    const again = await callEnds(0x5000);
    try {
      await output.attach(ends.route);
      const pid = sender.started?.pid;
      expect(pid).toBeGreaterThan(0);
      // A terminal's Ctrl-C or a group-wide stop signal is left to the gateway, which closes this process itself.
      process.kill(pid!, 'SIGINT');
      process.kill(pid!, 'SIGTERM');
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(lost).toEqual([]);
      process.kill(pid!, 'SIGKILL');
      await until(() => lost.length > 0, 5000, 'the call to be told');
      expect(lost).toEqual(['media sender exited']);
      expect(events().find((e) => e.event === 'media_sender_exited')).toMatchObject({ calls: 1, signal: 'SIGKILL' });

      next = sender.output('call-e', new OpusEncoder(), { onSpeechSent: () => undefined, onLost: () => undefined });
      await next.attach(again.route);
      expect(sender.started?.pid).not.toBe(pid);
      expect(await next.write(toneFrame(), next.epoch)).toBe(true);
      await next.drained();
      await until(() => again.packets.some((p) => p.speech), 2000, 'speech from the new process');
    } finally {
      output.stop();
      next?.stop();
      ends.close();
      again.close();
    }
  });
});

describe('a call whose route cannot be handed over', () => {
  it('is paced in this process with the same queue rules (attachLocal)', async () => {
    const clock = new ManualFrameClock();
    const sender = new MediaSender(memoryLogger(), { lowerHelperThreads: false, realtimePriority: 0 });
    const sentPackets: Buffer[] = [];
    let speechSent = 0;
    const output = sender.output('call-local', new OpusEncoder(), {
      onSpeechSent: () => (speechSent += 1),
      onLost: () => undefined,
    });
    await output.write(toneFrame(), output.epoch);
    output.attachLocal(clock, (packet) => sentPackets.push(packet));
    clock.advance(20);
    expect(sentPackets).toHaveLength(1);
    expect(sentPackets[0]!.length).toBeGreaterThan(10);
    expect(speechSent).toBe(1);
    await output.drained();
    clock.advance(40);
    // Silence on every tick with nothing queued: the encoder's 3-byte silence packet.
    expect(sentPackets.slice(1).map((p) => p.length)).toEqual([3, 3]);
    // A reply after silence: its first frame goes out at once, the rest wait for ticks; clear drops them.
    const epoch = output.epoch;
    const writes = Array.from({ length: 5 }, () => output.write(toneFrame(), epoch));
    expect(sentPackets).toHaveLength(4);
    output.clear();
    expect(await Promise.all(writes)).toEqual([true, true, true, true, true]);
    clock.advance(60);
    expect(sentPackets.map((p) => (p.length > 10 ? 'speech' : 'silence'))).toEqual([
      'speech',
      'silence',
      'silence',
      'speech',
      // The early frame took this tick's place.
      'silence',
      'silence',
    ]);
    output.stop();
    clock.advance(40);
    expect(sentPackets).toHaveLength(6);
    await sender.close();
  });
});
