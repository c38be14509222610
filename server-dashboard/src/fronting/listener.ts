import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import {
  canonicaliseTarget,
  checkBrowserBoundary,
  refusalBody,
  type GuardVerdict,
  type HostPolicy,
} from './request-guard.js';

export interface ListenerBounds {
  /** A request whose headers have not all arrived by then is answered 408 and closed. */
  headersTimeoutMs: number;
  /** The same for the whole request, body included (answers and upgraded sockets are not bounded). */
  requestTimeoutMs: number;
  /** Open connections one peer address may hold; more are closed as they arrive. */
  connectionsPerIp: number;
}

/**
 * The HTTP server every request of this service arrives on. Before anything routes or proxies a
 * request it is brought to its canonical target and checked at the browser boundary
 * (request-guard.ts); slow senders and connection floods are bounded here, per socket, because
 * neither the router nor the proxy can see them.
 */
export function guardedServer(options: {
  policy: HostPolicy;
  bounds: ListenerBounds;
  onRequest: (req: IncomingMessage, res: ServerResponse) => void;
  onUpgrade: (req: IncomingMessage, socket: Duplex, head: Buffer) => void;
}): http.Server {
  const { policy, bounds } = options;
  const server = http.createServer(
    {
      headersTimeout: bounds.headersTimeoutMs,
      requestTimeout: bounds.requestTimeoutMs,
      // How often Node looks for requests past those bounds; its default (30 s) would double them.
      connectionsCheckingInterval: Math.max(10, Math.min(1000, Math.floor(bounds.headersTimeoutMs / 4))),
    },
    (req, res) => {
      const verdict = admit(req, policy);
      if (!verdict.ok) {
        const body = refusalBody(verdict);
        res.writeHead(verdict.status, {
          'content-type': 'application/json; charset=utf-8',
          'content-length': Buffer.byteLength(body),
          'cache-control': 'no-store',
          connection: 'close',
        });
        res.end(body);
        return;
      }
      options.onRequest(req, res);
    },
  );
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const verdict = admit(req, policy);
    if (!verdict.ok) {
      const body = refusalBody(verdict);
      socket.end(
        `HTTP/1.1 ${verdict.status} ${http.STATUS_CODES[verdict.status]}\r\ncontent-type: application/json\r\n` +
          `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
      );
      return;
    }
    options.onUpgrade(req, socket, head);
  });
  const open = new Map<string, number>();
  server.on('connection', (socket) => {
    const peer = socket.remoteAddress ?? 'unknown';
    const count = (open.get(peer) ?? 0) + 1;
    if (count > bounds.connectionsPerIp) {
      socket.destroy();
      return;
    }
    open.set(peer, count);
    socket.once('close', () => {
      const left = (open.get(peer) ?? 1) - 1;
      if (left <= 0) open.delete(peer);
      else open.set(peer, left);
    });
  });
  return server;
}

function admit(req: IncomingMessage, policy: HostPolicy): GuardVerdict {
  const target = canonicaliseTarget(req);
  return target.ok ? checkBrowserBoundary(req, policy) : target;
}
