import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';

/** Hop-by-hop headers (RFC 9110 §7.6.1) are about one connection and are not forwarded. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

function forwardHeaders(req: IncomingMessage, upstream: URL, keepUpgrade: boolean): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || (!keepUpgrade && HOP_BY_HOP.has(name))) continue;
    out[name] = value;
  }
  // The dashboard guards its Host header against DNS rebinding; it sees its own address, and the
  // original one travels in X-Forwarded-Host.
  out['x-forwarded-host'] = req.headers.host ?? '';
  out['x-forwarded-for'] = req.socket.remoteAddress ?? '';
  out['x-forwarded-proto'] = 'encrypted' in req.socket && req.socket.encrypted ? 'https' : 'http';
  out.host = upstream.host;
  return out;
}

/** Answers a proxied request may be read back from; larger ones are passed on unread. */
const READ_ANSWER_LIMIT_BYTES = 4096;

/**
 * Forwards one HTTP request to the Hermes dashboard and streams the answer back: bodies flow
 * through in both directions as they arrive (pipe with backpressure), nothing is buffered whole.
 * `readAnswer`, when given, also sees a copy of a small answer (at most 4 KiB) once it has ended.
 */
export function proxyHttp(
  req: IncomingMessage,
  res: ServerResponse,
  upstream: URL,
  readAnswer?: (status: number, body: Buffer) => void,
): void {
  const upstreamReq = http.request({
    hostname: upstream.hostname,
    port: upstream.port || 80,
    method: req.method,
    path: req.url ?? '/',
    headers: forwardHeaders(req, upstream, false),
  });
  upstreamReq.on('response', (upstreamRes) => {
    const headers: http.OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(upstreamRes.headers)) {
      if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
    }
    res.writeHead(upstreamRes.statusCode ?? 502, upstreamRes.statusMessage, headers);
    if (readAnswer) {
      const chunks: Buffer[] = [];
      let size = 0;
      upstreamRes.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size <= READ_ANSWER_LIMIT_BYTES) chunks.push(chunk);
      });
      upstreamRes.on('end', () => {
        if (size > READ_ANSWER_LIMIT_BYTES) return;
        try {
          readAnswer(upstreamRes.statusCode ?? 0, Buffer.concat(chunks));
        } catch {
          // reading never stands in the way of the answer
        }
      });
    }
    upstreamRes.pipe(res);
    upstreamRes.on('error', () => res.destroy());
  });
  upstreamReq.on('error', () => {
    if (!res.headersSent) {
      res.writeHead(502, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end(JSON.stringify({ error: 'dashboard_unreachable' }));
    } else {
      res.destroy();
    }
  });
  req.on('aborted', () => upstreamReq.destroy());
  res.on('close', () => {
    if (!res.writableFinished) upstreamReq.destroy();
  });
  req.pipe(upstreamReq);
}

/** A read-only view of a proxied socket's bytes: what the client sends, what the server sends, its end. */
export interface SocketTap {
  fromClient?(chunk: Buffer): void;
  fromServer?(chunk: Buffer): void;
  closed?(): void;
}

/**
 * Forwards a WebSocket (or any Upgrade) handshake to the dashboard; after its 101 the two sockets
 * are joined byte for byte, so frames, close codes and subprotocols pass unchanged.
 */
export function proxyUpgrade(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  upstream: URL,
  /** Given the upgrade and the dashboard's 101 headers, a tap that reads the joined sockets (or null). */
  observe?: (req: IncomingMessage, responseHeaders: http.IncomingHttpHeaders) => SocketTap | null,
): void {
  const upstreamReq = http.request({
    hostname: upstream.hostname,
    port: upstream.port || 80,
    method: req.method,
    path: req.url ?? '/',
    headers: forwardHeaders(req, upstream, true),
  });
  upstreamReq.on('upgrade', (upstreamRes, upstreamSocket, upstreamHead) => {
    const lines = [`HTTP/1.1 ${upstreamRes.statusCode ?? 101} ${upstreamRes.statusMessage ?? 'Switching Protocols'}`];
    for (let i = 0; i < upstreamRes.rawHeaders.length; i += 2) {
      lines.push(`${upstreamRes.rawHeaders[i]}: ${upstreamRes.rawHeaders[i + 1]}`);
    }
    socket.write(lines.join('\r\n') + '\r\n\r\n');
    if (upstreamHead.length) socket.write(upstreamHead);
    if (head.length) upstreamSocket.write(head);
    let tap: SocketTap | null = null;
    try {
      tap = observe?.(req, upstreamRes.headers) ?? null;
    } catch {
      tap = null; // observing never stands in the way of the socket
    }
    if (tap) {
      const view = tap;
      // The tap only reads; its failure leaves the forwarded bytes as they are.
      const guard = (read: ((chunk: Buffer) => void) | undefined) => (chunk: Buffer) => {
        try {
          read?.call(view, chunk);
        } catch {
          // ignored on purpose
        }
      };
      const fromClient = guard(view.fromClient);
      const fromServer = guard(view.fromServer);
      if (upstreamHead.length) fromServer(upstreamHead);
      if (head.length) fromClient(head);
      if (view.fromClient) socket.on('data', fromClient);
      if (view.fromServer) upstreamSocket.on('data', fromServer);
      socket.once('close', () => {
        try {
          view.closed?.();
        } catch {
          // ignored on purpose
        }
      });
    }
    upstreamSocket.pipe(socket);
    socket.pipe(upstreamSocket);
    upstreamSocket.on('error', () => socket.destroy());
    socket.on('error', () => upstreamSocket.destroy());
    upstreamSocket.on('close', () => socket.destroy());
    socket.on('close', () => upstreamSocket.destroy());
  });
  upstreamReq.on('response', (upstreamRes) => {
    // The dashboard refused the upgrade (401, 403, 404…): pass its answer on and close.
    const lines = [`HTTP/1.1 ${upstreamRes.statusCode ?? 502} ${upstreamRes.statusMessage ?? ''}`];
    for (let i = 0; i < upstreamRes.rawHeaders.length; i += 2) {
      const name = upstreamRes.rawHeaders[i] ?? '';
      if (HOP_BY_HOP.has(name.toLowerCase())) continue;
      lines.push(`${name}: ${upstreamRes.rawHeaders[i + 1]}`);
    }
    lines.push('connection: close');
    socket.write(lines.join('\r\n') + '\r\n\r\n');
    upstreamRes.pipe(socket);
  });
  upstreamReq.on('error', () => {
    socket.end('HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
  });
  socket.on('error', () => upstreamReq.destroy());
  upstreamReq.end();
}
