import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { appSourceOf, AppSubmissions } from '../../src/notifier/app-submissions.js';
import { FrameReader } from '../../src/notifier/gateway-frames.js';

/** One client frame as RFC 6455 §5.2 lays it out: masked, with a 7, 16 or 64-bit length. */
function frame(opcode: number, payload: Buffer, options: { fin?: boolean; rsv1?: boolean } = {}): Buffer {
  const fin = options.fin ?? true;
  const head = [(fin ? 0x80 : 0) | (options.rsv1 ? 0x40 : 0) | opcode];
  const length = payload.length;
  let ext = Buffer.alloc(0);
  if (length < 126) head.push(0x80 | length);
  else if (length < 65536) {
    head.push(0x80 | 126);
    ext = Buffer.alloc(2);
    ext.writeUInt16BE(length);
  } else {
    head.push(0x80 | 127);
    ext = Buffer.alloc(8);
    ext.writeBigUInt64BE(BigInt(length));
  }
  const mask = Buffer.from([0x12, 0x34, 0x56, 0x78]);
  const masked = Buffer.from(payload.map((byte, i) => byte ^ (mask[i % 4] ?? 0)));
  return Buffer.concat([Buffer.from(head), ext, mask, masked]);
}

function reader(deflate = false, fromClient = true) {
  const texts: string[] = [];
  return { texts, reader: new FrameReader((text) => texts.push(text), { deflate, fromClient }) };
}

describe('reading client frames', () => {
  it('reads masked text frames split anywhere, of every length encoding, and skips control and binary frames', () => {
    const { texts, reader: r } = reader();
    const long = 'x'.repeat(70_000);
    const bytes = Buffer.concat([
      frame(0x1, Buffer.from('hello')),
      frame(0x9, Buffer.from('ping')),
      frame(0x2, Buffer.from([1, 2, 3])),
      frame(0x1, Buffer.from('y'.repeat(300))),
      frame(0x1, Buffer.from(long)),
    ]);
    for (let i = 0; i < bytes.length; i += 7) r.push(bytes.subarray(i, i + 7));
    expect(texts).toEqual(['hello', 'y'.repeat(300), long]);
  });

  it('joins a fragmented message, with a control frame between its fragments', () => {
    const { texts, reader: r } = reader();
    r.push(frame(0x1, Buffer.from('{"method":'), { fin: false }));
    r.push(frame(0xa, Buffer.alloc(0)));
    r.push(frame(0x0, Buffer.from('"prompt.submit"}')));
    expect(texts).toEqual(['{"method":"prompt.submit"}']);
  });

  it('inflates permessage-deflate messages on the shared window (context takeover)', async () => {
    const { texts, reader: r } = reader(true);
    const deflater = zlib.createDeflateRaw();
    const compress = (text: string) =>
      new Promise<Buffer>((resolve) => {
        const out: Buffer[] = [];
        const collect = (chunk: Buffer) => out.push(chunk);
        deflater.on('data', collect);
        deflater.write(text);
        deflater.flush(zlib.constants.Z_SYNC_FLUSH, () => {
          deflater.off('data', collect);
          const all = Buffer.concat(out);
          resolve(all.subarray(0, all.length - 4)); // the 00 00 ff ff tail is not sent
        });
      });
    const text = JSON.stringify({ method: 'prompt.submit', params: { text: 'deploy the release' } });
    r.push(frame(0x1, await compress(text), { rsv1: true }));
    r.push(frame(0x1, await compress(text), { rsv1: true })); // refers back to the first message
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(texts).toEqual([text, text]);
  });

  it('lets an oversized uncompressed message stream past unread, and reads the next one', () => {
    const { texts, reader: r } = reader();
    const bytes = Buffer.concat([
      frame(0x2, Buffer.alloc(1_500_000, 1), { fin: false }),
      frame(0x0, Buffer.from('tail')),
      frame(0x1, Buffer.from('after')),
    ]);
    for (let i = 0; i < bytes.length; i += 65_536) r.push(bytes.subarray(i, i + 65_536));
    expect(texts).toEqual(['after']);
  });

  it('stops reading (and only reading) on a frame masked the wrong way', () => {
    const { texts, reader: r } = reader();
    r.push(Buffer.from([0x81, 0x02, 0x68, 0x69]));
    r.push(frame(0x1, Buffer.from('later')));
    expect(texts).toEqual([]);
    const server = reader(false, false);
    server.reader.push(Buffer.from([0x81, 0x02, 0x68, 0x69])); // a server frame is not masked
    server.reader.push(frame(0x1, Buffer.from('masked')));
    server.reader.push(Buffer.from([0x81, 0x01, 0x78]));
    expect(server.texts).toEqual(['hi']);
  });
});

describe('placing a turn by the app that sent it', () => {
  it('classifies sockets as the seed says: X-Conduit-Client, else a browser engine, else nothing', () => {
    expect(appSourceOf({ 'x-conduit-client': 'ios/3.1', 'user-agent': 'Mozilla/5.0' })).toBe('conduit');
    expect(appSourceOf({ 'user-agent': 'Mozilla/5.0 (Macintosh) Electron/33.0' })).toBe('desktop');
    expect(appSourceOf({ 'user-agent': 'Mozilla/5.0 (X11) Firefox/140' })).toBe('desktop');
    expect(appSourceOf({ 'user-agent': 'Python/3.12 websockets/15' })).toBeNull();
  });

  it('the latest matching submission before the turn started wins, once', () => {
    const clock = new ManualClock();
    const log = new AppSubmissions(clock);
    log.record(null, 'desktop', 'run the tests');
    clock.advance(1_000);
    log.record(null, 'desktop', 'run the tests');
    const start = clock.now();
    clock.advance(1_000);
    log.record(null, 'conduit', 'run the tests'); // sent after the turn started: the next turn's
    expect(log.placeTurn('default', ' run the tests ', start)).toBe('desktop');
    expect(log.placeTurn('default', 'run the tests', clock.now())).toBeNull(); // desktop and conduit both left
    expect(log.placeTurn('default', 'something else', clock.now())).toBeNull();
  });

  it('keeps profiles apart, forgets after ten minutes, and leaves a turn two apps sent unplaced', () => {
    const clock = new ManualClock();
    const log = new AppSubmissions(clock);
    log.record('work', 'conduit', 'status?');
    expect(log.placeTurn('default', 'status?', clock.now())).toBeNull();
    expect(log.placeTurn('work', 'status?', clock.now())).toBe('conduit');
    log.record(null, 'conduit', 'old');
    clock.advance(10 * 60_000 + 1);
    expect(log.placeTurn('default', 'old', clock.now())).toBeNull();
    log.record(null, 'conduit', 'same');
    log.record('default', 'desktop', 'same');
    expect(log.placeTurn('default', 'same', clock.now())).toBeNull();
  });

  it('remembers at most 256 prompts per profile and 64 profiles', () => {
    const clock = new ManualClock();
    const log = new AppSubmissions(clock);
    for (let i = 0; i <= 256; i++) log.record('work', 'conduit', `prompt ${i}`);
    expect(log.placeTurn('work', 'prompt 0', clock.now())).toBeNull();
    expect(log.placeTurn('work', 'prompt 1', clock.now())).toBe('conduit');
    for (let i = 0; i < 64; i++) log.record(`p${i}`, 'desktop', 'hello');
    expect(log.placeTurn('work', 'prompt 2', clock.now())).toBeNull(); // the oldest profile went
    expect(log.placeTurn('p63', 'hello', clock.now())).toBe('desktop');
  });
});
