import { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { CloseCode, closePayload, CloseReason, frameHeader, FrameReader, Opcode } from './ws-frames.js';

/** The per-socket inbound rate is averaged over this window (API.md §5: 5 s). */
export const RATE_WINDOW_S = 5;
/** How long a closing socket may take to close its side before it is destroyed. */
const CLOSE_GRACE_MS = 1_000;

export interface BridgeSocketOptions {
  idleMs: number;
  /** RELAY_WATCH_AUDIO_BYTES_PER_S: inbound bytes per second, averaged over RATE_WINDOW_S, before 4429. */
  bytesPerS: number;
  now: () => number;
  /** A binary message that passed every check. */
  onMessage(payload: Buffer): void;
  /** The socket is gone (closed by either side); runs once. */
  onGone(): void;
}

/**
 * One end of the audio bridge over an upgraded socket: enforces the per-socket rules (first byte
 * never 0, the inbound rate over 5 s, idle timeout), answers pings, and closes with the right code. The
 * socket's own flow control is the backpressure: `pause()` stops reading, so a slow peer slows the
 * sender over TCP instead of the relay buffering.
 */
export class BridgeSocket {
  private readonly reader = new FrameReader();
  private closing = false;
  private gone = false;
  private idleTimer: NodeJS.Timeout | undefined;
  /** Inbound bytes per whole second, for the last RATE_WINDOW_S seconds. */
  private readonly rateBuckets = new Map<number, number>();
  /** The close code this end was (or is being) closed with by the relay, for tests and logs. */
  closeCode: number | undefined;
  /** The reason text sent with it. */
  closeReason: string | undefined;

  constructor(
    private readonly socket: Duplex,
    private readonly options: BridgeSocketOptions,
  ) {
    // Audio frames are small and latency-bound.
    if (socket instanceof Socket) socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.receive(chunk));
    socket.on('error', () => this.finish());
    socket.on('close', () => this.finish());
    socket.on('end', () => this.finish());
    this.touch();
  }

  get open(): boolean {
    return !this.closing && !this.gone;
  }

  /** Feeds bytes that arrived with the upgrade request. */
  receiveHead(head: Buffer): void {
    if (head.length > 0) this.receive(head);
  }

  /** Sends one binary message; false when the socket's buffer is full (wait for `onDrain`). */
  send(payload: Buffer): boolean {
    if (!this.open) return true;
    this.socket.cork();
    this.socket.write(frameHeader(Opcode.binary, payload.length));
    const flushed = this.socket.write(payload);
    this.socket.uncork();
    return flushed;
  }

  onDrain(listener: () => void): void {
    this.socket.once('drain', listener);
  }

  pause(): void {
    this.socket.pause();
  }

  resume(): void {
    if (this.open) this.socket.resume();
  }

  /** Sends a close frame with `code` and the reference's `reason` text, and ends the connection. Idempotent. */
  close(code: number, reason: CloseReason): void {
    if (!this.open) return;
    this.closing = true;
    this.closeCode = code;
    this.closeReason = reason;
    this.clearIdle();
    const payload = closePayload(code, reason);
    this.socket.write(Buffer.concat([frameHeader(Opcode.close, payload.length), payload]));
    this.socket.end();
    setTimeout(() => this.socket.destroy(), CLOSE_GRACE_MS).unref();
    this.finish();
  }

  private receive(chunk: Buffer): void {
    if (!this.open) return;
    for (const event of this.reader.push(chunk)) {
      if (!this.open) return;
      this.touch();
      switch (event.kind) {
        case 'violation':
          this.close(event.code, event.reason);
          return;
        case 'close':
          // Echo a valid application code, else a normal close.
          this.close(
            event.code !== undefined && event.code >= 1000 && event.code < 5000 ? event.code : CloseCode.normal,
            CloseReason.echo,
          );
          return;
        case 'ping':
          this.socket.write(Buffer.concat([frameHeader(Opcode.pong, event.payload.length), event.payload]));
          break;
        case 'pong':
          break;
        case 'binary':
          // The first byte 0 is reserved for the relay's own notices; an empty message has none.
          if (event.payload.length === 0 || event.payload[0] === 0) {
            this.close(CloseCode.protocolError, CloseReason.reservedType);
            return;
          }
          if (this.overRate(event.payload.length)) {
            this.close(CloseCode.rateExceeded, CloseReason.tooFast);
            return;
          }
          this.options.onMessage(event.payload);
          break;
      }
    }
  }

  private overRate(bytes: number): boolean {
    const second = Math.floor(this.options.now() / 1000);
    this.rateBuckets.set(second, (this.rateBuckets.get(second) ?? 0) + bytes);
    let total = 0;
    for (const [bucket, count] of this.rateBuckets) {
      if (bucket <= second - RATE_WINDOW_S) this.rateBuckets.delete(bucket);
      else total += count;
    }
    return total > this.options.bytesPerS * RATE_WINDOW_S;
  }

  private touch(): void {
    this.clearIdle();
    this.idleTimer = setTimeout(() => this.close(CloseCode.idle, CloseReason.idle), this.options.idleMs);
    this.idleTimer.unref();
  }

  private clearIdle(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
  }

  private finish(): void {
    if (this.gone) return;
    this.gone = true;
    this.clearIdle();
    this.options.onGone();
  }
}
