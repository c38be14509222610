import { describe, expect, it } from 'vitest';
import { parsePcap } from '../../scripts/wire-capture.js';

/** One Ethernet/IPv4/UDP frame on loopback carrying `payload` from `sourcePort`. */
function frame(sourcePort: number, payload: Buffer): Buffer {
  const ethernet = Buffer.alloc(14);
  ethernet.writeUInt16BE(0x0800, 12);
  const ip = Buffer.alloc(20);
  ip[0] = 0x45;
  ip[9] = 17;
  const udp = Buffer.alloc(8);
  udp.writeUInt16BE(sourcePort, 0);
  udp.writeUInt16BE(40000, 2);
  return Buffer.concat([ethernet, ip, udp, payload]);
}

function rtp(byte1: number, sequence: number, ssrc: number): Buffer {
  const header = Buffer.alloc(12 + 20);
  header[0] = 0x80;
  header[1] = byte1;
  header.writeUInt16BE(sequence, 2);
  header.writeUInt32BE(ssrc, 8);
  return header;
}

function pcap(records: { seconds: number; micros: number; data: Buffer }[], linkType = 1): Buffer {
  const global = Buffer.alloc(24);
  global.writeUInt32LE(0xa1b2c3d4, 0);
  global.writeUInt32LE(96, 16);
  global.writeUInt32LE(linkType, 20);
  const parts: Buffer[] = [global];
  for (const record of records) {
    const head = Buffer.alloc(16);
    head.writeUInt32LE(record.seconds, 0);
    head.writeUInt32LE(record.micros, 4);
    head.writeUInt32LE(record.data.length, 8);
    head.writeUInt32LE(record.data.length, 12);
    parts.push(head, record.data);
  }
  return Buffer.concat(parts);
}

describe('bench:voice wire capture (pcap reader)', () => {
  it('keeps RTP with its kernel time, source port, SSRC and sequence; skips RTCP, STUN and DTLS', () => {
    const stun = Buffer.alloc(20);
    stun[1] = 0x01;
    const dtls = Buffer.from([22, 0xfe, 0xfd, ...new Array(20).fill(0)]);
    const sightings = parsePcap(
      pcap([
        { seconds: 100, micros: 500, data: frame(5000, rtp(111, 7, 0xdeadbeef)) },
        { seconds: 100, micros: 20_700, data: frame(5000, rtp(111 | 0x80, 8, 0xdeadbeef)) },
        { seconds: 100, micros: 30_000, data: frame(5000, rtp(200, 0, 0xdeadbeef)) }, // RTCP sender report
        { seconds: 100, micros: 31_000, data: frame(5001, stun) },
        { seconds: 100, micros: 32_000, data: frame(5001, dtls) },
      ]),
    );
    expect(sightings).toEqual([
      { atMs: 100_000.5, sourcePort: 5000, ssrc: 0xdeadbeef, sequence: 7 },
      { atMs: 100_020.7, sourcePort: 5000, ssrc: 0xdeadbeef, sequence: 8 },
    ]);
  });

  it('refuses a file that is not a pcap of an Ethernet-framed capture', () => {
    expect(() => parsePcap(Buffer.alloc(24, 1))).toThrow(/pcap/);
    expect(() => parsePcap(pcap([], 113))).toThrow(/link type 113/);
  });
});
