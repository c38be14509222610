/**
 * The shared Watch audio vector (the host vector watch_audio_vector.json, from the
 * reference's tests): per-stream keys from the grant root, the AAD, both sealed messages byte for byte,
 * the clear hello and the relay's notices, and the size bounds.
 */
import { describe, expect, it } from 'vitest';
import { encodeBase64Url } from '../../src/crypto/base64url.js';
import { readVector } from '../fixtures/vectors.js';
import {
  classifyFrame,
  deriveStreamKeys,
  MAX_MESSAGE_BYTES,
  MAX_PLAIN_BYTES,
  openStreamMessage,
  sealStreamMessage,
  StreamCipher,
  streamAad,
  type SealedKind,
  type StreamDirection,
} from '../../src/features/watch-audio/stream-seal.js';

interface VectorMessage {
  direction: StreamDirection;
  kind: SealedKind;
  counter: number;
  plaintext_utf8?: string;
  plaintext_hex?: string;
  sealed_hex: string;
}

// The repository's copy (test/fixtures/vectors.ts keeps it equal to the shared file when that is present).
const vector = readVector('watch_audio_vector.json') as {
  secret_hex: string;
  grant_id: string;
  sid_hex: string;
  sid_b64url: string;
  key_watch_to_host_hex: string;
  key_host_to_watch_hex: string;
  aad_up_type3_utf8: string;
  messages: VectorMessage[];
  max_message_bytes: number;
  max_plain_bytes: number;
};

const root = Buffer.from(vector.secret_hex, 'hex');
const sid = Buffer.from(vector.sid_hex, 'hex');
const plaintextOf = (message: VectorMessage) =>
  message.plaintext_utf8 !== undefined
    ? Buffer.from(message.plaintext_utf8, 'utf8')
    : Buffer.from(message.plaintext_hex ?? '', 'hex');

describe('Watch audio vector', () => {
  it('derives both stream keys from the grant root and the sid', () => {
    expect(encodeBase64Url(sid)).toBe(vector.sid_b64url);
    const keys = deriveStreamKeys(root, sid);
    expect(Buffer.from(keys.up).toString('hex')).toBe(vector.key_watch_to_host_hex);
    expect(Buffer.from(keys.down).toString('hex')).toBe(vector.key_host_to_watch_hex);
  });

  it('builds the AAD of an up control message', () => {
    expect(streamAad('watch-to-host', vector.grant_id, sid, 3)).toBe(vector.aad_up_type3_utf8);
  });

  it.each(vector.messages)('seals and opens the $direction kind $kind message at counter $counter', (message) => {
    const keys = deriveStreamKeys(root, sid);
    const key = message.direction === 'watch-to-host' ? keys.up : keys.down;
    const sealed = sealStreamMessage(
      key,
      message.direction,
      vector.grant_id,
      sid,
      message.kind,
      BigInt(message.counter),
      plaintextOf(message),
    );
    expect(sealed.toString('hex')).toBe(message.sealed_hex);
    const opened = openStreamMessage(
      key,
      message.direction,
      vector.grant_id,
      sid,
      Buffer.from(message.sealed_hex, 'hex'),
    );
    expect(opened).toEqual({
      ok: true,
      kind: message.kind,
      counter: BigInt(message.counter),
      plaintext: new Uint8Array(plaintextOf(message)),
    });
  });

  it('opens the Watch start message as the host stream does, and refuses it replayed', () => {
    const up = vector.messages.find((message) => message.direction === 'watch-to-host');
    if (!up) throw new Error('the vector has an up message');
    const stream = new StreamCipher(root, vector.grant_id, sid);
    const sealed = Buffer.from(up.sealed_hex, 'hex');
    const opened = stream.open(sealed);
    expect(opened?.kind).toBe(3);
    expect(JSON.parse(Buffer.from(opened?.plaintext ?? []).toString('utf8'))).toEqual({
      type: 'start',
      engine: 'gpt_live',
    });
    expect(stream.open(sealed)).toBeNull();
  });

  it('refuses a message with a changed byte, another kind, another grant or another sid', () => {
    const up = vector.messages.find((message) => message.direction === 'watch-to-host');
    if (!up) throw new Error('the vector has an up message');
    const sealed = Buffer.from(up.sealed_hex, 'hex');
    const flipped = Buffer.from(sealed);
    flipped[flipped.length - 1] = (flipped[flipped.length - 1] ?? 0) ^ 1;
    const retyped = Buffer.from(sealed);
    retyped[0] = 2;
    expect(new StreamCipher(root, vector.grant_id, sid).open(flipped)).toBeNull();
    expect(new StreamCipher(root, vector.grant_id, sid).open(retyped)).toBeNull();
    expect(new StreamCipher(root, 'H'.repeat(22), sid).open(sealed)).toBeNull();
    expect(new StreamCipher(root, vector.grant_id, Buffer.alloc(16, 1)).open(sealed)).toBeNull();
  });

  it('seals the host stream from counter 0 upwards', () => {
    const stream = new StreamCipher(root, vector.grant_id, sid);
    const first = stream.seal(1, Buffer.from('01000200', 'hex'));
    const second = stream.seal(1, Buffer.from('01000200', 'hex'));
    expect(first.readBigUInt64BE(1)).toBe(0n);
    const down = vector.messages.find((message) => message.direction === 'host-to-watch');
    expect(second.toString('hex')).toBe(down?.sealed_hex);
  });

  it('reads the clear hello and the relay notices', () => {
    expect(classifyFrame(Buffer.concat([Buffer.from([4]), sid, Buffer.from([1])]))).toEqual({
      type: 'hello',
      sid: new Uint8Array(sid),
      version: 1,
    });
    expect(classifyFrame(Buffer.from([0, 1]))).toEqual({ type: 'notice', notice: 1 });
    expect(classifyFrame(Buffer.from([0, 2]))).toEqual({ type: 'notice', notice: 2 });
    expect(classifyFrame(Buffer.from([9, 9]))).toEqual({ type: 'malformed' });
  });

  it('keeps the size bounds', () => {
    expect(MAX_MESSAGE_BYTES).toBe(vector.max_message_bytes);
    expect(MAX_PLAIN_BYTES).toBe(vector.max_plain_bytes);
    const keys = deriveStreamKeys(root, sid);
    const largest = sealStreamMessage(
      keys.down,
      'host-to-watch',
      vector.grant_id,
      sid,
      1,
      0n,
      Buffer.alloc(MAX_PLAIN_BYTES),
    );
    expect(largest.length).toBe(MAX_MESSAGE_BYTES);
    expect(() =>
      sealStreamMessage(keys.down, 'host-to-watch', vector.grant_id, sid, 1, 0n, Buffer.alloc(MAX_PLAIN_BYTES + 1)),
    ).toThrow(RangeError);
  });
});
