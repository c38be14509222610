/**
 * The Watch's side of Watch tools for tests, apart from the host's code: its own node:crypto sealing
 * (CRYPTO.md §3) and its own requests to the relay's Watch side (API.md routes 17 and 20). The real relay
 * process it talks to is test/support/real-relay.ts.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
export { RealRelay } from './real-relay.js';

export interface Grant {
  grant_id: string;
  relay_url: string;
  key: string;
  watch_key: string;
  expires_at: string;
  tools: string[];
  max_calls: number;
  max_jobs: number;
  job_profiles?: string[];
  jobs_carried_from?: string;
}

const SALT = 'conduit-watch-tools-v1';
const aad = (direction: 'call' | 'result', gid: string, rid: string) =>
  Buffer.from(`conduit-watch-tools/1\n${direction}\ngrant=${gid}\nrid=${rid}`, 'utf8');
const keyOf = (root: string, direction: 'call watch-to-host' | 'result host-to-watch') =>
  Buffer.from(hkdfSync('sha256', Buffer.from(root, 'base64url'), SALT, `${SALT} ${direction}`, 32));

function seal(key: Buffer, associated: Buffer, plaintext: Buffer): { n: string; ct: string } {
  const nonce = randomBytes(12);
  const cipher = createCipheriv('chacha20-poly1305', key, nonce, { authTagLength: 16 });
  cipher.setAAD(associated, { plaintextLength: plaintext.length });
  const ct = Buffer.concat([cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
  return { n: nonce.toString('base64url'), ct: ct.toString('base64url') };
}

function open(key: Buffer, associated: Buffer, sealed: { n: string; ct: string }): unknown {
  const box = Buffer.from(sealed.ct, 'base64url');
  const decipher = createDecipheriv('chacha20-poly1305', key, Buffer.from(sealed.n, 'base64url'), {
    authTagLength: 16,
  });
  decipher.setAAD(associated, { plaintextLength: box.length - 16 });
  decipher.setAuthTag(box.subarray(box.length - 16));
  const plain = Buffer.concat([decipher.update(box.subarray(0, box.length - 16)), decipher.final()]);
  return JSON.parse(plain.toString('utf8')) as unknown;
}

export class WatchStandIn {
  private readonly callKey: Buffer;
  private readonly resultKey: Buffer;
  constructor(readonly grant: Grant) {
    this.callKey = keyOf(grant.key, 'call watch-to-host');
    this.resultKey = keyOf(grant.key, 'result host-to-watch');
  }

  /** A call sealed as the Watch seals it, posted to the relay and held there until the host answers. */
  async call(
    tool: string,
    args: Record<string, unknown>,
  ): Promise<{ status: number; answer?: unknown; body: unknown }> {
    const rid = randomBytes(16).toString('base64url');
    const plaintext = Buffer.from(JSON.stringify({ tool, args }), 'utf8');
    return this.post(rid, seal(this.callKey, aad('call', this.grant.grant_id, rid), plaintext));
  }

  /** Posts a prepared envelope under `rid`; opens a 200 answer with the result key. */
  async post(
    rid: string,
    sealed: { n: string; ct: string },
    watchKey = this.grant.watch_key,
  ): Promise<{ status: number; answer?: unknown; body: unknown }> {
    const response = await fetch(`${this.grant.relay_url}/v1/watch-tools/grants/${this.grant.grant_id}/calls`, {
      method: 'POST',
      headers: { authorization: `Bearer ${watchKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ rid, ...sealed }),
    });
    const body = (await response.json()) as unknown;
    if (response.status !== 200) return { status: response.status, body };
    const answer = open(this.resultKey, aad('result', this.grant.grant_id, rid), body as { n: string; ct: string });
    return { status: 200, answer, body };
  }

  sealCall(rid: string, plaintext: Buffer, key = this.callKey, gid = this.grant.grant_id) {
    return seal(key, aad('call', gid, rid), plaintext);
  }
}

/** A real relay process on a free loopback port, its data under `root`. */
