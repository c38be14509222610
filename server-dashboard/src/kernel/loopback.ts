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

/** Private, link-local and Tailscale (CGNAT 100.64.0.0/10, its ULA fd7a:115c:a1e0::/48) ranges. */
const HOME_NETWORK_ADDRESSES = new BlockList();
HOME_NETWORK_ADDRESSES.addSubnet('10.0.0.0', 8, 'ipv4');
HOME_NETWORK_ADDRESSES.addSubnet('172.16.0.0', 12, 'ipv4');
HOME_NETWORK_ADDRESSES.addSubnet('192.168.0.0', 16, 'ipv4');
HOME_NETWORK_ADDRESSES.addSubnet('169.254.0.0', 16, 'ipv4');
HOME_NETWORK_ADDRESSES.addSubnet('100.64.0.0', 10, 'ipv4');
HOME_NETWORK_ADDRESSES.addSubnet('fc00::', 7, 'ipv6');
HOME_NETWORK_ADDRESSES.addSubnet('fe80::', 10, 'ipv6');

/** Name suffixes a home network or a tailnet uses, never a public DNS name. */
const HOME_NETWORK_SUFFIXES = ['.local', '.lan', '.internal', '.home.arpa', '.ts.net'];

/**
 * Whether a host is on this machine or the user's own network, where the seed lets a speech server
 * be reached over plain `ws://`: loopback, private, link-local and Tailscale addresses, and LAN-style
 * names (localhost, single-label names, .local, .lan, .internal, .home.arpa, .ts.net). Judged by
 * shape, never resolved: a guard against mistakes, not a security boundary.
 */
export function isHomeNetworkHost(hostname: string): boolean {
  if (isLoopbackHost(hostname)) return true;
  const host = hostname
    .replace(/^\[|\]$/g, '')
    .toLowerCase()
    .replace(/\.$/, '');
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(host)?.[1];
  const address = mapped ?? host;
  const family = isIP(address);
  if (family === 4) return HOME_NETWORK_ADDRESSES.check(address, 'ipv4');
  if (family === 6) return HOME_NETWORK_ADDRESSES.check(address, 'ipv6');
  if (host === '' || !/^[a-z0-9.-]+$/.test(host)) return false;
  return !host.includes('.') || HOME_NETWORK_SUFFIXES.some((suffix) => host.endsWith(suffix));
}
