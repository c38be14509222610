/**
 * The Watch tools and Watch audio formats (CRYPTO.md §3, §4) are not built yet; these tests pin that the
 * shared primitives reproduce their repository vectors, so that work only adds labels and framing.
 */
import { describe, expect, it } from 'vitest';
import { readVector, type VectorName } from '../fixtures/vectors.js';
import { decodeBase64Url, encodeBase64Url } from '../../src/crypto/base64url.js';
import { hkdfSha256, openChaCha20Poly1305, sealChaCha20Poly1305 } from '../../src/crypto/symmetric.js';

const read = (name: VectorName): Record<string, unknown> => readVector(name) as Record<string, unknown>;
const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');
const fromHex = (text: unknown) => new Uint8Array(Buffer.from(String(text), 'hex'));
const utf8 = new TextEncoder();

describe('watch-tools v1 vector', () => {
  const v = read('watch_tools_vector.json');
  const secret = fromHex(v.secret_hex);
  const nonce = fromHex(v.nonce_hex);
  const aad = (direction: string) =>
    `conduit-watch-tools/1\n${direction}\ngrant=${String(v.grant_id)}\nrid=${String(v.rid)}`;
  const callKey = hkdfSha256(secret, 'conduit-watch-tools-v1', 'conduit-watch-tools-v1 call watch-to-host');
  const resultKey = hkdfSha256(secret, 'conduit-watch-tools-v1', 'conduit-watch-tools-v1 result host-to-watch');

  it('derives the call and result keys', () => {
    expect(hex(callKey)).toBe(v.call_key_hex);
    expect(hex(resultKey)).toBe(v.result_key_hex);
    expect(encodeBase64Url(nonce)).toBe(v.nonce_b64url);
  });

  it('seals the call and the result byte for byte, and opens them', () => {
    const call = sealChaCha20Poly1305(callKey, nonce, aad('call'), utf8.encode(String(v.call_plaintext_utf8)));
    expect(encodeBase64Url(call)).toBe(v.call_ct_b64url);
    const result = sealChaCha20Poly1305(resultKey, nonce, aad('result'), utf8.encode(JSON.stringify(v.result_payload)));
    expect(encodeBase64Url(result)).toBe(v.result_ct_b64url);
    const opened = openChaCha20Poly1305(
      callKey,
      nonce,
      aad('call'),
      decodeBase64Url(String(v.call_ct_b64url)) ?? new Uint8Array(),
    );
    expect(opened && new TextDecoder().decode(opened)).toBe(v.call_plaintext_utf8);
    expect(openChaCha20Poly1305(resultKey, nonce, aad('call'), result)).toBeNull();
  });
});

describe('watch-audio v1 vector', () => {
  const v = read('watch_audio_vector.json');
  const secret = fromHex(v.secret_hex);
  const sid = String(v.sid_b64url);
  const key = (direction: string) =>
    hkdfSha256(secret, 'conduit-watch-audio-v1', `conduit-watch-audio-v1 ${direction} stream=${sid}`);

  it('derives both stream keys', () => {
    expect(encodeBase64Url(fromHex(v.sid_hex))).toBe(sid);
    expect(hex(key('watch-to-host'))).toBe(v.key_watch_to_host_hex);
    expect(hex(key('host-to-watch'))).toBe(v.key_host_to_watch_hex);
  });

  it('frames [kind][counter BE][ct||tag] with the counter nonce, byte for byte', () => {
    const messages = v.messages as Array<{
      direction: string;
      kind: number;
      counter: number;
      plaintext_utf8?: string;
      plaintext_hex?: string;
      sealed_hex: string;
    }>;
    expect(messages.length).toBeGreaterThan(1);
    for (const message of messages) {
      const counter = Buffer.alloc(8);
      counter.writeBigUInt64BE(BigInt(message.counter));
      const nonce = new Uint8Array(Buffer.concat([Buffer.alloc(4), counter]));
      const aad = `conduit-watch-audio/1\n${message.direction}\ngrant=${String(v.grant_id)}\nsid=${sid}\ntype=${message.kind}`;
      const plain =
        message.plaintext_utf8 !== undefined ? utf8.encode(message.plaintext_utf8) : fromHex(message.plaintext_hex);
      const sealed = sealChaCha20Poly1305(key(message.direction), nonce, aad, plain);
      const frame = Buffer.concat([Buffer.from([message.kind]), counter, sealed]);
      expect(frame.toString('hex')).toBe(message.sealed_hex);
    }
  });
});
