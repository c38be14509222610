import { isHomeNetworkHost } from '../../kernel/loopback.js';

/** The path a bare host gets: where OpenAI-Realtime servers (speech-to-speech among them) listen. */
const DEFAULT_PATH = '/v1/realtime';

const SOCKET_SCHEMES: Readonly<Record<string, string>> = {
  'ws:': 'ws:',
  'wss:': 'wss:',
  'http:': 'ws:',
  'https:': 'wss:',
};

/** The socket address to dial, or why the configured one is not usable (the 4503 reason). */
export type SpeechServerAddress = { ok: true; url: string } | { ok: false; reason: string };

/**
 * `voice.speech_server.url` as the seed reads it: ws(s):// or http(s):// (http becomes ws), a host
 * without a scheme is ws://, and one without a path gets /v1/realtime. Plain ws:// only reaches this
 * machine or the user's own network (kernel/loopback.ts); a public host needs wss://. A URL with
 * credentials in it is refused: the key belongs in `api_key`, which is sent as a header.
 */
export function speechServerAddress(configured: string): SpeechServerAddress {
  const raw = /^[a-z][a-z0-9+.-]*:\/\//i.test(configured) ? configured : `ws://${configured}`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: 'The speech server URL is not a URL' };
  }
  const scheme = SOCKET_SCHEMES[url.protocol];
  if (!scheme) return { ok: false, reason: 'The speech server URL must be ws://, wss://, http:// or https://' };
  if (url.username || url.password) {
    return { ok: false, reason: 'Put the speech server key in voice.speech_server.api_key, not in the URL' };
  }
  url.protocol = scheme;
  if (scheme === 'ws:' && !isHomeNetworkHost(url.hostname)) {
    return { ok: false, reason: 'A speech server on a public host needs wss://' };
  }
  if (url.pathname === '' || url.pathname === '/') url.pathname = DEFAULT_PATH;
  url.hash = '';
  return { ok: true, url: url.href };
}
