import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';

/**
 * The address per-IP limits count. Without a trusted proxy (hops 0) it is the socket's peer. Behind
 * `hops` trusted proxies it is the X-Forwarded-For entry the outermost of them appended: each proxy
 * appends the address it received the request from, so that entry is the `hops`-th from the right.
 * Everything to its left was written by the client and can say anything; the first entry, which the
 * reference trusts, is exactly the one an attacker picks to dodge its per-address windows.
 *
 * A header shorter than `hops` means the request reached us through fewer proxies than configured;
 * its leftmost entry was still appended by one of ours, so that is the address counted. A chosen
 * entry that is not an IP address (a port, a name, garbage) falls back to the socket's peer.
 */
export function clientAddress(request: IncomingMessage, trustedProxyHops: number): string {
  const peer = request.socket.remoteAddress ?? 'unknown';
  if (trustedProxyHops === 0) return peer;
  // Node joins repeated X-Forwarded-For headers with ", "; an array (never seen) is joined the same way.
  const header = request.headers['x-forwarded-for'] ?? '';
  const entries = (Array.isArray(header) ? header.join(',') : header)
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  const counted = entries[entries.length - trustedProxyHops] ?? entries[0];
  return counted !== undefined && isIP(counted) !== 0 ? counted : peer;
}
