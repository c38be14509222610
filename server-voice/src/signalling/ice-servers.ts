/** ICE server configuration (CONTRACT.md §1): at most 8 entries, STUN/TURN URLs only, no unknown keys. */
export interface IceServer {
  urls: string | string[];
  username?: string;
  credential?: string;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

const MAX_SERVERS = 8;
const MAX_URLS = 8;
const MAX_URL_CHARS = 2048;
const MAX_SECRET_CHARS = 1024;
const ICE_URL = /^(stun|stuns|turn|turns):/i;

function validUrl(url: unknown): url is string {
  return typeof url === 'string' && url.length > 0 && url.length <= MAX_URL_CHARS && ICE_URL.test(url);
}

/** Validates a decoded `ice_servers` value; the error never repeats a credential. */
export function parseIceServers(value: unknown): Parsed<IceServer[]> {
  if (!Array.isArray(value)) return { ok: false, error: 'must be a JSON array' };
  if (value.length > MAX_SERVERS) return { ok: false, error: `at most ${MAX_SERVERS} ICE servers` };
  const servers: IceServer[] = [];
  for (const [index, entry] of value.entries()) {
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry))
      return { ok: false, error: `entry ${index} must be an object` };
    const record = entry as Record<string, unknown>;
    const unknown = Object.keys(record).find((key) => !['urls', 'username', 'credential'].includes(key));
    if (unknown) return { ok: false, error: `entry ${index} has an unknown key ${JSON.stringify(unknown)}` };
    const urls = record.urls;
    const urlsOk = Array.isArray(urls)
      ? urls.length > 0 && urls.length <= MAX_URLS && urls.every(validUrl)
      : validUrl(urls);
    if (!urlsOk)
      return {
        ok: false,
        error: `entry ${index} urls must be one or up to ${MAX_URLS} stun:/stuns:/turn:/turns: URLs of at most ${MAX_URL_CHARS} characters`,
      };
    const server: IceServer = { urls: urls as string | string[] };
    for (const key of ['username', 'credential'] as const) {
      const field = record[key];
      if (field === undefined) continue;
      if (typeof field !== 'string' || field.length > MAX_SECRET_CHARS)
        return { ok: false, error: `entry ${index} ${key} must be a string of at most ${MAX_SECRET_CHARS} characters` };
      server[key] = field;
    }
    servers.push(server);
  }
  return { ok: true, value: servers };
}
