/**
 * RELAY_BASE_URL normalisation. The value names an API origin only; anything else fails closed with
 * an error — a typo must never silently send the Agent Token to the production default.
 */
import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';
import { mayCarryCredentials } from '../kernel/loopback.js';

export class RelayBaseUrlError extends Error {
  override name = 'RelayBaseUrlError';
}

export const PRODUCTION_BASE_URL = 'https://api.relayapp.im';

export interface RelayOrigin {
  /** Normalised origin, e.g. `https://api.relayapp.im` or `http://127.0.0.1:8080`. */
  origin: string;
  /** The WebSocket endpoint: `wss://<host>/v1/websocket` (`ws://` for loopback http). */
  websocketUrl: string;
}

/** Normalises an API origin or throws `RelayBaseUrlError`. */
export function normalizeRelayBaseUrl(raw: string): RelayOrigin {
  const value = raw.trim();
  if (value === '') throw new RelayBaseUrlError('RELAY_BASE_URL is empty');
  if (/\s/.test(value)) throw new RelayBaseUrlError('RELAY_BASE_URL must not contain whitespace');
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new RelayBaseUrlError('RELAY_BASE_URL is not a URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new RelayBaseUrlError('RELAY_BASE_URL must be an https origin');
  }
  if (url.username !== '' || url.password !== '' || /^[a-z]+:\/\/[^/]*@/i.test(value)) {
    throw new RelayBaseUrlError('RELAY_BASE_URL must not contain credentials');
  }
  // The WHATWG parser turns "https://h" into pathname "/"; anything beyond that slash is a path.
  const afterAuthority = value.replace(/^[a-z]+:\/\/[^/?#]*/i, '');
  if (afterAuthority !== '' && afterAuthority !== '/') {
    throw new RelayBaseUrlError('RELAY_BASE_URL must be an origin without path, query or fragment');
  }
  let host = url.hostname.toLowerCase();
  if (host === '') throw new RelayBaseUrlError('RELAY_BASE_URL has no host');
  if (!host.startsWith('[') && isIP(host) === 0) {
    const ascii = domainToASCII(host);
    if (ascii === '') throw new RelayBaseUrlError('RELAY_BASE_URL host is not a valid domain name');
    host = ascii;
  }
  // The Agent Token rides on every request: the shared credential-URL rule decides.
  if (!mayCarryCredentials(url)) {
    throw new RelayBaseUrlError('RELAY_BASE_URL must use https (http is accepted only for loopback development)');
  }
  // URL already drops a default port (443 for https, 80 for http) and compresses IPv6.
  const port = url.port === '' ? '' : `:${url.port}`;
  const origin = `${url.protocol}//${host}${port}`;
  const wsScheme = url.protocol === 'https:' ? 'wss:' : 'ws:';
  return { origin, websocketUrl: `${wsScheme}//${host}${port}/v1/websocket` };
}
