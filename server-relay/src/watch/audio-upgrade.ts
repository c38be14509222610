import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { watchIdPattern } from '@conduit/contracts/relay/watch-tools';
import { SHARED_STATE_UNAVAILABLE_BODY, SharedStateUnavailable } from '../cluster/shared-state-unavailable.js';
import type { WatchDeps } from './deps.js';
import type { GrantView, WatchGrants } from './grant-service.js';
import { authorizationOf, watchKeyHash } from './request-input.js';

/** Per-key limits of the audio upgrades, per 60 s (API.md routes 21–22). */
export const WATCH_AUDIO_LIMITS = { hostPerGrant: 30, watchPerIp: 60, watchPerGrant: 30 } as const;

const WS_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
const AUDIO_PATH = /^\/v1\/watch-audio\/([^/]*)\/(host|watch)$/;
const WS_KEY = /^[A-Za-z0-9+/]{22}==$/;

/** A refusal before the 101, answered as JSON like every other relay error. */
class UpgradeRefusal {
  constructor(
    readonly status: number,
    readonly body: Record<string, unknown> | undefined,
  ) {}
}

/** A refusal as thrown, 503 when the replicas' shared store is down, anything else 500. */
function refusalFor(error: unknown): UpgradeRefusal {
  if (error instanceof UpgradeRefusal) return error;
  if (error instanceof SharedStateUnavailable) return new UpgradeRefusal(503, { ...SHARED_STATE_UNAVAILABLE_BODY });
  return new UpgradeRefusal(500, { error: 'internal_error' });
}

const refuse = (status: number, error: string, extra: Record<string, unknown> = {}): UpgradeRefusal =>
  new UpgradeRefusal(status, { error, ...extra });

/**
 * Handles the HTTP server's `upgrade` event: the two audio endpoints, with every check and its
 * status answered before the 101 (API.md §1 routes 21–22, in the reference's order); any other
 * upgrade path gets `HTTP/1.1 404 Not Found` and the connection closes.
 */
export function audioUpgradeHandler(
  deps: WatchDeps,
  grants: WatchGrants,
): (request: IncomingMessage, socket: Duplex, head: Buffer) => void {
  return (request, socket, head) => {
    // A reset during the async checks must not become an uncaught error.
    socket.on('error', () => socket.destroy());
    const path = (request.url ?? '').split('?')[0] ?? '';
    const match = AUDIO_PATH.exec(path);
    const gid = match?.[1];
    const side = match?.[2];
    if (!gid || !side || !watchIdPattern.test(gid)) {
      answer(socket, new UpgradeRefusal(404, undefined));
      return;
    }
    const accept = async (): Promise<void> => {
      if (side === 'host') {
        const grant = await checkHost(deps, grants, request, gid);
        if (socket.destroyed) return;
        switchProtocols(socket, request);
        await grants.attachAudio(grant.id, 'host', socket, head);
      } else {
        const grant = await checkWatch(deps, grants, request, gid);
        if (socket.destroyed) return;
        switchProtocols(socket, request);
        await grants.attachAudio(grant.id, 'watch', socket, head);
      }
    };
    accept().catch((error: unknown) => {
      // After the 101 there is no HTTP answer to give: the connection just ends.
      if (switched.has(socket)) socket.destroy();
      else answer(socket, refusalFor(error));
    });
  };
}

async function checkHost(
  deps: WatchDeps,
  grants: WatchGrants,
  request: IncomingMessage,
  gid: string,
): Promise<GrantView> {
  checkUpgradeHeaders(request);
  const gateway = await deps.authenticateGateway(authorizationOf(request.headers));
  if (!gateway) throw refuse(401, 'unauthorized');
  if (!(await deps.rateLimit.hit(`watch-audio-host:${gid}`, WATCH_AUDIO_LIMITS.hostPerGrant)))
    throw refuse(429, 'rate_limited');
  const grant = await grants.findOwned(gid, gateway);
  if (!grant) throw refuse(410, 'grant_closed', { reason: 'expired' });
  if (grant.closedReason !== undefined) throw refuse(410, 'grant_closed', { reason: grant.closedReason });
  if (!grant.audio) throw refuse(403, 'audio_not_granted');
  if (!(await grants.hasAudioCapacity(grant.id))) throw refuse(503, 'watch_audio_capacity');
  return grant;
}

async function checkWatch(
  deps: WatchDeps,
  grants: WatchGrants,
  request: IncomingMessage,
  gid: string,
): Promise<GrantView> {
  // Per-IP before anything else, so key guessing is throttled before it learns anything.
  if (!(await deps.rateLimit.hit(`watch-audio-ip:${deps.clientIp(request)}`, WATCH_AUDIO_LIMITS.watchPerIp))) {
    throw refuse(429, 'rate_limited');
  }
  checkUpgradeHeaders(request);
  const keyHash = watchKeyHash(authorizationOf(request.headers));
  const grant = keyHash ? await grants.findByKey(gid, keyHash) : undefined;
  if (!grant) throw refuse(401, 'unauthorized');
  if (!(await deps.rateLimit.hit(`watch-audio-watch:${gid}`, WATCH_AUDIO_LIMITS.watchPerGrant)))
    throw refuse(429, 'rate_limited');
  if (grant.closedReason !== undefined) throw refuse(410, 'grant_closed', { reason: grant.closedReason });
  if (!grant.audio) throw refuse(403, 'audio_not_granted');
  return grant;
}

function checkUpgradeHeaders(request: IncomingMessage): void {
  const upgrade = request.headers.upgrade?.toLowerCase();
  const version = request.headers['sec-websocket-version'];
  const key = request.headers['sec-websocket-key'];
  if (
    request.method !== 'GET' ||
    upgrade !== 'websocket' ||
    version !== '13' ||
    typeof key !== 'string' ||
    !WS_KEY.test(key)
  ) {
    throw refuse(400, 'bad_upgrade');
  }
}

/** Sockets answered 101: an error after it cannot be answered in HTTP. */
const switched = new WeakSet<Duplex>();

function switchProtocols(socket: Duplex, request: IncomingMessage): void {
  switched.add(socket);
  const key = String(request.headers['sec-websocket-key']);
  const acceptKey = createHash('sha1')
    .update(key + WS_GUID)
    .digest('base64');
  socket.write(
    'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
      `Sec-WebSocket-Accept: ${acceptKey}\r\n\r\n`,
  );
}

/** Writes a complete HTTP/1.1 answer and closes the connection. */
function answer(socket: Duplex, refusal: UpgradeRefusal): void {
  if (socket.destroyed) return;
  const body = refusal.body ? JSON.stringify(refusal.body) : '';
  const headers = refusal.body
    ? 'Content-Type: application/json; charset=utf-8\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n'
    : '';
  socket.end(
    `HTTP/1.1 ${refusal.status} ${STATUS_CODES[refusal.status] ?? ''}\r\n${headers}` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
