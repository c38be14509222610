import WebSocket, { type RawData } from 'ws';
import type { Logger } from '../log.js';
import type { Timers } from './timers.js';

/**
 * The close codes the relayed sockets answer with (ROUTES.md, Grok Live; the seed, speech server).
 * The Conduit app shows the reason and retries only what is retryable (4502).
 */
export const RELAY_CLOSE = {
  /** A client frame over the frame bound (RFC 6455's "message too big"). */
  tooLarge: 1009,
  /** The request, the profile or the provider refused the call. */
  refused: 4400,
  /** The dashboard sign-in (the WebSocket credential) is missing or wrong. */
  unauthorized: 4401,
  /** A rate or concurrency limit. */
  rateLimited: 4429,
  /** The relay failed on this host. */
  hostFailure: 4500,
  /** The provider could not be reached, or the connection to it dropped: retryable. */
  unreachable: 4502,
  /** No credential, or nothing configured to relay to. */
  notConfigured: 4503,
} as const;

/** Close reasons are cut to 120 bytes (ROUTES.md), inside the 123 a close frame can carry. */
const CLOSE_REASON_BYTES = 120;

/** `text` cut to at most 120 UTF-8 bytes, never inside a character. */
export function closeReason(text: string): string {
  if (Buffer.byteLength(text) <= CLOSE_REASON_BYTES) return text;
  let out = '';
  for (const char of text) {
    if (Buffer.byteLength(out + char) > CLOSE_REASON_BYTES) break;
    out += char;
  }
  return out;
}

/** Closes a socket with a code and a reason cut to the bound; a socket already closing is left alone. */
export function closeSocket(socket: WebSocket, code: number, reason: string): void {
  if (socket.readyState === WebSocket.CLOSING || socket.readyState === WebSocket.CLOSED) return;
  // A paused socket would never read the peer's answer to the close, holding it until ws gives up.
  socket.resume();
  socket.close(code, closeReason(reason));
}

/** What a close of the client socket says: a code and the reason Conduit shows. */
export interface RelayClose {
  code: number;
  reason: string;
}

/** How one provider's failures read to the Conduit app (each feature words its own). */
export interface UpstreamFailures {
  /** The provider could not be reached, or did not open within the connect bound. */
  unreachable: string;
  /** The provider's socket dropped without a close of its own. */
  lost: string;
  /** The provider answered the handshake with this HTTP status instead of a WebSocket. */
  refused(status: number): RelayClose;
  /** The provider closed the socket with this code and reason (the client gets what this returns). */
  closed(code: number, reason: string): RelayClose;
}

export interface SocketRelayOptions {
  /** The accepted client socket, paused (socket-route.ts) until the provider opens. */
  client: WebSocket;
  /** `ws://` or `wss://` address of the provider's socket. */
  upstreamUrl: string;
  /** Handshake headers for the provider (the credential); never logged. */
  upstreamHeaders: Record<string, string>;
  timers: Timers;
  log: Logger;
  /** Names the relay in log lines (`grok live`, `speech server`); never a URL or a key. */
  logName: string;
  /** Fields every log line of this relay carries (the profile's name). */
  logFields: Record<string, string>;
  /** The provider must open within this many milliseconds. */
  connectTimeoutMs: number;
  /** A client frame larger than this closes the call with 1009 `Frame too large`. */
  clientFrameLimitBytes: number;
  /** A provider frame larger than this ends the call (the provider's socket refuses it). */
  upstreamFrameLimitBytes: number;
  /** When set, a client that sends nothing for this many milliseconds is closed. */
  idleCloseMs?: number;
  /** The close an idle client gets. */
  idleClose?: RelayClose;
  failures: UpstreamFailures;
  /**
   * Reads each client text frame before it is relayed; true keeps it on the host (a frame addressed
   * to this host, such as Local Live's turn frames, which the provider must never see).
   */
  keepClientText?: (frame: Buffer) => boolean;
  /** Called once when both sides are done (to give back a concurrency slot). */
  onEnd(): void;
}

/**
 * Relays one client socket to a provider's socket: text and binary frames pass both ways unchanged
 * (the provider's wire format is its own; the relay never reads a frame), a client frame over the
 * bound ends the call with 1009, the provider's failures become the feature's close codes and
 * reasons, and, when asked, a silent client is closed. The client is paused until the provider
 * opens, so a frame sent early is delivered in order rather than dropped.
 */
export function relaySocket(options: SocketRelayOptions): void {
  const { client, failures, log } = options;
  let ended = false;
  let opened = false;
  /** The provider answered the handshake with a status: its request is already over. */
  let refusedHandshake = false;
  const upstream = new WebSocket(options.upstreamUrl, {
    headers: options.upstreamHeaders,
    maxPayload: options.upstreamFrameLimitBytes,
    followRedirects: false,
    // The deadline is the kernel's timer below, so a test fires it by hand.
    handshakeTimeout: undefined,
    perMessageDeflate: false,
  });

  const finish = (close: RelayClose, upstreamClose?: RelayClose): void => {
    if (ended) return;
    ended = true;
    cancelConnect();
    cancelIdle();
    closeSocket(client, close.code, close.reason);
    if (upstream.readyState === WebSocket.CONNECTING) {
      if (!refusedHandshake) upstream.terminate();
    } else closeSocket(upstream, upstreamClose?.code ?? 1000, upstreamClose?.reason ?? '');
    log.info(`${options.logName} call ended`, { ...options.logFields, code: close.code });
    options.onEnd();
  };

  const cancelConnect = options.timers.after(options.connectTimeoutMs, () => {
    if (!opened) finish({ code: RELAY_CLOSE.unreachable, reason: failures.unreachable });
  });

  let cancelIdle: () => void = () => {};
  const armIdle = (): void => {
    cancelIdle();
    const idleMs = options.idleCloseMs;
    if (idleMs === undefined) return;
    const idleClose = options.idleClose ?? { code: 1000, reason: 'Idle' };
    cancelIdle = options.timers.after(idleMs, () => finish(idleClose));
  };

  /** Client frames read before the provider opened, sent in order once it does. */
  const early: { frame: Buffer; isBinary: boolean }[] = [];
  client.pause();
  armIdle();

  client.on('message', (data: RawData, isBinary: boolean) => {
    const frame = frameBytes(data);
    if (frame.byteLength > options.clientFrameLimitBytes) {
      finish({ code: RELAY_CLOSE.tooLarge, reason: 'Frame too large' }, { code: 1000, reason: '' });
      return;
    }
    armIdle();
    if (!isBinary && options.keepClientText?.(frame)) return;
    // ws may still emit a frame it had read when the client was paused; it waits for the open.
    if (upstream.readyState === WebSocket.CONNECTING) early.push({ frame, isBinary });
    else forward(frame, isBinary, upstream, client);
  });
  client.on('close', () => finish({ code: 1000, reason: '' }));
  client.on('error', () => finish({ code: RELAY_CLOSE.hostFailure, reason: 'The relay failed on the host' }));

  upstream.on('open', () => {
    opened = true;
    cancelConnect();
    log.info(`${options.logName} call opened`, options.logFields);
    for (const { frame, isBinary } of early.splice(0)) forward(frame, isBinary, upstream, client);
    client.resume();
  });
  upstream.on('message', (data: RawData, isBinary: boolean) => forward(frameBytes(data), isBinary, client, upstream));
  upstream.on('unexpected-response', (request, response) => {
    const status = response.statusCode ?? 0;
    refusedHandshake = true;
    request.destroy();
    response.destroy();
    // The provider's status only: its body may echo the request, and the credential is never logged.
    log.warn(`${options.logName} refused the call`, { ...options.logFields, status });
    finish(failures.refused(status));
  });
  upstream.on('close', (code: number, reason: Buffer) => {
    if (!opened) {
      finish({ code: RELAY_CLOSE.unreachable, reason: failures.unreachable });
      return;
    }
    // 1005 (no status) and 1006 (no close frame) mean the connection dropped rather than ended.
    if (code === 1005 || code === 1006) finish({ code: RELAY_CLOSE.unreachable, reason: failures.lost });
    else finish(failures.closed(code, reason.toString('utf8')));
  });
  upstream.on('error', () => {
    // A refused handshake already ended the call; anything else before 'open' is unreachable.
    finish({ code: RELAY_CLOSE.unreachable, reason: opened ? failures.lost : failures.unreachable });
  });
}

/**
 * Bytes queued on one side before the other is paused: a slow reader slows the sender down rather
 * than growing this process's memory (audio arrives in real time, so only a stalled peer gets here).
 */
const PAUSE_ABOVE_BYTES = 1024 * 1024;

/** Sends a frame on `to`; while `to` has more than the bound queued, `from` is not read. */
function forward(frame: Buffer, isBinary: boolean, to: WebSocket, from: WebSocket): void {
  if (to.readyState !== WebSocket.OPEN) return;
  to.send(frame, { binary: isBinary }, () => {
    if (from.isPaused && to.bufferedAmount <= PAUSE_ABOVE_BYTES / 2) from.resume();
  });
  if (to.bufferedAmount > PAUSE_ABOVE_BYTES) from.pause();
}

/** A frame as one buffer: `ws` hands a fragmented message over as its fragments. */
function frameBytes(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}
