import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { FrameReader, frameHeader } from '../../src/watch/ws-frames.js';

function masked(opcode: number, payload: Buffer, fin = true): Buffer {
  const mask = randomBytes(4);
  const body = Buffer.from(payload);
  for (let i = 0; i < body.length; i += 1) body[i]! ^= mask[i & 3]!;
  const header = frameHeader(opcode, payload.length);
  header[0] = (fin ? 0x80 : 0) | opcode;
  header[1]! |= 0x80;
  return Buffer.concat([header, mask, body]);
}

describe('FrameReader', () => {
  it('assembles a 64 KB message fed one byte at a time', () => {
    const payload = randomBytes(65_536);
    const frame = masked(0x2, payload);
    const reader = new FrameReader();
    const events = [];
    for (let i = 0; i < frame.length; i += 1) events.push(...reader.push(frame.subarray(i, i + 1)));
    expect(events).toHaveLength(1);
    const [event] = events;
    expect(event?.kind).toBe('binary');
    expect(event?.kind === 'binary' && event.payload.equals(payload)).toBe(true);
  });

  it('splits several frames arriving in one chunk, with 7-, 16- and 64-bit lengths', () => {
    const sizes = [1, 125, 126, 65_535, 65_536];
    const payloads = sizes.map((n) => randomBytes(n));
    const reader = new FrameReader();
    const events = reader.push(Buffer.concat([...payloads.map((p) => masked(0x2, p)), masked(0x9, Buffer.from('x'))]));
    expect(events.map((e) => e.kind)).toEqual(['binary', 'binary', 'binary', 'binary', 'binary', 'ping']);
    events.slice(0, 5).forEach((e, i) => expect(e.kind === 'binary' && e.payload.equals(payloads[i]!)).toBe(true));
  });

  it('unmasks every length exactly, whatever the chunking (payloads are views of the chunks)', () => {
    for (let round = 0; round < 50; round += 1) {
      const payloads = Array.from({ length: 20 }, (_v, i) => randomBytes((round * 7 + i * 13) % 300));
      const stream = Buffer.concat(payloads.map((p) => masked(0x2, p)));
      const reader = new FrameReader();
      const got: Buffer[] = [];
      for (let at = 0; at < stream.length;) {
        const size = 1 + Math.floor(Math.random() * 700);
        // A fresh copy per chunk, as the socket delivers them.
        for (const e of reader.push(Buffer.from(stream.subarray(at, at + size)))) {
          if (e.kind === 'binary') got.push(Buffer.from(e.payload));
        }
        at += size;
      }
      expect(got).toHaveLength(payloads.length);
      got.forEach((payload, i) => expect(payload.equals(payloads[i]!)).toBe(true));
    }
  });

  it('refuses an oversized message from its header, before the payload arrives', () => {
    const header = masked(0x2, Buffer.alloc(65_537)).subarray(0, 14);
    expect(new FrameReader().push(header)).toEqual([{ kind: 'violation', code: 1009, reason: 'too_big' }]);
  });

  it('reports the close code of a close frame and stops reading after it', () => {
    const reader = new FrameReader();
    const close = Buffer.alloc(2);
    close.writeUInt16BE(4001, 0);
    expect(reader.push(Buffer.concat([masked(0x8, close), masked(0x2, Buffer.from([1]))]))).toEqual([
      { kind: 'close', code: 4001 },
    ]);
    expect(reader.push(masked(0x2, Buffer.from([1])))).toEqual([]);
  });
});
