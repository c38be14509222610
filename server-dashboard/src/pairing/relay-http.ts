import http from 'node:http';
import https from 'node:https';

/**
 * A `fetch` for talking to the relay that enforces the seed's transport rules whatever the process
 * environment says: TLS certificates are always verified (`rejectUnauthorized: true` overrides
 * NODE_TLS_REJECT_UNAUTHORIZED=0), redirects are never followed (a 3xx comes back as the answer), and
 * answers are capped in size. It has the fetch signature so the generated openapi-fetch relay client
 * can use it (`createRelayClient({ baseUrl, fetch: relayFetch })`).
 */
export interface RelayFetchOptions {
  /** Whole-request timeout. */
  timeoutMs?: number;
  /** Largest answer body accepted. */
  maxResponseBytes?: number;
  /** Extra trusted CAs (tests; production uses the system store plus NODE_EXTRA_CA_CERTS). */
  ca?: string | Buffer;
}

export class RelayTransportError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RelayTransportError';
  }
}

const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);

export function createRelayFetch(options: RelayFetchOptions = {}): typeof fetch {
  const timeoutMs = options.timeoutMs ?? 15_000;
  const maxBytes = options.maxResponseBytes ?? 256 * 1024;
  return async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init);
    const url = new URL(request.url);
    const body = request.body ? Buffer.from(await request.arrayBuffer()) : undefined;
    const headers: Record<string, string> = {};
    request.headers.forEach((value, name) => (headers[name] = value));
    if (body) headers['content-length'] = String(body.length);
    const transport = url.protocol === 'https:' ? https : url.protocol === 'http:' ? http : null;
    if (!transport) throw new RelayTransportError(`unsupported relay scheme ${url.protocol}`);

    return new Promise<Response>((resolve, reject) => {
      const outgoing = transport.request(
        url,
        {
          method: request.method,
          headers,
          timeout: timeoutMs,
          ...(url.protocol === 'https:' ? { rejectUnauthorized: true, ...(options.ca ? { ca: options.ca } : {}) } : {}),
        },
        (incoming) => {
          const chunks: Buffer[] = [];
          let size = 0;
          incoming.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > maxBytes) {
              incoming.destroy();
              reject(new RelayTransportError('the relay answer is too large'));
              return;
            }
            chunks.push(chunk);
          });
          incoming.on('error', (error) => reject(new RelayTransportError(error.message)));
          incoming.on('end', () => {
            const status = incoming.statusCode ?? 502;
            const responseHeaders = new Headers();
            for (const [name, value] of Object.entries(incoming.headers)) {
              if (typeof value === 'string') responseHeaders.set(name, value);
              else if (Array.isArray(value)) for (const item of value) responseHeaders.append(name, item);
            }
            resolve(
              new Response(NULL_BODY_STATUSES.has(status) ? null : Buffer.concat(chunks), {
                status,
                headers: responseHeaders,
              }),
            );
          });
        },
      );
      const deadline = setTimeout(() => outgoing.destroy(new Error('timed out')), timeoutMs);
      outgoing.on('close', () => clearTimeout(deadline));
      outgoing.on('timeout', () => outgoing.destroy(new Error('timed out')));
      outgoing.on('error', (error) => reject(new RelayTransportError(error.message)));
      request.signal.addEventListener('abort', () => outgoing.destroy(new Error('aborted')));
      outgoing.end(body);
    });
  };
}
