import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';

/**
 * How often Node looks for requests past their headers/request timeout. Node's default (30 s) would
 * let a 30 s bound hold a socket for up to a minute; a scan of the open connections once a second
 * costs nothing next to that, and a shorter bound (tests) is checked at a quarter of its length.
 */
export function connectionsCheckingIntervalMs(requestTimeoutMs: number): number {
  return Math.max(1, Math.min(1_000, Math.floor(requestTimeoutMs / 4)));
}

/**
 * Node's own options for the request bound (Fastify passes them to http.createServer): headers and
 * body within `requestTimeoutMs` of the request's first byte, then 408 and close. Once a request has
 * fully arrived these stop applying, so a long-poll may be held as long as its route wants.
 */
export function requestTimeoutOptions(requestTimeoutMs: number) {
  return {
    headersTimeout: requestTimeoutMs,
    requestTimeout: requestTimeoutMs,
    connectionsCheckingInterval: connectionsCheckingIntervalMs(requestTimeoutMs),
  };
}

/**
 * What Node's request timeouts do not cover, on the listening server:
 * - A connection that has not sent a byte is in no request yet, so Node's headers timeout never
 *   starts for it: it gets an inactivity timeout of the same length until its first request arrives
 *   (then the request's own bounds, the route's hold and the keep-alive timeout take over; an
 *   upgraded socket's idle rule is the audio bridge's).
 * - `maxConnectionsPerIp` (undefined: not bounded) open connections per peer address; one more is
 *   destroyed as it is accepted, before anything is read from it.
 */
export function guardConnections(
  server: Server,
  options: { requestTimeoutMs: number; maxConnectionsPerIp: number | undefined },
): void {
  const openByAddress = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const { maxConnectionsPerIp } = options;
    if (maxConnectionsPerIp !== undefined) {
      const address = socket.remoteAddress ?? 'unknown';
      const open = (openByAddress.get(address) ?? 0) + 1;
      if (open > maxConnectionsPerIp) {
        socket.destroy();
        return;
      }
      openByAddress.set(address, open);
      socket.once('close', () => {
        const left = (openByAddress.get(address) ?? 1) - 1;
        if (left > 0) openByAddress.set(address, left);
        else openByAddress.delete(address);
      });
    }
    // Node's connection listener ran first and destroys the socket on 'timeout' when no request is
    // in progress, which is exactly the silent connection this bounds.
    socket.setTimeout(options.requestTimeoutMs);
  });
  server.on('request', (request: { socket: Socket }) => request.socket.setTimeout(0));
  server.on('upgrade', (_request: unknown, socket: Duplex) => (socket as Socket).setTimeout(0));
}

/**
 * Fastify's clientErrorHandler: errors Node raises before a request reaches the router (a timeout, a
 * header block over Node's limit, unparsable HTTP) answered in the relay's own `{"error": code}`
 * shape, then the socket is closed.
 */
export function answerClientError(error: Error & { code?: string }, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, reason, code] =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, 'Request Timeout', 'request_timeout']
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'Request Header Fields Too Large', 'headers_too_large']
        : [400, 'Bad Request', 'bad_request'];
  const body = JSON.stringify({ error: code });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}
