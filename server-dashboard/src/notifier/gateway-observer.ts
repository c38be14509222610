import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { SocketTap } from '../fronting/proxy.js';
import { appSourceOf, header, promptOf, type AppSubmissions } from './app-submissions.js';
import type { DesktopSelectionPublisher } from './desktop-selection.js';
import { FrameReader } from './gateway-frames.js';
import { setBounded } from '../bounded-map.js';

/** The dashboard's gateway socket, where Conduit, Desktop and the web dashboard send their turns. */
export const GATEWAY_SOCKET_PATH = '/api/ws';
/** Requests awaiting their answer, and live handles remembered, per socket. */
const MAX_PENDING = 64;
const MAX_HANDLES = 256;

type Rpc = { id?: unknown; method?: unknown; params?: unknown; result?: unknown };

function rpcOf(message: string): Rpc | null {
  try {
    const parsed: unknown = JSON.parse(message);
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Rpc) : null;
  } catch {
    return null;
  }
}

function field(value: unknown, name: string): string | undefined {
  if (!value || typeof value !== 'object') return undefined;
  const found = (value as Record<string, unknown>)[name];
  return typeof found === 'string' && found.trim() ? found.trim() : undefined;
}

/**
 * Which chat one Desktop socket has selected, from the gateway's own JSON-RPC: `session.resume` names
 * the stored chat it opens (its answer names the live handle); `session.create` answers with both;
 * `session.activate` switches to a live handle this socket learnt from those answers.
 */
class DesktopSocketWatch {
  private readonly pending = new Map<string, { stored?: string; profile?: string }>();
  private readonly stored = new Map<string, { stored: string; profile?: string }>();

  constructor(
    private readonly socket: number,
    private readonly publisher: DesktopSelectionPublisher,
    private readonly homeOf: (profile: string | undefined) => string | null,
    /** The profile the socket itself was opened for (`?profile=`), for requests that name none. */
    private readonly socketProfile: string | undefined,
  ) {}

  private select(stored: string, profile: string | undefined): void {
    const home = this.homeOf(profile);
    if (home) this.publisher.select(this.socket, home, stored);
  }

  fromClient(rpc: Rpc): void {
    const profile = field(rpc.params, 'profile') ?? this.socketProfile;
    const sessionId = field(rpc.params, 'session_id');
    const id = typeof rpc.id === 'string' || typeof rpc.id === 'number' ? String(rpc.id) : undefined;
    if (rpc.method === 'session.resume' && sessionId) {
      this.select(sessionId, profile); // the stored id (or exact title) of the chat it opens
      if (id) setBounded(this.pending, id, { stored: sessionId, ...(profile ? { profile } : {}) }, MAX_PENDING);
    } else if (rpc.method === 'session.create' && id) {
      setBounded(this.pending, id, profile ? { profile } : {}, MAX_PENDING);
    } else if (rpc.method === 'session.activate' && sessionId) {
      const known = this.stored.get(sessionId);
      if (known) this.select(known.stored, known.profile);
    }
  }

  fromServer(rpc: Rpc): void {
    if (rpc.id === undefined || rpc.result === undefined) return;
    const request = this.pending.get(String(rpc.id));
    if (!request) return;
    this.pending.delete(String(rpc.id));
    const live = field(rpc.result, 'session_id');
    const stored = request.stored ?? field(rpc.result, 'stored_session_id');
    if (!live || !stored) return;
    setBounded(this.stored, live, { stored, ...(request.profile ? { profile: request.profile } : {}) }, MAX_HANDLES);
    if (!request.stored) this.select(stored, request.profile); // a new chat is the one now open
  }
}

/**
 * The proxy's observer for gateway sockets. For a socket from an app it returns a read-only tap: the
 * prompts it sends are recorded (to place their turns' replies), and for a Desktop socket the chat it
 * has selected is published (the two-minute rule). Any other upgrade is not observed.
 */
export function gatewayObserver(options: {
  submissions: AppSubmissions;
  selection: DesktopSelectionPublisher;
  homeOf(profile: string | undefined): string | null;
}) {
  let sockets = 0;
  return (req: IncomingMessage, responseHeaders: IncomingHttpHeaders): SocketTap | null => {
    const pathname = (req.url ?? '/').split('?')[0];
    if (pathname !== GATEWAY_SOCKET_PATH) return null;
    const source = appSourceOf(req.headers);
    if (!source) return null;
    const deflate = header(responseHeaders, 'sec-websocket-extensions').includes('permessage-deflate');
    const socketProfile = new URL(req.url ?? '/', 'http://gateway').searchParams.get('profile')?.trim() || undefined;
    const socket = ++sockets;
    const watch =
      source === 'desktop' ? new DesktopSocketWatch(socket, options.selection, options.homeOf, socketProfile) : null;
    const client = new FrameReader(
      (message) => {
        const prompt = promptOf(message);
        if (prompt) options.submissions.record(prompt.profile ?? socketProfile ?? null, source, prompt.text);
        else if (watch && message.includes('session.')) {
          const rpc = rpcOf(message);
          if (rpc) watch.fromClient(rpc);
        }
      },
      { deflate, fromClient: true },
    );
    const server = watch
      ? new FrameReader(
          (message) => {
            // Only answers matter; the streamed events are never parsed.
            if (!message.includes('"result"')) return;
            const rpc = rpcOf(message);
            if (rpc) watch.fromServer(rpc);
          },
          { deflate, fromClient: false },
        )
      : null;
    return {
      fromClient: (chunk) => client.push(chunk),
      ...(server ? { fromServer: (chunk: Buffer) => server.push(chunk) } : {}),
      closed: () => {
        client.stop();
        server?.stop();
        options.selection.closed(socket);
      },
    };
  };
}
