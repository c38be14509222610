import { mayCarryCredentials } from '../kernel/loopback.js';

/**
 * The relay URL rules of the seed: credentials travel only over HTTPS with a trusted certificate, plain
 * HTTP only to this machine, and no redirect is ever followed. A pairing claim carries no credential,
 * so it may go over plain HTTP to a LAN or Tailscale address; the relay then answers with its HTTPS
 * PUBLIC_URL, which is what the host saves and uses from then on.
 */

export class RelayUrlError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RelayUrlError';
  }
}

/** A bare `http(s)://host[:port]` URL (a trailing `/` is allowed), normalised without the slash; else null. */
export function parseBareRelayUrl(text: string): URL | null {
  const trimmed = text.trim();
  if (trimmed.length === 0 || trimmed.length > 2048) return null;
  let url: URL;
  try {
    url = new URL(trimmed);
  } catch {
    return null;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return null;
  if (!url.hostname || url.username || url.password || url.search || url.hash) return null;
  if (url.pathname !== '/' && url.pathname !== '') return null;
  // `new URL('https://a?')` keeps an empty query marker that `search` hides; refuse the raw forms too.
  if (/[?#]/.test(trimmed)) return null;
  return url;
}

/** The canonical text of a bare relay URL: origin only, no trailing slash. */
export function relayUrlText(url: URL): string {
  return url.origin;
}

/** The saved relay URL, checked before any credentialed request; throws RelayUrlError when unsafe. */
export function credentialRelayUrl(text: string): URL {
  const url = parseBareRelayUrl(text);
  if (!url) throw new RelayUrlError(`The saved relay address is not a bare http(s) URL; pair again`);
  if (!mayCarryCredentials(url)) {
    throw new RelayUrlError(
      `The push relay must use HTTPS (plain HTTP only to this machine); refusing to send the credential to ${url.origin}`,
    );
  }
  return url;
}
