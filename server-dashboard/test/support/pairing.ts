import { randomBytes } from 'node:crypto';
import { chmodSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { readCredentials } from '../../src/credentials/credential-store.js';
import { encodeBase64Url } from '../../src/crypto/base64url.js';
import { provisionE2eKey } from '../../src/pairing/e2e-provisioning.js';

export const INSTALLATION_ID = '11111111-2222-4333-8444-555555555555';
export const GATEWAY_ID = '66666666-7777-4888-9999-aaaaaaaaaaaa';
export const CREDENTIAL = `${INSTALLATION_ID}.${GATEWAY_ID}.c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3I`;

/** Writes a paired conduit-push.json as `conduit push pair` leaves it (mode 0600). */
export function writePairing(home: string, relayUrl: string, extra: Record<string, unknown> = {}): void {
  const file = path.join(home, 'conduit-push.json');
  writeFileSync(
    file,
    JSON.stringify({
      credential: CREDENTIAL,
      installation_id: INSTALLATION_ID,
      gateway_id: GATEWAY_ID,
      gateway_name: 'test Hermes',
      relay_url: relayUrl,
      ...extra,
    }) + '\n',
    { mode: 0o600 },
  );
  chmodSync(file, 0o600);
}

/**
 * Gives the paired home `dir` an end-to-end push key (a fresh kid and secret) for its pairing's own
 * installation and gateway, as the phone provisions one. Returns those ids and the secret, which a
 * test holds as the phone does, to open what the host seals.
 */
export async function provisionPushKey(
  dir: string,
): Promise<{ installationId: string; gatewayId: string; secret: Buffer }> {
  const file = await readCredentials(dir);
  const secret = randomBytes(32);
  const provisioned = await provisionE2eKey(
    dir,
    {
      installation_id: file?.installation_id,
      gateway_id: file?.gateway_id,
      kid: randomBytes(16).toString('hex'),
      secret: encodeBase64Url(secret),
    },
    Date.now(),
  );
  expect(provisioned.ok).toBe(true);
  return { installationId: file?.installation_id ?? '', gatewayId: file?.gateway_id ?? '', secret };
}
