import { createHmac, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { e2eEnvelope } from '@conduit/contracts/crypto/e2e';
import { decodeBase64Url, encodeBase64Url } from '../../src/crypto/base64url.js';
import { deriveE2eKeys, keyedEventId, keysFromRecord, threadToken } from '../../src/crypto/e2e-keys.js';
import { E2eSealError, pushAad, sealEvent } from '../../src/crypto/e2e-seal.js';
import { openSealedAnswer, openSealedAnswers, sealAnswer } from '../../src/crypto/e2e-answer.js';
import { openNotification } from '../../src/crypto/e2e-device.js';
import type { HostEvent } from '@conduit/contracts/relay/events';
import { readVector } from '../fixtures/vectors.js';
import { nodeKeyedId, nodeKeys, nodeOpen, nodeSealAnswer, nodeSealRaw, nodeThreadToken } from './independent-e2e.js';

const vector = readVector('e2e_notification_vector_computed.json') as {
  kid: string;
  secret_hex: string;
  secret_b64url: string;
  installation_id: string;
  gateway_id: string;
  keys_hex: { push: string; answer: string; meta: string };
  event_id: string;
  keyed_event_id_msg: string;
  thread_token_seed: string;
  thread_token: string;
  iat: number;
  inner: { body: string; session_id: string; profile: string; decision: HostEvent['decision'] };
  push_aad_utf8: string;
  envelope: Record<string, unknown>;
  outgoing_event: Record<string, unknown>;
  answer: { plaintext: string; question_id: string; aad_utf8: string; sealed: string };
};

const secret = Buffer.from(vector.secret_hex, 'hex');
const keys = deriveE2eKeys(vector.kid, secret);
const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');
const zeroNonce = () => new Uint8Array(12);
const pairing = { installationId: vector.installation_id, gatewayId: vector.gateway_id };

const vectorEvent: HostEvent = {
  event_id: vector.event_id,
  type: 'input.needed',
  session_id: vector.inner.session_id,
  profile: vector.inner.profile,
  body: vector.inner.body,
  ...(vector.inner.decision ? { decision: vector.inner.decision } : {}),
};

describe('e2e-v1 against the computed known-answer vector', () => {
  it('derives the push, answer and meta keys', () => {
    expect(hex(keys.push)).toBe(vector.keys_hex.push);
    expect(hex(keys.answer)).toBe(vector.keys_hex.answer);
    expect(hex(keys.meta)).toBe(vector.keys_hex.meta);
  });

  it('push key equals HKDF with a single expand block, HMAC(HMAC(salt, secret), info || 0x01)', () => {
    const prk = createHmac('sha256', 'conduit-e2e-v1').update(secret).digest();
    const block = createHmac('sha256', prk)
      .update(Buffer.concat([Buffer.from('conduit-e2e-v1 push gateway-to-device'), Buffer.from([1])]))
      .digest();
    expect(hex(keys.push)).toBe(block.toString('hex'));
  });

  it('reads the stored record form (kid + 43-char base64url secret) into the same keys', () => {
    const fromRecord = keysFromRecord({ kid: vector.kid, secret: vector.secret_b64url });
    expect(fromRecord && hex(fromRecord.push)).toBe(vector.keys_hex.push);
    expect(keysFromRecord({ kid: vector.kid.toUpperCase(), secret: vector.secret_b64url })).toBeNull();
    expect(keysFromRecord({ kid: vector.kid, secret: vector.secret_b64url.slice(1) })).toBeNull();
  });

  it('computes the keyed event id and the thread token', () => {
    expect(keyedEventId(keys.meta, vector.event_id)).toBe(vector.keyed_event_id_msg);
    expect(threadToken(keys.meta, vector.thread_token_seed)).toBe(vector.thread_token);
  });

  it('builds the 11-line push AAD byte for byte', () => {
    expect(
      pushAad({
        kid: vector.kid,
        ...pairing,
        msg: vector.keyed_event_id_msg,
        type: 'input.needed',
        iat: vector.iat,
        tok: vector.thread_token,
        z: 1,
        req: 'conduit-push-abc123def456',
      }),
    ).toBe(vector.push_aad_utf8);
  });

  it('seals the vector event into exactly the vector envelope and outgoing event', () => {
    const sealed = sealEvent(vectorEvent, { keys, ...pairing, nowSeconds: vector.iat, nonce: zeroNonce });
    expect(sealed.e2e).toEqual(vector.envelope);
    expect({ ...sealed, e2e: '<envelope>' }).toEqual(vector.outgoing_event);
    expect(e2eEnvelope.safeParse(sealed.e2e).success).toBe(true);
  });

  it('seals and opens the vector answer', () => {
    const binding = { ...pairing, requestId: 'conduit-push-abc123def456', questionId: '' };
    expect(sealAnswer(vector.answer.plaintext, keys, binding, new Uint8Array(12))).toBe(vector.answer.sealed);
    expect(openSealedAnswer(vector.answer.sealed, keys, binding)).toBe('Yes');
  });
});

describe('e2e-v1 against an independent node:crypto implementation', () => {
  const rootSecret = randomBytes(32);
  const kid = randomBytes(16).toString('hex');
  const moduleKeys = deriveE2eKeys(kid, rootSecret);
  const nodeSide = nodeKeys(rootSecret);
  const inst = '6f0c5a9e-1b7d-4c1e-9d55-0a7a3b0e2f11';
  const gw = '9b2f6c1e-3d4a-4e5b-8c7d-1e2f3a4b5c6d';
  const now = 1_770_000_000;

  it('derives the same keys, ids and tokens', () => {
    expect(hex(moduleKeys.push)).toBe(nodeSide.push.toString('hex'));
    expect(hex(moduleKeys.answer)).toBe(nodeSide.answer.toString('hex'));
    expect(hex(moduleKeys.meta)).toBe(nodeSide.meta.toString('hex'));
    for (const id of ['response:0f3c', 'no-colon-id', 'approval:a:b:c']) {
      expect(keyedEventId(moduleKeys.meta, id)).toBe(nodeKeyedId(nodeSide.meta, id));
    }
    expect(threadToken(moduleKeys.meta, 'sessión-✓')).toBe(nodeThreadToken(nodeSide.meta, 'sessión-✓'));
  });

  it('a compressed, non-ASCII approval opens with node:crypto to the same inner fields in order', () => {
    const event: HostEvent = {
      event_id: 'approval:5e1d0c',
      type: 'approval.needed',
      plugin_version: '0.37.0',
      plugin_capabilities: ['e2e-v1'],
      session_id: 'sess-ü',
      profile: 'coder',
      title: 'Approval needed · Infra',
      body: 'Run rm -rf build/ — “cleanup” '.repeat(8),
      decision: { kind: 'approval', session_key: 'sk-1', description: 'Run rm -rf build/', choices: ['once', 'deny'] },
    };
    const sealed = sealEvent(event, {
      keys: moduleKeys,
      installationId: inst,
      gatewayId: gw,
      nowSeconds: now,
      nonce: () => randomBytes(12),
    });
    expect(sealed.e2e.z).toBe(1);
    expect(sealed.event_id).toBe(nodeKeyedId(nodeSide.meta, event.event_id));
    expect(sealed.e2e.tok).toBe(nodeThreadToken(nodeSide.meta, 'sess-ü'));
    expect(sealed).toMatchObject({
      type: 'approval.needed',
      plugin_version: '0.37.0',
      plugin_capabilities: ['e2e-v1'],
    });
    expect(sealed).not.toHaveProperty('clarify');
    const inner = nodeOpen(sealed.e2e, 'approval.needed', inst, gw, nodeSide.push);
    expect(JSON.stringify(inner)).toBe(
      JSON.stringify({
        title: event.title,
        body: event.body,
        session_id: event.session_id,
        profile: 'coder',
        decision: event.decision,
      }),
    );
    // Bound to the event type and the pairing: the same envelope under another type or gateway fails.
    expect(() => nodeOpen(sealed.e2e, 'response.ready', inst, gw, nodeSide.push)).toThrow();
    expect(() => nodeOpen(sealed.e2e, 'approval.needed', inst, 'other-gw', nodeSide.push)).toThrow();
  });

  it('an uncompressed envelope is byte-identical to node:crypto sealing the same plaintext and nonce', () => {
    const event: HostEvent = { event_id: 'response:1', type: 'response.ready', body: 'ok' };
    const nonce = randomBytes(12);
    const sealed = sealEvent(event, {
      keys: moduleKeys,
      installationId: inst,
      gatewayId: gw,
      nowSeconds: now,
      nonce: () => nonce,
    });
    expect(sealed.e2e.z).toBe(0);
    const { ct, ...rest } = sealed.e2e;
    expect(ct).toBe(nodeSealRaw(rest, Buffer.from('{"body":"ok"}'), 'response.ready', inst, gw, nodeSide.push));
    // No session: the thread token is seeded with the keyed id.
    expect(sealed.e2e.tok).toBe(nodeThreadToken(nodeSide.meta, sealed.event_id));
  });

  it('the module opens what the phone side seals (device view) and refuses stale or future envelopes', () => {
    const event: HostEvent = { event_id: 'failure:9', type: 'turn.failed', session_id: 's', title: 't' };
    const sealed = sealEvent(event, {
      keys: moduleKeys,
      installationId: inst,
      gatewayId: gw,
      nowSeconds: now,
      nonce: () => randomBytes(12),
    });
    const binding = { installationId: inst, gatewayId: gw };
    expect(openNotification(sealed.e2e, 'turn.failed', moduleKeys, binding, now)).toEqual({
      title: 't',
      session_id: 's',
    });
    expect(openNotification(sealed.e2e, 'turn.failed', moduleKeys, binding, now + 24 * 3600 + 1)).toBeNull();
    expect(openNotification(sealed.e2e, 'turn.failed', moduleKeys, binding, now - 3601)).toBeNull();
  });

  it('opens answers node:crypto sealed, per qid, and rejects every mismatch', () => {
    const req = 'conduit-push-0a1b2c3d4e5f';
    const binding = { installationId: inst, gatewayId: gw, requestId: req };
    const seal = (answer: string, qid: string, overrides: Partial<{ kid: string; req: string; gw: string }> = {}) =>
      nodeSealAnswer(
        answer,
        overrides.kid ?? kid,
        inst,
        overrides.gw ?? gw,
        overrides.req ?? req,
        qid,
        nodeSide.answer,
        randomBytes(12),
      );

    expect(openSealedAnswer(seal('Ship it ✅', ''), moduleKeys, { ...binding, questionId: '' })).toBe('Ship it ✅');
    expect(openSealedAnswers({ q0: seal('Yes', 'q0'), q1: seal('["a","b"]', 'q1') }, moduleKeys, binding)).toEqual({
      q0: 'Yes',
      q1: '["a","b"]',
    });
    // The qid is authenticated: answers swapped between questions are refused.
    expect(openSealedAnswers({ q0: seal('Yes', 'q1') }, moduleKeys, binding)).toBeNull();
    expect(openSealedAnswer('Yes', moduleKeys, { ...binding, questionId: '' })).toBeNull();
    expect(
      openSealedAnswer(seal('Yes', '', { req: 'conduit-push-other00000' }), moduleKeys, { ...binding, questionId: '' }),
    ).toBeNull();
    expect(openSealedAnswer(seal('Yes', '', { gw: 'gw-2' }), moduleKeys, { ...binding, questionId: '' })).toBeNull();
    const otherKid = 'f'.repeat(32);
    expect(openSealedAnswer(seal('Yes', '', { kid: otherKid }), moduleKeys, { ...binding, questionId: '' })).toBeNull();
    const good = seal('Yes', '');
    // Change the second-to-last character (all of its bits are ciphertext bits) to a different one.
    const replaced = good.at(-2) === 'A' ? 'B' : 'A';
    const tampered = `${good.slice(0, -2)}${replaced}${good.slice(-1)}`;
    expect(tampered).not.toBe(good);
    expect(openSealedAnswer(tampered, moduleKeys, { ...binding, questionId: '' })).toBeNull();
    expect(openSealedAnswer(42, moduleKeys, { ...binding, questionId: '' })).toBeNull();
  });

  it('rejects an answer that decrypts to bytes that are not UTF-8', () => {
    const req = 'conduit-push-0a1b2c3d4e5f';
    const binding = { installationId: inst, gatewayId: gw, requestId: req, questionId: '' };
    const notUtf8 = nodeSealAnswer(
      Buffer.from([0x59, 0xff, 0xfe]),
      kid,
      inst,
      gw,
      req,
      '',
      nodeSide.answer,
      randomBytes(12),
    );
    expect(openSealedAnswer(notUtf8, moduleKeys, binding)).toBeNull();
    const utf8 = nodeSealAnswer(Buffer.from('Yé'), kid, inst, gw, req, '', nodeSide.answer, randomBytes(12));
    expect(openSealedAnswer(utf8, moduleKeys, binding)).toBe('Yé');
  });
});

describe('sealing within the relay bound', () => {
  const rootKeys = deriveE2eKeys('a'.repeat(32), new Uint8Array(32).fill(7));
  const ctx = {
    keys: rootKeys,
    installationId: 'inst',
    gatewayId: 'gw',
    nowSeconds: 1_770_000_000,
    nonce: () => randomBytes(12),
  };
  const noise = (n: number) => randomBytes(n).toString('base64url').slice(0, n);

  it('drops the decision card first and marks the clarify card false', () => {
    const event: HostEvent = {
      event_id: 'input:big',
      type: 'input.needed',
      session_id: 's1',
      body: 'Pick one',
      decision: {
        kind: 'clarify',
        request_id: 'conduit-push-000000000001',
        question: 'Pick one',
        questions: Array.from({ length: 8 }, (_, i) => ({
          qid: `q${i}`,
          question: noise(300),
          choices: [noise(60), noise(60)],
        })),
      },
    };
    const sealed = sealEvent(event, ctx);
    expect(sealed.clarify).toEqual({
      request_id: 'conduit-push-000000000001',
      qids: ['q0', 'q1', 'q2', 'q3', 'q4', 'q5', 'q6', 'q7'],
      card: false,
    });
    expect(sealed.e2e.req).toBe('conduit-push-000000000001');
    const inner = openNotification(
      sealed.e2e,
      'input.needed',
      rootKeys,
      { installationId: 'inst', gatewayId: 'gw' },
      ctx.nowSeconds,
    );
    expect(inner).toEqual({ body: 'Pick one', session_id: 's1' });
  });

  it('then keeps only the ids the phone needs to open the chat', () => {
    const event: HostEvent = {
      event_id: 'response:big',
      type: 'response.ready',
      session_id: 's1',
      profile: 'p',
      title: 'T',
      body: noise(2500),
    };
    const sealed = sealEvent(event, ctx);
    expect(sealed.e2e.ct.length).toBeLessThanOrEqual(2600);
    const inner = openNotification(
      sealed.e2e,
      'response.ready',
      rootKeys,
      { installationId: 'inst', gatewayId: 'gw' },
      ctx.nowSeconds,
    );
    expect(inner).toEqual({ session_id: 's1', profile: 'p' });
  });

  it('gives up with E2eSealError when even the ids do not fit', () => {
    expect(() => sealEvent({ event_id: 'response:x', type: 'response.ready', session_id: noise(3000) }, ctx)).toThrow(
      E2eSealError,
    );
  });
});

describe('base64url', () => {
  it('is unpadded and strict', () => {
    expect(encodeBase64Url(new Uint8Array([251, 255]))).toBe('-_8');
    expect(decodeBase64Url('-_8')).toEqual(new Uint8Array([251, 255]));
    expect(decodeBase64Url('-_8=')).toBeNull();
    expect(decodeBase64Url('ab+c')).toBeNull();
    expect(decodeBase64Url('abcde')).toBeNull();
  });
});
