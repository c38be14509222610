import { ServerResponse, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import WebSocket, { WebSocketServer } from 'ws';
import { closeSocket } from './socket-relay.js';

/**
 * The dashboard's server reads a whole frame before the plugin sees it (uvicorn's `ws_max_size`,
 * 16 MiB by default); the same bound here keeps one frame's memory finite, and each route checks its
 * own smaller bound on what it reads (the seed, Grok Live).
 */
const CLIENT_FRAME_READ_LIMIT_BYTES = 16 * 1024 * 1024;

/** Upgrades the router has matched but no route has accepted yet. */
const pendingUpgrades = new WeakMap<IncomingMessage, { socket: Duplex; head: Buffer }>();

const acceptor = new WebSocketServer({
  noServer: true,
  maxPayload: CLIENT_FRAME_READ_LIMIT_BYTES,
  perMessageDeflate: false,
  // Each feature counts its own open calls (kernel/open-calls.ts); no second set of every socket.
  clientTracking: false,
});

/**
 * Hands a WebSocket upgrade to the Fastify router as an ordinary GET, so the route it matches runs
 * its scope's `onRequest` hooks — the caller check among them — before anything is accepted. A hook
 * that refuses answers plain HTTP on the socket; only a socket route accepts the upgrade.
 */
export function routeUpgrade(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
): void {
  pendingUpgrades.set(req, { socket, head });
  const res = new ServerResponse(req);
  res.assignSocket(socket as Socket);
  // An upgrade answered over HTTP (refused, 404, 426) ends its connection: nothing else may follow on it.
  res.once('finish', () => socket.end());
  handler(req, res);
}

/** Whether this request is an upgrade the router handed over (not yet accepted). */
export function isPendingUpgrade(request: FastifyRequest): boolean {
  return pendingUpgrades.has(request.raw);
}

/** Route config that marks a socket route, read by the caller check to ask for the WebSocket credential. */
export interface SocketRouteConfig {
  socket: true;
}

/** Whether the matched route is a socket route. */
export function isSocketRoute(request: FastifyRequest): boolean {
  return (request.routeOptions.config as Partial<SocketRouteConfig>).socket === true;
}

/**
 * Accepts the upgrade of this request (the 101) and resolves with its socket, paused (a relay resumes
 * it), or with null when the handshake itself was invalid (`ws` has then answered 400 and closed).
 */
export function acceptUpgrade(request: FastifyRequest, reply: FastifyReply): Promise<WebSocket | null> {
  const upgrade = pendingUpgrades.get(request.raw);
  pendingUpgrades.delete(request.raw);
  void reply.hijack();
  if (!upgrade) return Promise.resolve(null);
  return new Promise((resolve) => {
    upgrade.socket.once('close', () => resolve(null));
    acceptor.handleUpgrade(request.raw, upgrade.socket, upgrade.head, (socket) => {
      // Not read until a route is ready for its frames: the checks before a relay starts are async,
      // and a frame emitted with no listener yet would be lost.
      socket.pause();
      resolve(socket);
    });
  });
}

/** Accepts the upgrade only to close it at once with a code and reason the client shows. */
export async function acceptThenClose(
  request: FastifyRequest,
  reply: FastifyReply,
  code: number,
  reason: string,
): Promise<void> {
  const socket = await acceptUpgrade(request, reply);
  if (socket) closeSocket(socket, code, reason);
}

/**
 * Registers a WebSocket route: `GET path` whose handler gets the request once the caller check of
 * the scope has passed, and accepts the upgrade itself (after its own checks, which close with a
 * code). A plain GET on it answers 426, as a WebSocket-only route has nothing to say over HTTP.
 */
export function socketRoute(
  scope: FastifyInstance,
  path: string,
  handler: (request: FastifyRequest, reply: FastifyReply) => Promise<void>,
): void {
  const config: SocketRouteConfig = { socket: true };
  scope.get(path, { config }, async (request, reply) => {
    if (!isPendingUpgrade(request)) {
      return reply
        .status(426)
        .header('cache-control', 'no-store')
        .header('upgrade', 'websocket')
        .send({ detail: 'Open this route as a WebSocket' });
    }
    await handler(request, reply);
    return reply;
  });
}

export { WebSocket };
