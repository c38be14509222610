import { hash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Credentials as the Conduit app and host plugins send them. Secrets are 32 random bytes base64url;
 * the relay keeps only their sha256 hex and compares in constant time.
 */

const DEVICE = /^Bearer\s+([0-9a-f-]+)\.([A-Za-z0-9_-]+)$/i;
const GATEWAY = /^Bearer\s+([0-9a-f-]+)\.([0-9a-f-]+)\.([A-Za-z0-9_-]+)$/i;
const SHA256_HEX = /^[0-9a-f]{64}$/;

export interface DeviceCredential {
  installationId: string;
  secret: string;
}

export interface GatewayCredential {
  installationId: string;
  gatewayId: string;
  secret: string;
}

export function parseDeviceAuthorization(header: string | undefined): DeviceCredential | null {
  const match = header === undefined ? null : DEVICE.exec(header);
  if (!match?.[1] || !match[2]) return null;
  return { installationId: match[1], secret: match[2] };
}

export function parseGatewayAuthorization(header: string | undefined): GatewayCredential | null {
  const match = header === undefined ? null : GATEWAY.exec(header);
  if (!match?.[1] || !match[2] || !match[3]) return null;
  return { installationId: match[1], gatewayId: match[2], secret: match[3] };
}

export function newSecret(): string {
  return randomBytes(32).toString('base64url');
}

export function sha256Hex(value: string): string {
  // One-shot: no Hash object per call (every authenticated request hashes its secret).
  return hash('sha256', value, 'hex');
}

/** Constant-time check of a presented secret against a stored hash; a malformed stored hash never matches. */
export function secretMatches(secret: string, storedHash: string): boolean {
  if (!SHA256_HEX.test(storedHash)) return false;
  // The digest's bytes against the stored ones: no hex text in between.
  return timingSafeEqual(hash('sha256', secret, 'buffer'), Buffer.from(storedHash, 'hex'));
}
