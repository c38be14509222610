import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readCredentials, updateCredentials } from '../../src/credentials/credential-store.js';
import { encodeBase64Url } from '../../src/crypto/base64url.js';
import { pairProfile } from '../../src/pairing/pairing.js';
import { normalisePairingCode } from '../../src/pairing/pairing-code.js';
import { createRelayApi, type ClaimAnswer, type RelayApi } from '../../src/pairing/relay-api.js';
import { createRelayFetch } from '../../src/pairing/relay-http.js';
import { isLoopbackHost } from '../../src/kernel/loopback.js';
import { parseBareRelayUrl, RelayUrlError } from '../../src/pairing/relay-url.js';
import { PairingRelay, selfSignedCertificate } from './support/pairing-relay.js';

let home: string;
beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), 'conduit-pair-'));
});
afterEach(() => rm(home, { recursive: true, force: true }));

const inst = '6f0c5a9e-1b7d-4c1e-9d55-0a7a3b0e2f11';
const gw = '9b2f6c1e-3d4a-4e5b-8c7d-1e2f3a4b5c6d';

/** A relay API that answers claims with a fixed body and records where it was asked. */
function scriptedRelay(answer: Partial<ClaimAnswer>): RelayApi & { claimedAt: string[] } {
  const claimedAt: string[] = [];
  return {
    claimedAt,
    claimPairing: (relayUrl) => {
      claimedAt.push(relayUrl);
      return Promise.resolve({
        installation_id: inst,
        gateway_id: gw,
        credential: `${inst}.${gw}.c2VjcmV0`,
        ...answer,
      });
    },
    revokeGateway: () => Promise.resolve(),
    postEvent: () => Promise.resolve({ accepted: true, delivered: true }),
  };
}

const pair = (relay: RelayApi, relayUrl: string) =>
  pairProfile({ home, pairingCode: 'ABCDE-FGHJK', relayUrl, gatewayName: 'box Hermes', relay });

describe('which relay address a pairing keeps', () => {
  it('plain HTTP to a LAN address adopts the relay’s HTTPS PUBLIC_URL', async () => {
    const relay = scriptedRelay({ relay_url: 'https://push.example.net/' });
    const result = await pair(relay, 'http://192.168.1.20:9120');
    expect(relay.claimedAt).toEqual(['http://192.168.1.20:9120']);
    expect(result.relay_url).toBe('https://push.example.net');
    expect((await readCredentials(home))?.relay_url).toBe('https://push.example.net');
  });

  it('plain HTTP to a LAN relay that names no HTTPS address saves nothing', async () => {
    await expect(
      pair(scriptedRelay({ relay_url: 'http://192.168.1.20:9120' }), 'http://192.168.1.20:9120'),
    ).rejects.toBeInstanceOf(RelayUrlError);
    await expect(pair(scriptedRelay({}), 'http://100.64.0.9:9120')).rejects.toBeInstanceOf(RelayUrlError);
    expect(await readCredentials(home)).toBeNull();
  });

  it('HTTPS claims keep the relay’s HTTPS answer; loopback claims keep the loopback address', async () => {
    expect(
      (await pair(scriptedRelay({ relay_url: 'https://canonical.example' }), 'https://alias.example')).relay_url,
    ).toBe('https://canonical.example');
    expect((await pair(scriptedRelay({ relay_url: 'http://evil.example' }), 'https://alias.example')).relay_url).toBe(
      'https://alias.example',
    );
    expect(
      (await pair(scriptedRelay({ relay_url: 'https://public.example' }), 'http://127.0.0.1:9120')).relay_url,
    ).toBe('http://127.0.0.1:9120');
  });
});

describe('the claim answer', () => {
  it('is refused, and nothing saved, when the credential does not belong to the ids it came with', async () => {
    const relay = new PairingRelay();
    await relay.start();
    try {
      relay.claimRewrite = (answer) => ({ ...answer, credential: `${answer.installation_id}.someone-else.c2VjcmV0` });
      const claim = pairProfile({
        home,
        pairingCode: relay.mintCode(),
        relayUrl: relay.url,
        gatewayName: 'box Hermes',
        relay: createRelayApi({ userAgent: 'test' }),
      });
      await expect(claim).rejects.toThrow(/unreadable body/);
      expect(await readCredentials(home)).toBeNull();
    } finally {
      await relay.stop();
    }
  });
});

describe('re-pairing', () => {
  it('keeps the E2E key when the same phone and gateway pair again, and the redaction choice always', async () => {
    const e2e = { kid: 'a'.repeat(32), secret: encodeBase64Url(randomBytes(32)), created_at: '2026-01-01T00:00:00Z' };
    await updateCredentials(home, () => ({
      next: {
        credential: 'old',
        installation_id: inst,
        gateway_id: gw,
        redact_content: false,
        redact_key: 'f'.repeat(64),
        e2e,
      },
      result: undefined,
    }));
    const result = await pair(scriptedRelay({}), 'https://relay.example');
    expect(result.keptE2e).toBe(true);
    expect(await readCredentials(home)).toMatchObject({
      credential: `${inst}.${gw}.c2VjcmV0`,
      e2e,
      redact_content: false,
      redact_key: 'f'.repeat(64),
    });

    const other = scriptedRelay({ installation_id: '00000000-1111-2222-3333-444444444444' });
    const moved = await pair(other, 'https://relay.example');
    expect(moved.keptE2e).toBe(false);
    expect((await readCredentials(home))?.e2e).toBeUndefined();
  });
});

describe('input rules', () => {
  it('pairing codes: canonical XXXXX-XXXXX from the relay alphabet, case and spacing forgiven', () => {
    expect(normalisePairingCode('abcde-fghjk')).toBe('ABCDE-FGHJK');
    expect(normalisePairingCode(' ABCDE FGHJK ')).toBe('ABCDE-FGHJK');
    expect(normalisePairingCode('ABCDEFGHJK')).toBe('ABCDE-FGHJK');
    expect(normalisePairingCode('ABCDE-FGHJI')).toBeNull(); // I is not in the alphabet
    expect(normalisePairingCode('ABCD-EFGH')).toBeNull();
  });

  it('relay URLs must be bare http(s) origins; loopback is judged by shape', () => {
    expect(parseBareRelayUrl('https://push.milim.dev/')?.origin).toBe('https://push.milim.dev');
    for (const bad of [
      'https://a.example/v1',
      'https://a.example?x',
      'https://u:p@a.example',
      'ws://a.example',
      'nonsense',
    ]) {
      expect(parseBareRelayUrl(bad)).toBeNull();
    }
    // IPv4-mapped 127.0.0.1 is loopback (one rule for the whole service: test/kernel/loopback.test.ts).
    expect(['localhost', '127.0.0.1', '127.8.9.1', '[::1]', '::ffff:7f00:1'].every(isLoopbackHost)).toBe(true);
    expect(['192.168.1.2', '10.0.0.1', 'relay.local', '::ffff:a00:1'].some(isLoopbackHost)).toBe(false);
  });
});

describe('TLS to the relay', () => {
  it('refuses an untrusted certificate even with NODE_TLS_REJECT_UNAUTHORIZED=0, and accepts a trusted one', async () => {
    const tls = selfSignedCertificate();
    const relay = new PairingRelay();
    const url = await relay.start(tls);
    const previous = process.env.NODE_TLS_REJECT_UNAUTHORIZED;
    process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
    try {
      const untrusting = createRelayApi({ userAgent: 'test' });
      await expect(untrusting.claimPairing(url, { pairing_code: relay.mintCode(), gateway_name: 'x' })).rejects.toThrow(
        /Could not reach the Conduit relay/,
      );
      expect(relay.received).toEqual([]);
      const trusting = createRelayApi({ userAgent: 'test', fetch: createRelayFetch({ ca: tls.cert }) });
      const claimed = await trusting.claimPairing(url, { pairing_code: relay.mintCode(), gateway_name: 'x' });
      expect(claimed.installation_id).toBe(relay.installationId);
    } finally {
      if (previous === undefined) delete process.env.NODE_TLS_REJECT_UNAUTHORIZED;
      else process.env.NODE_TLS_REJECT_UNAUTHORIZED = previous;
      await relay.stop();
    }
  });
});
