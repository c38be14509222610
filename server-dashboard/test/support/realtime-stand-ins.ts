import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import WebSocket, { WebSocketServer, type RawData } from 'ws';

/** A frame as one side received it: its bytes and whether it was binary. */
export interface ReceivedFrame {
  data: Buffer;
  isBinary: boolean;
}

/** A queue a test awaits instead of sleeping: each item resolves the oldest waiter, or waits for one. */
export class Reports<T> {
  readonly seen: T[] = [];
  private readonly pending: T[] = [];
  private readonly waiters: ((item: T) => void)[] = [];

  push(item: T): void {
    this.seen.push(item);
    const waiter = this.waiters.shift();
    if (waiter) waiter(item);
    else this.pending.push(item);
  }

  next(): Promise<T> {
    const ready = this.pending.shift();
    if (ready !== undefined) return Promise.resolve(ready);
    return new Promise((resolve) => this.waiters.push(resolve));
  }
}

function bytes(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}

/** One upgrade the stand-in received: its path, query and headers (the credential among them). */
export interface RealtimeHandshake {
  url: string;
  headers: http.IncomingHttpHeaders;
}

/** One accepted connection: what it received, and the socket to answer or close it with. */
export interface RealtimeConnection {
  handshake: RealtimeHandshake;
  socket: WebSocket;
  frames: Reports<ReceivedFrame>;
  closed: Promise<{ code: number; reason: string }>;
}

/**
 * How the stand-in answers a handshake: accept (the first server event sent at once), refuse with an
 * HTTP status and the provider's JSON error, or hold it unanswered (a provider that never opens).
 */
export type HandshakeAnswer = { accept: true } | { status: number; body: unknown } | { hold: true };

/**
 * An OpenAI-Realtime-style WebSocket server on loopback, as xAI's `wss://api.x.ai/v1/realtime` and
 * speech-to-speech servers speak it: a bearer key on the upgrade, JSON events as text frames, the
 * server's first event (`conversation.created` for xAI, `session.created` for an OpenAI-Realtime
 * server) sent as soon as the socket opens. It reports each handshake and frame as it arrives.
 */
export class RealtimeStandIn {
  readonly handshakes = new Reports<RealtimeHandshake>();
  readonly connections = new Reports<RealtimeConnection>();
  url = '';
  private server: http.Server | null = null;
  private readonly sockets = new WebSocketServer({ noServer: true, maxPayload: 32 * 1024 * 1024 });
  private readonly held: Duplex[] = [];

  constructor(
    /** Decides each handshake (default: accept). */
    public answer: (handshake: RealtimeHandshake) => HandshakeAnswer,
    /** The event the server sends first on every accepted socket. */
    private readonly firstEvent: Record<string, unknown>,
  ) {}

  async start(): Promise<void> {
    this.server = http.createServer((_req, res) => res.writeHead(426).end());
    this.server.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
      const handshake = { url: req.url ?? '', headers: req.headers };
      this.handshakes.push(handshake);
      const answer = this.answer(handshake);
      if ('hold' in answer) {
        this.held.push(socket);
        return;
      }
      if ('status' in answer) {
        const body = JSON.stringify(answer.body);
        socket.end(
          `HTTP/1.1 ${answer.status} ${http.STATUS_CODES[answer.status] ?? ''}\r\ncontent-type: application/json\r\n` +
            `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
        );
        return;
      }
      this.sockets.handleUpgrade(req, socket, head, (ws) => {
        const frames = new Reports<ReceivedFrame>();
        ws.on('message', (data: RawData, isBinary: boolean) => frames.push({ data: bytes(data), isBinary }));
        const closed = new Promise<{ code: number; reason: string }>((resolve) =>
          ws.on('close', (code: number, reason: Buffer) => resolve({ code, reason: reason.toString('utf8') })),
        );
        ws.send(JSON.stringify(this.firstEvent));
        this.connections.push({ handshake, socket: ws, frames, closed });
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    this.url = `ws://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    for (const socket of this.held) socket.destroy();
    for (const client of this.sockets.clients) client.terminate();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

/** xAI's first server event on a realtime socket. */
export const XAI_FIRST_EVENT = {
  type: 'conversation.created',
  conversation: { id: 'conv_standin', object: 'realtime.conversation' },
};

/** An OpenAI-Realtime server's first event (speech-to-speech speaks this protocol). */
export const OPENAI_REALTIME_FIRST_EVENT = {
  type: 'session.created',
  session: { id: 'sess_standin', object: 'realtime.session' },
};

/**
 * xAI's handshake: `Authorization: Bearer <key>` must be one it knows and `?model=` present, else
 * its 401 JSON error.
 */
export function xaiHandshake(...bearers: string[]): (handshake: RealtimeHandshake) => HandshakeAnswer {
  return (handshake) => {
    const url = new URL(handshake.url, 'http://stand-in');
    if (url.pathname !== '/v1/realtime') return { status: 404, body: { error: 'Not found' } };
    const bearer = /^Bearer (.+)$/.exec(handshake.headers.authorization ?? '')?.[1];
    if (!bearer || !bearers.includes(bearer) || !url.searchParams.get('model')) {
      return {
        status: 401,
        body: { code: 'Client specified an invalid argument', error: 'Incorrect API key provided' },
      };
    }
    return { accept: true };
  };
}

/** A test's own client socket: what it receives and how it closes, reported as they arrive. */
export interface TestClient {
  socket: WebSocket;
  /** The HTTP status when the upgrade was refused, else null once opened. */
  opened: Promise<number | null>;
  frames: Reports<ReceivedFrame>;
  closed: Promise<{ code: number; reason: string }>;
}

export function openClient(url: string, headers: Record<string, string> = {}): TestClient {
  const socket = new WebSocket(url, { headers, maxPayload: 32 * 1024 * 1024 });
  const frames = new Reports<ReceivedFrame>();
  socket.on('message', (data: RawData, isBinary: boolean) => frames.push({ data: bytes(data), isBinary }));
  const opened = new Promise<number | null>((resolve) => {
    socket.once('open', () => resolve(null));
    socket.once('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0);
      res.resume();
      socket.terminate();
    });
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    socket.on('close', (code: number, reason: Buffer) => resolve({ code, reason: reason.toString('utf8') })),
  );
  socket.on('error', () => {});
  return { socket, opened, frames, closed };
}

/** Sends a text then a binary frame on `from`, and resolves with the next two frames `to` receives. */
export async function sendTextAndBinary(
  from: WebSocket,
  to: Reports<ReceivedFrame>,
  text: string,
  binary: Buffer,
): Promise<ReceivedFrame[]> {
  from.send(text);
  from.send(binary);
  return [await to.next(), await to.next()];
}

/** What `sendTextAndBinary` must deliver: the same bytes, each with its own frame type. */
export function sameFrames(text: string, binary: Buffer): ReceivedFrame[] {
  return [
    { data: Buffer.from(text), isBinary: false },
    { data: binary, isBinary: true },
  ];
}

/**
 * Opens a plugin WebSocket as the Conduit app does in standalone mode: a single-use ticket minted with
 * the bearer token (`POST /api/auth/ws-ticket`), then the socket with `?ticket=` beside `query`.
 */
export async function openTicketedClient(
  hostUrl: string,
  path: string,
  query: string,
  token: string,
): Promise<TestClient> {
  const response = await fetch(`${hostUrl}/api/auth/ws-ticket`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
  });
  const { ticket } = (await response.json()) as { ticket: string };
  const params = new URLSearchParams(query);
  params.set('ticket', ticket);
  return openClient(`${hostUrl.replace(/^http/, 'ws')}${path}?${params.toString()}`);
}
