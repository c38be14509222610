import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createPrivateKey,
  createPublicKey,
  diffieHellman,
  hkdfSync,
  randomBytes,
  type KeyObject,
} from 'node:crypto';
import { TEST_TOKEN } from './config.js';

/**
 * A test client that does what the Conduit app does with a phone-data feature: agrees its key with
 * the host (`POST /<feature>/key`) and posts sealed batches. Its crypto is node:crypto, written apart
 * from the host's @noble code, so the two check each other (and the vectors script derives the
 * repository's vectors with these same functions).
 */

const PKCS8_X25519_PREFIX = Buffer.from('302e020100300506032b656e04220420', 'hex');
const SPKI_X25519_PREFIX = Buffer.from('302a300506032b656e032100', 'hex');

export function x25519PrivateKey(secret: Uint8Array): KeyObject {
  return createPrivateKey({ key: Buffer.concat([PKCS8_X25519_PREFIX, secret]), format: 'der', type: 'pkcs8' });
}

export function x25519PublicKey(raw: Uint8Array): KeyObject {
  return createPublicKey({ key: Buffer.concat([SPKI_X25519_PREFIX, raw]), format: 'der', type: 'spki' });
}

/** The raw 32-byte public key of a secret. */
export function x25519Public(secret: Uint8Array): Buffer {
  const der = createPublicKey(x25519PrivateKey(secret)).export({ format: 'der', type: 'spki' });
  return der.subarray(der.length - 32);
}

export function x25519Shared(secret: Uint8Array, peerPublic: Uint8Array): Buffer {
  return diffieHellman({ privateKey: x25519PrivateKey(secret), publicKey: x25519PublicKey(peerPublic) });
}

export function kidOf(label: string, devicePublic: Uint8Array, hostPublic: Uint8Array): string {
  return createHash('sha256').update(`${label} kid`).update(devicePublic).update(hostPublic).digest('hex').slice(0, 32);
}

export function keyFor(
  label: string,
  direction: string,
  shared: Uint8Array,
  devicePublic: Uint8Array,
  hostPublic: Uint8Array,
): Buffer {
  return Buffer.from(
    hkdfSync('sha256', shared, Buffer.concat([devicePublic, hostPublic]), `${label} ${direction}`, 32),
  );
}

export function chachaSeal(key: Uint8Array, nonce: Uint8Array, aad: string, plaintext: Uint8Array): Buffer {
  const cipher = createCipheriv('chacha20-poly1305', key, nonce, { authTagLength: 16 });
  cipher.setAAD(Buffer.from(aad, 'utf8'), { plaintextLength: plaintext.length });
  return Buffer.concat([cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
}

export function chachaOpen(key: Uint8Array, nonce: Uint8Array, aad: string, sealed: Uint8Array): Buffer | null {
  try {
    const decipher = createDecipheriv('chacha20-poly1305', key, nonce, { authTagLength: 16 });
    decipher.setAAD(Buffer.from(aad, 'utf8'), { plaintextLength: sealed.length - 16 });
    decipher.setAuthTag(Buffer.from(sealed.subarray(sealed.length - 16)));
    return Buffer.concat([decipher.update(sealed.subarray(0, sealed.length - 16)), decipher.final()]);
  } catch {
    return null;
  }
}

export const batchAadOf = (label: string, deviceId: string, kid: string, batchId: string) =>
  `${label} ingest\n${deviceId}\n${kid}\n${batchId}`;
export const voiceAadOf = (label: string, tool: string, kid: string, deviceId: string, callId: string) =>
  `${label} voice\n${tool}\n${kid}\n${deviceId}\n${callId}`;

export const mapsAadOf = (label: string, kid: string, deviceId: string, lookupId: string) =>
  `${label} maps\n${kid}\n${deviceId}\n${lookupId}`;

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64url');

export interface SealedEnvelope {
  v: 1;
  device_id: string;
  kid: string;
  batch_id: string;
  nonce: string;
  ct: string;
}

export type Answer = { status: number; body: Record<string, unknown> };

/** One phone with one device key for one feature. */
export class PhoneStandIn {
  readonly secret: Buffer;
  readonly publicKey: Buffer;
  hostKey: Buffer | null = null;
  kid: string | null = null;
  private batches = 0;

  constructor(
    readonly hostUrl: string,
    readonly feature: string,
    readonly label: string,
    readonly deviceId: string,
    options: { secret?: Uint8Array; profile?: string } = {},
  ) {
    this.secret = Buffer.from(options.secret ?? randomBytes(32));
    this.publicKey = x25519Public(this.secret);
    this.profile = options.profile;
  }

  readonly profile: string | undefined;

  async call(method: 'GET' | 'POST', route: string, body?: unknown): Promise<Answer> {
    const query = this.profile ? `?profile=${this.profile}` : '';
    const response = await fetch(`${this.hostUrl}/api/plugins/conduit_push/${this.feature}/${route}${query}`, {
      method,
      headers: { authorization: `Bearer ${TEST_TOKEN}`, 'content-type': 'application/json' },
      ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  }

  /** `POST /<feature>/key`, keeping the host key and kid it answers. */
  async agree(): Promise<Answer> {
    const answer = await this.call('POST', 'key', { v: 1, device_id: this.deviceId, device_key: b64(this.publicKey) });
    if (answer.status === 200) {
      this.hostKey = Buffer.from(answer.body.host_key as string, 'base64url');
      this.kid = answer.body.kid as string;
    }
    return answer;
  }

  /** The key of one direction with the agreed host key. */
  key(direction: string): Buffer {
    if (!this.hostKey) throw new Error('agree a key first');
    return keyFor(this.label, direction, x25519Shared(this.secret, this.hostKey), this.publicKey, this.hostKey);
  }

  /** A batch sealed as the app seals it; `batchId` defaults to a fresh one. */
  seal(payload: unknown, batchId = `b-${this.deviceId}-${++this.batches}`): SealedEnvelope {
    if (!this.kid) throw new Error('agree a key first');
    const nonce = randomBytes(12);
    const plain = Buffer.from(typeof payload === 'string' ? payload : JSON.stringify(payload), 'utf8');
    const aad = batchAadOf(this.label, this.deviceId, this.kid, batchId);
    const ct = chachaSeal(this.key('ingest device-to-host'), nonce, aad, plain);
    return { v: 1, device_id: this.deviceId, kid: this.kid, batch_id: batchId, nonce: b64(nonce), ct: b64(ct) };
  }

  ingest(envelope: SealedEnvelope | unknown): Promise<Answer> {
    return this.call('POST', 'ingest', envelope);
  }

  send(payload: unknown, batchId?: string): Promise<Answer> {
    return this.ingest(this.seal(payload, batchId));
  }
}
