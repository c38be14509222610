import { BlockList, isIP } from 'node:net';

/**
 * The one loopback rule of this service: which hosts are this machine, and so where a secret may
 * travel over plain HTTP and which callers the hook and MCP endpoints accept. Judged by shape only;
 * names are never resolved (a resolver could answer anything).
 */

const LOOPBACK_ADDRESSES = new BlockList();
LOOPBACK_ADDRESSES.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK_ADDRESSES.addAddress('::1', 'ipv6');

/**
 * `localhost` and every `*.localhost` name (RFC 6761 reserves them for loopback, and browsers never
 * send them to DNS, so a rebinding page cannot use one), 127.0.0.0/8, and `::1` in any spelling.
 * IPv4-mapped IPv6 counts as its IPv4 address, in both spellings: `::ffff:127.0.0.1` is how a
 * dual-stack socket reports an IPv4 loopback peer, and `::ffff:7f00:1` is the same address as the URL
 * parser writes it. Brackets (`[::1]`, as in a URL host) and case are ignored.
 */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  const family = isIP(host);
  if (family === 4) return LOOPBACK_ADDRESSES.check(host, 'ipv4');
  if (family === 6) return LOOPBACK_ADDRESSES.check(host, 'ipv6');
  return false;
}

/**
 * Whether a secret (a gateway credential, an agent token, a bearer key) may be sent to this URL:
 * HTTPS (Node's TLS verifies the certificate against the trusted roots; we never turn that off), or
 * plain HTTP only to this machine. Anything else would put the secret on the network in clear. A URL
 * with userinfo is refused too: it carries a secret of its own and is never one we wrote.
 */
export function mayCarryCredentials(url: URL): boolean {
  if (url.username || url.password) return false;
  if (url.protocol === 'https:') return true;
  return url.protocol === 'http:' && isLoopbackHost(url.hostname);
}

/** `mayCarryCredentials` for a URL as text; false when it is not a URL at all. */
export function isCredentialSafeRelayUrl(raw: string): boolean {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return false;
  }
  return mayCarryCredentials(url);
}
