import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import {
  DisconnectReason,
  LeaveRequest,
  LeaveRequest_Action,
  ListParticipantsRequest,
  ListParticipantsResponse,
  SignalResponse,
} from '@livekit/protocol';
import { TokenVerifier, type ClaimGrants } from 'livekit-server-sdk';
import { WebSocketServer } from 'ws';
import { ParticipantSession, type JoinGrant, type SignalTraceEntry } from './participant-session.js';
import { TestRoom } from './test-room.js';

/**
 * A LiveKit-compatible server for tests: the signalling protocol (`/rtc`, protobuf over WebSocket) and an
 * SFU for audio and data built on werift, enough for the real `@livekit/rtc-node` SDK to join rooms,
 * publish audio, receive the others' audio and exchange data packets. Not a product component.
 */
export interface LiveKitTestServer {
  /** The `ws://` URL to give the SDK. */
  readonly url: string;
  /** Every signal message by participant and direction, oldest first (bounded), for a failing test's report. */
  readonly trace: readonly SignalTraceEntry[];
  /**
   * Cuts a participant off abruptly (socket and media), as a failed server node would; the others see it
   * leave. Returns false when no such participant is connected.
   */
  dropParticipant(identity: string): Promise<boolean>;
  close(): Promise<void>;
}

export interface LiveKitTestServerOptions {
  apiKey: string;
  apiSecret: string;
}

/** Trace entries kept: enough for a few participants' whole session, bounded for a long one. */
const MAX_TRACE_ENTRIES = 2_000;

/** The access token from `Authorization: Bearer …` (what the Rust SDK sends) or `?access_token=` (the JS SDK). */
function accessToken(request: IncomingMessage, url: URL): string | null {
  const header = request.headers.authorization;
  if (header?.startsWith('Bearer ')) return header.slice('Bearer '.length);
  return url.searchParams.get('access_token');
}

/** The join grant a verified token gives, or null when it does not allow joining a named room. */
function joinGrant(claims: ClaimGrants, url: URL): { room: string; grant: JoinGrant } | null {
  const video = claims.video;
  if (!video?.roomJoin || !video.room || !claims.sub) return null;
  const clientProtocol = Number(url.searchParams.get('client_protocol') ?? '0');
  return {
    room: video.room,
    grant: {
      identity: claims.sub,
      name: claims.name ?? '',
      metadata: claims.metadata ?? '',
      attributes: claims.attributes ?? {},
      canPublish: video.canPublish ?? true,
      canSubscribe: video.canSubscribe ?? true,
      canPublishData: video.canPublishData ?? true,
      clientProtocol: Number.isInteger(clientProtocol) ? clientProtocol : 0,
    },
  };
}

/** The room a verified RoomService token may administer (`roomAdmin` for that room), or null. */
async function adminRoom(verifier: TokenVerifier, request: IncomingMessage): Promise<string | null> {
  const header = request.headers.authorization;
  if (!header?.startsWith('Bearer ')) return null;
  try {
    const claims = await verifier.verify(header.slice('Bearer '.length));
    return claims.video?.roomAdmin && claims.video.room ? claims.video.room : null;
  } catch {
    return null;
  }
}

function twirpError(response: ServerResponse, status: number, code: string, msg: string): void {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify({ code, msg }));
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function refuseUpgrade(socket: Duplex, status: number, reason: string): void {
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
}

export async function startLiveKitTestServer(options: LiveKitTestServerOptions): Promise<LiveKitTestServer> {
  const verifier = new TokenVerifier(options.apiKey, options.apiSecret);
  const rooms = new Map<string, TestRoom>();
  const sessions = new Set<ParticipantSession>();
  const trace: SignalTraceEntry[] = [];
  const record = (entry: SignalTraceEntry): void => {
    trace.push(entry);
    if (trace.length > MAX_TRACE_ENTRIES) trace.shift();
  };

  const verify = async (request: IncomingMessage, url: URL): Promise<{ room: string; grant: JoinGrant } | null> => {
    const token = accessToken(request, url);
    if (!token) return null;
    try {
      return joinGrant(await verifier.verify(token), url);
    } catch {
      return null;
    }
  };

  const http = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://localhost');
    // The SDK asks /rtc/validate after a refused upgrade, to learn why; 401 makes its connect fail for good.
    if (url.pathname === '/rtc/validate' || url.pathname === '/rtc/v1/validate') {
      void verify(request, url).then((joined) => {
        response.writeHead(joined ? 200 : 401, { 'content-type': 'text/plain' });
        response.end(joined ? 'success' : 'invalid token');
      });
      return;
    }
    // RoomService over Twirp (JSON), as livekit-server-sdk's RoomServiceClient calls it: ListParticipants only.
    if (request.method === 'POST' && url.pathname === '/twirp/livekit.RoomService/ListParticipants') {
      void listParticipants(request, response);
      return;
    }
    response.writeHead(404).end();
  });
  const listParticipants = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const allowed = await adminRoom(verifier, request);
    let asked: ListParticipantsRequest;
    try {
      asked = ListParticipantsRequest.fromJsonString(await readBody(request));
    } catch {
      twirpError(response, 400, 'malformed', 'invalid request body');
      return;
    }
    record({
      atMs: Date.now(),
      identity: '(room service)',
      direction: 'in',
      message: `ListParticipants ${asked.room}`,
    });
    if (!allowed || allowed !== asked.room) {
      twirpError(response, 401, 'unauthenticated', 'permissions denied');
      return;
    }
    // LiveKit answers not_found for a room nobody is in (it only exists while occupied or just created).
    const room = rooms.get(asked.room);
    if (!room || room.isEmpty) {
      twirpError(response, 404, 'not_found', 'requested room does not exist');
      return;
    }
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(new ListParticipantsResponse({ participants: room.participants() }).toJsonString());
  };
  const sockets = new WebSocketServer({ noServer: true });

  http.on('upgrade', (request, socket, head) => {
    const url = new URL(request.url ?? '/', 'http://localhost');
    // Only the dual-PeerConnection path: a 404 on /rtc/v1 is how a LiveKit server tells the SDK it has no
    // single-PeerConnection mode, and the SDK falls back to /rtc.
    if (url.pathname !== '/rtc') {
      refuseUpgrade(socket, 404, 'Not Found');
      return;
    }
    void verify(request, url).then((joined) => {
      if (!joined) {
        refuseUpgrade(socket, 401, 'Unauthorized');
        return;
      }
      sockets.handleUpgrade(request, socket, head, (ws) => {
        // A resume (`reconnect=1`) needs the session the server kept for the participant; this server keeps
        // none after a socket closes, so it refuses with a leave whose action is RECONNECT: the SDK's resume
        // fails and it escalates to a full reconnect, a fresh join.
        if (url.searchParams.get('reconnect') === '1') {
          const leave = new LeaveRequest({
            canReconnect: true,
            action: LeaveRequest_Action.RECONNECT,
            reason: DisconnectReason.STATE_MISMATCH,
          });
          record({
            atMs: Date.now(),
            identity: joined.grant.identity,
            direction: 'out',
            message: 'leave (resume refused)',
          });
          ws.send(new SignalResponse({ message: { case: 'leave', value: leave } }).toBinary(), () => ws.close());
          return;
        }
        let room = rooms.get(joined.room);
        if (!room) {
          room = new TestRoom(joined.room);
          rooms.set(joined.room, room);
        }
        const joinedRoom = room;
        const session = new ParticipantSession(ws, joinedRoom, joined.grant, record);
        sessions.add(session);
        ws.on('close', () => {
          sessions.delete(session);
          if (joinedRoom.isEmpty && rooms.get(joinedRoom.name) === joinedRoom) rooms.delete(joinedRoom.name);
        });
        session.start();
      });
    });
  });

  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;

  return {
    url: `ws://127.0.0.1:${port}`,
    trace,
    async dropParticipant(identity) {
      const session = [...sessions].find((candidate) => candidate.info.identity === identity);
      if (!session) return false;
      await session.drop();
      return true;
    },
    async close() {
      await Promise.allSettled([...sessions].map((session) => session.close()));
      sockets.close();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
