/**
 * A second implementation of the e2e-v1 format, written from CRYPTO.md with node:crypto (HKDF, HMAC,
 * ChaCha20-Poly1305) and node:zlib, so the module under test (noble + pako) is checked against code
 * that shares none of its primitives or helpers.
 */
import { createCipheriv, createDecipheriv, createHmac, hkdfSync } from 'node:crypto';
import { inflateRawSync } from 'node:zlib';

export function nodeKeys(secret: Buffer): { push: Buffer; answer: Buffer; meta: Buffer } {
  const derive = (info: string) => Buffer.from(hkdfSync('sha256', secret, 'conduit-e2e-v1', info, 32));
  return {
    push: derive('conduit-e2e-v1 push gateway-to-device'),
    answer: derive('conduit-e2e-v1 answer device-to-gateway'),
    meta: derive('conduit-e2e-v1 metadata'),
  };
}

export function nodeKeyedId(meta: Buffer, id: string): string {
  const prefix = id.includes(':') && !id.startsWith(':') ? id.split(':')[0] : 'event';
  return `${prefix}:${createHmac('sha256', meta).update(id, 'utf8').digest('hex').slice(0, 32)}`;
}

export function nodeThreadToken(meta: Buffer, seed: string): string {
  return createHmac('sha256', meta).update(`thread\n${seed}`, 'utf8').digest('hex').slice(0, 16);
}

export interface NodeEnvelope {
  kid: string;
  msg: string;
  iat: number;
  tok: string;
  z: number;
  req: string;
  n: string;
  ct: string;
}

function pushAadText(env: NodeEnvelope, type: string, inst: string, gw: string): string {
  return `conduit-e2e/1\npush\nkid=${env.kid}\ninst=${inst}\ngw=${gw}\nmsg=${env.msg}\ntype=${type}\niat=${env.iat}\ntok=${env.tok}\nz=${env.z}\nreq=${env.req}`;
}

/** Opens an envelope; throws when it does not verify. */
export function nodeOpen(env: NodeEnvelope, type: string, inst: string, gw: string, push: Buffer): unknown {
  const blob = Buffer.from(env.ct, 'base64url');
  const decipher = createDecipheriv('chacha20-poly1305', push, Buffer.from(env.n, 'base64url'), { authTagLength: 16 });
  decipher.setAAD(Buffer.from(pushAadText(env, type, inst, gw), 'utf8'), { plaintextLength: blob.length - 16 });
  decipher.setAuthTag(blob.subarray(blob.length - 16));
  const plain = Buffer.concat([decipher.update(blob.subarray(0, blob.length - 16)), decipher.final()]);
  return JSON.parse((env.z === 1 ? inflateRawSync(plain) : plain).toString('utf8'));
}

/** Seals with a given nonce and already-encoded (maybe compressed) data. */
export function nodeSealRaw(
  env: Omit<NodeEnvelope, 'ct'>,
  data: Buffer,
  type: string,
  inst: string,
  gw: string,
  push: Buffer,
): string {
  const cipher = createCipheriv('chacha20-poly1305', push, Buffer.from(env.n, 'base64url'), { authTagLength: 16 });
  cipher.setAAD(Buffer.from(pushAadText({ ...env, ct: '' }, type, inst, gw), 'utf8'), { plaintextLength: data.length });
  const body = Buffer.concat([cipher.update(data), cipher.final(), cipher.getAuthTag()]);
  return body.toString('base64url');
}

export function nodeSealAnswer(
  answer: string | Buffer,
  kid: string,
  inst: string,
  gw: string,
  req: string,
  qid: string,
  key: Buffer,
  nonce: Buffer,
): string {
  const cipher = createCipheriv('chacha20-poly1305', key, nonce, { authTagLength: 16 });
  const plain = typeof answer === 'string' ? Buffer.from(answer, 'utf8') : answer;
  const aad = `conduit-e2e/1\nanswer\nkid=${kid}\ninst=${inst}\ngw=${gw}\nreq=${req}\nqid=${qid}`;
  cipher.setAAD(Buffer.from(aad, 'utf8'), { plaintextLength: plain.length });
  const ct = Buffer.concat([cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
  return `e2e1.${kid}.${nonce.toString('base64url')}.${ct.toString('base64url')}`;
}
