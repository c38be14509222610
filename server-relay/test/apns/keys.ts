import { generateKeyPairSync } from 'node:crypto';

/** A fresh APNs-style provider key (P-256), as Apple's .p8 files hold it (PKCS#8 PEM). */
export function providerKeyPair(): { privatePem: string; publicPem: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  return {
    privatePem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}

export const TOKEN = 'ab'.repeat(32);
export const OTHER_TOKEN = 'cd'.repeat(32);
export const TOPIC = 'com.example.conduit';
export const KEY_ID = 'KEYID12345';
export const TEAM_ID = 'TEAMID6789';
