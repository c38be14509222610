import net from 'node:net';

/**
 * Where a gateway credential may be sent: HTTPS (Node's TLS verifies the certificate against the
 * trusted roots; we never turn that off), or plain HTTP only to this machine. Anything else would
 * put the credential on the network in clear.
 */
export function isCredentialSafeRelayUrl(raw: string): boolean {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return false;
  }
  if (url.username || url.password) return false;
  if (url.protocol === 'https:') return true;
  if (url.protocol !== 'http:') return false;
  return isLoopbackHost(url.hostname);
}

export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (net.isIPv4(host)) return host.startsWith('127.');
  if (net.isIPv6(host)) return host === '::1' || /^::ffff:127\./.test(host);
  return false;
}

/** The relay URL without a trailing slash, the form every request path is appended to. */
export function normaliseRelayUrl(raw: string): string {
  return raw.trim().replace(/\/+$/, '');
}
