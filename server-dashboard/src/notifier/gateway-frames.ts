import zlib from 'node:zlib';

/** A client message larger than this is skipped, not buffered: a prompt never needs more. */
const MAX_MESSAGE_BYTES = 1024 * 1024;
/** The tail permessage-deflate strips from every compressed message (RFC 7692 §7.2.1). */
const DEFLATE_TAIL = Buffer.from([0x00, 0x00, 0xff, 0xff]);

/**
 * Reads the text messages one side of a WebSocket sends (RFC 6455 frames: masked from the client,
 * unmasked from the server, possibly fragmented, possibly compressed with permessage-deflate), from the
 * bytes the proxy forwards. It only reads: the bytes flow on unchanged whatever happens here. Anything
 * unexpected (a frame masked the wrong way, a reserved opcode) ends the reading for that direction,
 * never the socket itself.
 */
export class FrameReader {
  private buffer: Buffer = Buffer.alloc(0);
  private fragments: Buffer[] = [];
  private fragmentBytes = 0;
  private fragmentText = false;
  private fragmentCompressed = false;
  private skipping = false;
  /** Bytes of an oversized frame still to pass by unread. */
  private discard = 0;
  private stopped = false;
  private inflater: zlib.InflateRaw | null = null;
  /** Compressed messages inflate one after another, in order, on the shared window. */
  private inflating: Promise<void> = Promise.resolve();

  constructor(
    private readonly onText: (text: string) => void,
    private readonly options: { deflate: boolean; fromClient: boolean },
  ) {}

  push(chunk: Buffer): void {
    if (this.stopped) return;
    this.buffer = this.buffer.length ? Buffer.concat([this.buffer, chunk]) : chunk;
    try {
      while (this.readFrame());
    } catch {
      this.stop();
    }
  }

  stop(): void {
    this.stopped = true;
    this.buffer = Buffer.alloc(0);
    this.fragments = [];
    this.inflater?.close();
    this.inflater = null;
  }

  /** Reads one whole frame from the buffer; false when more bytes are needed. */
  private readFrame(): boolean {
    if (this.discard > 0) {
      const dropped = Math.min(this.discard, this.buffer.length);
      this.buffer = this.buffer.subarray(dropped);
      this.discard -= dropped;
      if (this.discard > 0) return false;
    }
    const b = this.buffer;
    if (b.length < 2) return false;
    const first = b[0] ?? 0;
    const second = b[1] ?? 0;
    const fin = (first & 0x80) !== 0;
    const rsv1 = (first & 0x40) !== 0;
    const opcode = first & 0x0f;
    const masked = (second & 0x80) !== 0;
    if (masked !== this.options.fromClient) throw new Error('frame masked the wrong way');
    const maskBytes = masked ? 4 : 0;
    let length = second & 0x7f;
    let offset = 2;
    if (length === 126) {
      if (b.length < 4) return false;
      length = b.readUInt16BE(2);
      offset = 4;
    } else if (length === 127) {
      if (b.length < 10) return false;
      const big = b.readBigUInt64BE(2);
      if (big > BigInt(Number.MAX_SAFE_INTEGER)) throw new Error('frame too large');
      length = Number(big);
      offset = 10;
    }
    if (length > MAX_MESSAGE_BYTES) {
      // Never held in memory: an uncompressed one (an attachment, say) streams past unread. A compressed
      // one cannot: later messages refer back into it, so reading this direction ends here.
      const compressed = opcode === 0x0 ? this.fragmentCompressed : rsv1;
      if (compressed || opcode >= 0x8 || (opcode > 0x2 && opcode < 0x8)) throw new Error('frame too large');
      if (opcode !== 0x0) this.fragmentCompressed = false;
      this.skipping = true;
      this.fragments = [];
      this.discard = maskBytes + length;
      this.buffer = b.subarray(offset);
      return true;
    }
    if (b.length < offset + maskBytes + length) return false;
    const mask = b.subarray(offset, offset + maskBytes);
    const payload = Buffer.from(b.subarray(offset + maskBytes, offset + maskBytes + length));
    if (masked) for (let i = 0; i < payload.length; i++) payload[i] = (payload[i] ?? 0) ^ (mask[i % 4] ?? 0);
    this.buffer = b.subarray(offset + maskBytes + length);
    this.frame(opcode, fin, rsv1, payload);
    return true;
  }

  private frame(opcode: number, fin: boolean, rsv1: boolean, payload: Buffer): void {
    if (opcode >= 0x8) {
      if (opcode > 0xa) throw new Error('reserved control opcode');
      return; // close, ping, pong carry no prompt
    }
    if (opcode === 0x1 || opcode === 0x2) {
      this.fragments = [];
      this.fragmentBytes = 0;
      this.fragmentText = opcode === 0x1;
      this.fragmentCompressed = rsv1;
      this.skipping = false;
    } else if (opcode !== 0x0) {
      throw new Error('reserved data opcode');
    }
    if (!this.skipping) {
      this.fragmentBytes += payload.length;
      if (this.fragmentBytes > MAX_MESSAGE_BYTES) {
        this.skipping = true;
        this.fragments = [];
      } else {
        this.fragments.push(payload);
      }
    }
    if (!fin) return;
    const message = Buffer.concat(this.fragments);
    this.fragments = [];
    if (this.skipping || !this.fragmentText) return;
    if (!this.fragmentCompressed) {
      this.onText(message.toString('utf8'));
      return;
    }
    if (!this.options.deflate) throw new Error('compressed frame without permessage-deflate');
    this.inflate(message);
  }

  private inflate(message: Buffer): void {
    const inflater = (this.inflater ??= zlib.createInflateRaw());
    this.inflating = this.inflating.then(
      () =>
        new Promise<void>((resolve) => {
          const out: Buffer[] = [];
          let bytes = 0;
          const collect = (chunk: Buffer) => {
            bytes += chunk.length;
            if (bytes <= MAX_MESSAGE_BYTES) out.push(chunk);
          };
          inflater.on('data', collect);
          inflater.once('error', () => {
            this.stop();
            resolve();
          });
          inflater.write(Buffer.concat([message, DEFLATE_TAIL]));
          inflater.flush(zlib.constants.Z_SYNC_FLUSH, () => {
            inflater.off('data', collect);
            if (!this.stopped && bytes <= MAX_MESSAGE_BYTES) this.onText(Buffer.concat(out).toString('utf8'));
            resolve();
          });
        }),
    );
  }
}
