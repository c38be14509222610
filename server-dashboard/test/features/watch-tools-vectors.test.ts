/**
 * watch_tools_vector.json (CRYPTO.md §3, the vector Conduit's Watch checks too) reproduced byte for byte
 * by the Watch tools feature's own sealing: both keys, the call the Watch seals, the answer the host
 * seals (compact JSON, raw UTF-8), and the size bound the relay enforces on sealed calls.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  deriveWatchKeys,
  openWatchMessage,
  sealWatchMessage,
  watchAad,
  watchPlaintext,
} from '../../src/features/watch/watch-seal.js';
import { WATCH_LIMITS } from '../../src/features/watch/watch-limits.js';
import { readVector } from '../fixtures/vectors.js';

const vector = z
  .object({
    secret_hex: z.string(),
    grant_id: z.string(),
    rid: z.string(),
    nonce_hex: z.string(),
    nonce_b64url: z.string(),
    call_key_hex: z.string(),
    result_key_hex: z.string(),
    call_plaintext_utf8: z.string(),
    call_direction: z.literal('call'),
    call_ct_b64url: z.string(),
    result_payload: z.record(z.string(), z.unknown()),
    result_direction: z.literal('result'),
    result_ct_b64url: z.string(),
    relay_max_call_ct_chars: z.number(),
  })
  .parse(readVector('watch_tools_vector.json'));

const bytes = (hex: string) => new Uint8Array(Buffer.from(hex, 'hex'));
const hex = (value: Uint8Array) => Buffer.from(value).toString('hex');
const utf8 = new TextEncoder();
const keys = deriveWatchKeys(bytes(vector.secret_hex));
const nonce = bytes(vector.nonce_hex);

describe('watch-tools v1 vector through the feature', () => {
  it('derives the call and result keys from the grant root', () => {
    expect(hex(keys.call)).toBe(vector.call_key_hex);
    expect(hex(keys.result)).toBe(vector.result_key_hex);
  });

  it('seals the Watch call byte for byte and opens it to the call the vector holds', () => {
    const sealed = sealWatchMessage(
      keys.call,
      vector.call_direction,
      vector.grant_id,
      vector.rid,
      utf8.encode(vector.call_plaintext_utf8),
      nonce,
    );
    expect(sealed).toEqual({ n: vector.nonce_b64url, ct: vector.call_ct_b64url });
    expect(openWatchMessage(keys.call, 'call', vector.grant_id, vector.rid, sealed, WATCH_LIMITS.maxCallBytes)).toEqual(
      { ok: true, payload: JSON.parse(vector.call_plaintext_utf8) as unknown },
    );
  });

  it('seals the answer as compact JSON with raw UTF-8, byte for byte', () => {
    const plaintext = watchPlaintext(vector.result_payload);
    expect(new TextDecoder().decode(plaintext)).toContain('21°C');
    expect(sealWatchMessage(keys.result, 'result', vector.grant_id, vector.rid, plaintext, nonce)).toEqual({
      n: vector.nonce_b64url,
      ct: vector.result_ct_b64url,
    });
  });

  it('binds each box to its direction, grant and rid: any other opens nothing', () => {
    const call = { n: vector.nonce_b64url, ct: vector.call_ct_b64url };
    const refused = { ok: false, why: 'did not verify' };
    const max = WATCH_LIMITS.maxCallBytes;
    expect(openWatchMessage(keys.result, 'call', vector.grant_id, vector.rid, call, max)).toEqual(refused);
    expect(openWatchMessage(keys.call, 'result', vector.grant_id, vector.rid, call, max)).toEqual(refused);
    expect(openWatchMessage(keys.call, 'call', 'H'.repeat(22), vector.rid, call, max)).toEqual(refused);
    expect(openWatchMessage(keys.call, 'call', vector.grant_id, 'S'.repeat(22), call, max)).toEqual(refused);
    const flipped = (vector.call_ct_b64url[0] === 'A' ? 'B' : 'A') + vector.call_ct_b64url.slice(1);
    expect(openWatchMessage(keys.call, 'call', vector.grant_id, vector.rid, { ...call, ct: flipped }, max)).toEqual(
      refused,
    );
    expect(watchAad('call', vector.grant_id, vector.rid)).toBe(
      `conduit-watch-tools/1\ncall\ngrant=${vector.grant_id}\nrid=${vector.rid}`,
    );
  });

  it('refuses malformed envelopes before any decryption', () => {
    const max = WATCH_LIMITS.maxCallBytes;
    const open = (n: string, ct: string) =>
      openWatchMessage(keys.call, 'call', vector.grant_id, vector.rid, { n, ct }, max);
    expect(open('AAECAwQFBgcICQo', vector.call_ct_b64url)).toEqual({ ok: false, why: 'malformed' });
    expect(open(`${vector.nonce_b64url}=`, vector.call_ct_b64url)).toEqual({ ok: false, why: 'malformed' });
    expect(open(vector.nonce_b64url, 'short')).toEqual({ ok: false, why: 'malformed' });
    expect(open(vector.nonce_b64url, `${vector.call_ct_b64url}+`)).toEqual({ ok: false, why: 'malformed' });
  });

  it('a 4,096-byte call seals to the relay cap of 5,483 characters and opens; one byte more is refused', () => {
    const call = (size: number) => {
      const padding = size - JSON.stringify({ tool: 'web_search', args: { query: '' } }).length;
      return utf8.encode(JSON.stringify({ tool: 'web_search', args: { query: 'q'.repeat(padding) } }));
    };
    const atCap = sealWatchMessage(keys.call, 'call', vector.grant_id, vector.rid, call(4096), nonce);
    expect(atCap.ct.length).toBe(vector.relay_max_call_ct_chars);
    const opened = openWatchMessage(keys.call, 'call', vector.grant_id, vector.rid, atCap, WATCH_LIMITS.maxCallBytes);
    expect(opened.ok).toBe(true);
    const over = sealWatchMessage(keys.call, 'call', vector.grant_id, vector.rid, call(4097), nonce);
    expect(openWatchMessage(keys.call, 'call', vector.grant_id, vector.rid, over, WATCH_LIMITS.maxCallBytes)).toEqual({
      ok: false,
      why: 'too large',
    });
    // Non-objects are refused once verified: the call is always `{tool, args}`.
    const list = sealWatchMessage(keys.call, 'call', vector.grant_id, vector.rid, utf8.encode('[1]'), nonce);
    expect(openWatchMessage(keys.call, 'call', vector.grant_id, vector.rid, list, 4096)).toEqual({
      ok: false,
      why: 'not a JSON object',
    });
  });
});
