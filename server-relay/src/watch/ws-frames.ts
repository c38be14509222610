/**
 * The RFC 6455 subset the Watch audio bridge speaks, server side: masked, unfragmented binary
 * messages plus ping, pong and close. Anything else is a violation with the close code the
 * reference uses, detected from the frame header so an oversized message is refused before its
 * payload is buffered.
 */

/** Largest binary message, in bytes (the sealed stream format's MAX_MESSAGE_BYTES). */
export const MAX_MESSAGE_BYTES = 65_536;
const MAX_CONTROL_BYTES = 125;

export const CloseCode = {
  normal: 1000,
  goingAway: 1001,
  protocolError: 1002,
  unsupportedData: 1003,
  tooBig: 1009,
  replaced: 4000,
  grantClosed: 4010,
  idle: 4408,
  rateExceeded: 4429,
  hostUnavailable: 4503,
} as const;

/**
 * The reason text of every close the relay sends, as the reference words it (clients and their logs
 * see it beside the code). A client's own close is echoed with an empty reason, as the reference does.
 */
export const CloseReason = {
  replaced: 'replaced',
  grantClosed: 'grant_closed',
  hostOffline: 'host_offline',
  hostReconnected: 'host_reconnected',
  idle: 'idle',
  tooFast: 'too_fast',
  goingAway: 'going_away',
  reservedType: 'reserved_type',
  unsupported: 'unsupported',
  fragmented: 'fragmented',
  rsv: 'rsv',
  unmasked: 'unmasked',
  controlTooBig: 'control_too_big',
  tooBig: 'too_big',
  echo: '',
} as const;
export type CloseReason = (typeof CloseReason)[keyof typeof CloseReason];

export type FrameEvent =
  | { kind: 'binary'; payload: Buffer }
  | { kind: 'ping'; payload: Buffer }
  | { kind: 'pong' }
  | { kind: 'close'; code: number | undefined }
  | { kind: 'violation'; code: number; reason: CloseReason };

const OP_CONTINUATION = 0x0;
const OP_TEXT = 0x1;
const OP_BINARY = 0x2;
const OP_CLOSE = 0x8;
const OP_PING = 0x9;
const OP_PONG = 0xa;

/** Incremental frame parser for one client connection. */
export class FrameReader {
  private pending: Buffer = Buffer.alloc(0);
  /** Chunks received while the current frame is still incomplete, joined only once it is whole. */
  private waiting: Buffer[] = [];
  private waitingBytes = 0;
  /** Bytes the current frame needs before parsing can progress (so a frame trickling in byte by byte costs O(n)). */
  private needed = 2;
  private failed = false;

  /** Feeds bytes from the socket; returns the complete frames (a violation ends the stream). */
  push(chunk: Buffer): FrameEvent[] {
    if (this.failed) return [];
    this.waiting.push(chunk);
    this.waitingBytes += chunk.length;
    if (this.pending.length + this.waitingBytes < this.needed) return [];
    // The usual case, one whole chunk and nothing left over, is used as it is: no copy per message.
    this.pending =
      this.pending.length === 0 && this.waiting.length === 1
        ? this.waiting[0]!
        : Buffer.concat([this.pending, ...this.waiting]);
    this.waiting = [];
    this.waitingBytes = 0;
    this.needed = 2;
    const events: FrameEvent[] = [];
    for (;;) {
      const event = this.next();
      if (!event) break;
      events.push(event);
      if (event.kind === 'violation' || event.kind === 'close') {
        this.failed = true;
        break;
      }
    }
    return events;
  }

  private next(): FrameEvent | undefined {
    const buf = this.pending;
    if (buf.length < 2) return this.need(2);
    const b0 = buf[0]!;
    const b1 = buf[1]!;
    const fin = (b0 & 0x80) !== 0;
    const rsv = b0 & 0x70;
    const opcode = b0 & 0x0f;
    const masked = (b1 & 0x80) !== 0;
    let length = b1 & 0x7f;
    // No extension is negotiated, so any RSV bit is a protocol error; clients must mask (RFC 6455 §5.1).
    if (rsv !== 0) return violation(CloseCode.protocolError, CloseReason.rsv);
    if (!masked) return violation(CloseCode.protocolError, CloseReason.unmasked);
    const control = opcode >= 0x8;
    if (control) {
      if (opcode !== OP_CLOSE && opcode !== OP_PING && opcode !== OP_PONG) {
        return violation(CloseCode.protocolError, CloseReason.unsupported);
      }
      if (!fin) return violation(CloseCode.protocolError, CloseReason.fragmented);
      if (length > MAX_CONTROL_BYTES) return violation(CloseCode.protocolError, CloseReason.controlTooBig);
    } else {
      if (opcode !== OP_CONTINUATION && opcode !== OP_TEXT && opcode !== OP_BINARY) {
        return violation(CloseCode.protocolError, CloseReason.unsupported);
      }
      // Text and fragmented messages are data the bridge does not carry.
      if (!fin) return violation(CloseCode.unsupportedData, CloseReason.fragmented);
      if (opcode !== OP_BINARY) return violation(CloseCode.unsupportedData, CloseReason.unsupported);
    }
    let offset = 2;
    if (length === 126) {
      if (buf.length < 4) return this.need(4);
      length = buf.readUInt16BE(2);
      offset = 4;
    } else if (length === 127) {
      if (buf.length < 10) return this.need(10);
      const high = buf.readUInt32BE(2);
      const low = buf.readUInt32BE(6);
      // Anything needing the high word is far over the limit.
      length = high !== 0 ? Number.MAX_SAFE_INTEGER : low;
      offset = 10;
    }
    if (length > MAX_MESSAGE_BYTES) return violation(CloseCode.tooBig, CloseReason.tooBig);
    if (buf.length < offset + 4 + length) return this.need(offset + 4 + length);
    // Unmasked in place: the socket's chunks (and our concatenations) belong to this reader alone, so
    // the payload is a view, not a copy — fewer young-generation collections on a busy bridge.
    const m0 = buf[offset]!;
    const m1 = buf[offset + 1]!;
    const m2 = buf[offset + 2]!;
    const m3 = buf[offset + 3]!;
    const payload = buf.subarray(offset + 4, offset + 4 + length);
    const whole = length & ~3;
    let i = 0;
    for (; i < whole; i += 4) {
      payload[i]! ^= m0;
      payload[i + 1]! ^= m1;
      payload[i + 2]! ^= m2;
      payload[i + 3]! ^= m3;
    }
    for (; i < length; i += 1) payload[i]! ^= buf[offset + (i & 3)]!;
    this.pending = buf.subarray(offset + 4 + length);
    switch (opcode) {
      case OP_BINARY:
        return { kind: 'binary', payload };
      case OP_PING:
        return { kind: 'ping', payload };
      case OP_PONG:
        return { kind: 'pong' };
      default:
        return { kind: 'close', code: payload.length >= 2 ? payload.readUInt16BE(0) : undefined };
    }
  }

  private need(bytes: number): undefined {
    this.needed = bytes;
    return undefined;
  }
}

/** The header of an unmasked server frame (FIN set) carrying `length` payload bytes. */
export function frameHeader(opcode: number, length: number): Buffer {
  if (length < 126) return Buffer.from([0x80 | opcode, length]);
  if (length < 65_536) {
    const header = Buffer.alloc(4);
    header[0] = 0x80 | opcode;
    header[1] = 126;
    header.writeUInt16BE(length, 2);
    return header;
  }
  const header = Buffer.alloc(10);
  header[0] = 0x80 | opcode;
  header[1] = 127;
  header.writeUInt32BE(0, 2);
  header.writeUInt32BE(length, 6);
  return header;
}

export const Opcode = { binary: OP_BINARY, close: OP_CLOSE, ping: OP_PING, pong: OP_PONG } as const;

function violation(code: number, reason: CloseReason): FrameEvent {
  return { kind: 'violation', code, reason };
}

/** A close frame's payload: the code, big-endian, then the reason text (UTF-8, at most 123 bytes). */
export function closePayload(code: number, reason: string): Buffer {
  const text = Buffer.from(reason, 'utf8').subarray(0, 123);
  const payload = Buffer.alloc(2 + text.length);
  payload.writeUInt16BE(code, 0);
  text.copy(payload, 2);
  return payload;
}
