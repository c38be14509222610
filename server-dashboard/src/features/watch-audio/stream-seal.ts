import { createCipheriv, createDecipheriv } from 'node:crypto';
import { encodeBase64Url } from '../../crypto/base64url.js';
import { hkdfSha256, TAG_BYTES } from '../../crypto/symmetric.js';

/**
 * Watch audio stream sealing, "conduit-watch-audio-v1" (CRYPTO.md §4): every Watch connection names a
 * 16-byte stream id in its clear hello, and each direction of that stream gets its own key from the
 * grant's root. Messages are ChaCha20-Poly1305 boxes whose nonce is the message counter, bound by the
 * AAD to the grant, the stream, the direction and the message kind, so the relay can neither read,
 * forge, replay nor retype one.
 */
export const WATCH_AUDIO_SALT = 'conduit-watch-audio-v1';
export const WATCH_AUDIO_AAD_TAG = 'conduit-watch-audio/1';

export type StreamDirection = 'watch-to-host' | 'host-to-watch';

/** Message kinds: 1 PCM16LE mono audio, 2 an engine event (JSON text), 3 control (JSON), 4 the clear hello. */
export const MessageKind = { audio: 1, event: 2, control: 3, hello: 4 } as const;
export type SealedKind = 1 | 2 | 3;

/** The relay's own notices to the host, `[0x00, n]`. */
export const RelayNotice = { watchConnected: 1, watchGone: 2 } as const;

export const STREAM_ID_BYTES = 16;
/** `[kind][counter 8 BE]` before the ciphertext. */
const HEADER_BYTES = 9;
/** The relay's largest message (and the reference's MAX_MESSAGE_BYTES). */
export const MAX_MESSAGE_BYTES = 65_536;
/** The largest plaintext that fits one message: 65536 − 1 − 8 − 16. */
export const MAX_PLAIN_BYTES = MAX_MESSAGE_BYTES - HEADER_BYTES - TAG_BYTES;

export interface StreamKeys {
  up: Uint8Array;
  down: Uint8Array;
}

export function streamInfo(direction: StreamDirection, sid: Uint8Array): string {
  return `${WATCH_AUDIO_SALT} ${direction} stream=${encodeBase64Url(sid)}`;
}

/** The two keys of one Watch connection, from the grant's 32-byte root. */
export function deriveStreamKeys(root: Uint8Array, sid: Uint8Array): StreamKeys {
  return {
    up: hkdfSha256(root, WATCH_AUDIO_SALT, streamInfo('watch-to-host', sid)),
    down: hkdfSha256(root, WATCH_AUDIO_SALT, streamInfo('host-to-watch', sid)),
  };
}

export function streamAad(direction: StreamDirection, grantId: string, sid: Uint8Array, kind: number): string {
  return `${WATCH_AUDIO_AAD_TAG}\n${direction}\ngrant=${grantId}\nsid=${encodeBase64Url(sid)}\ntype=${kind}`;
}

/** Four zero bytes, then the counter as 8 bytes big-endian. */
export function counterNonce(counter: bigint): Uint8Array {
  const nonce = new Uint8Array(12);
  new DataView(nonce.buffer).setBigUint64(4, counter, false);
  return nonce;
}

export function sealStreamMessage(
  key: Uint8Array,
  direction: StreamDirection,
  grantId: string,
  sid: Uint8Array,
  kind: SealedKind,
  counter: bigint,
  plaintext: Uint8Array,
): Buffer {
  if (plaintext.length > MAX_PLAIN_BYTES) throw new RangeError('a Watch audio message is at most 65511 bytes');
  // node:crypto's native ChaCha20-Poly1305 rather than the shared pure-JS one (crypto/symmetric.ts): a
  // call seals 50–100 messages a second each way, and the bridge's added latency is the budget here.
  const cipher = createCipheriv('chacha20-poly1305', key, counterNonce(counter), { authTagLength: TAG_BYTES });
  cipher.setAAD(Buffer.from(streamAad(direction, grantId, sid, kind), 'ascii'), { plaintextLength: plaintext.length });
  const header = Buffer.allocUnsafe(HEADER_BYTES);
  header[0] = kind;
  header.writeBigUInt64BE(counter, 1);
  return Buffer.concat([header, cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
}

export type OpenedStreamMessage =
  { ok: true; kind: SealedKind; counter: bigint; plaintext: Uint8Array } | { ok: false };

/** Opens a sealed message: its shape, then the tag. The counter order is the stream's to check. */
export function openStreamMessage(
  key: Uint8Array,
  direction: StreamDirection,
  grantId: string,
  sid: Uint8Array,
  message: Uint8Array,
): OpenedStreamMessage {
  if (message.length < HEADER_BYTES + TAG_BYTES || message.length > MAX_MESSAGE_BYTES) return { ok: false };
  const kind = message[0];
  if (kind !== 1 && kind !== 2 && kind !== 3) return { ok: false };
  const bytes = Buffer.from(message.buffer, message.byteOffset, message.byteLength);
  const counter = bytes.readBigUInt64BE(1);
  const tagAt = bytes.length - TAG_BYTES;
  try {
    const decipher = createDecipheriv('chacha20-poly1305', key, counterNonce(counter), { authTagLength: TAG_BYTES });
    decipher.setAAD(Buffer.from(streamAad(direction, grantId, sid, kind), 'ascii'), {
      plaintextLength: tagAt - HEADER_BYTES,
    });
    decipher.setAuthTag(bytes.subarray(tagAt));
    const plaintext = Buffer.concat([decipher.update(bytes.subarray(HEADER_BYTES, tagAt)), decipher.final()]);
    return {
      ok: true,
      kind,
      counter,
      plaintext: new Uint8Array(plaintext.buffer, plaintext.byteOffset, plaintext.byteLength),
    };
  } catch {
    return { ok: false };
  }
}

/** A binary frame from the relay, classified by its first byte. */
export type RelayFrame =
  | { type: 'notice'; notice: number }
  | { type: 'hello'; sid: Uint8Array; version: number }
  | { type: 'sealed'; message: Uint8Array }
  | { type: 'malformed' };

export function classifyFrame(frame: Uint8Array): RelayFrame {
  const first = frame[0];
  if (first === 0 && frame.length === 2) return { type: 'notice', notice: frame[1] ?? 0 };
  if (first === MessageKind.hello && frame.length === 1 + STREAM_ID_BYTES + 1) {
    return {
      type: 'hello',
      sid: Uint8Array.from(frame.subarray(1, 1 + STREAM_ID_BYTES)),
      version: frame[1 + STREAM_ID_BYTES] ?? 0,
    };
  }
  if (first === 1 || first === 2 || first === 3) return { type: 'sealed', message: frame };
  return { type: 'malformed' };
}

/**
 * One Watch connection's sealing state on the host: the keys for its sid, the next counter this host
 * seals with (from 0), and the last counter accepted from the Watch. A counter at or below the last one
 * is refused, and only after the tag verified, so a forged message cannot move the window.
 */
export class StreamCipher {
  private readonly keys: StreamKeys;
  private sendCounter = 0n;
  private lastReceived = -1n;

  constructor(
    root: Uint8Array,
    private readonly grantId: string,
    readonly sid: Uint8Array,
  ) {
    this.keys = deriveStreamKeys(root, sid);
  }

  seal(kind: SealedKind, plaintext: Uint8Array): Buffer {
    const message = sealStreamMessage(
      this.keys.down,
      'host-to-watch',
      this.grantId,
      this.sid,
      kind,
      this.sendCounter,
      plaintext,
    );
    this.sendCounter += 1n;
    return message;
  }

  /** The message's kind and plaintext, or null when it doesn't verify or replays an older counter. */
  open(message: Uint8Array): { kind: SealedKind; plaintext: Uint8Array } | null {
    const opened = openStreamMessage(this.keys.up, 'watch-to-host', this.grantId, this.sid, message);
    if (!opened.ok || opened.counter <= this.lastReceived) return null;
    this.lastReceived = opened.counter;
    return { kind: opened.kind, plaintext: opened.plaintext };
  }
}
