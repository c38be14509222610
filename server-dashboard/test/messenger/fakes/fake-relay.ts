/**
 * A fake Relay server for the connector's tests, built from the locked contract: every REST request
 * is checked against the snapshot's parameter and body schemas (a violation answers 400 and is
 * recorded), every JSON answer of ours is checked against the documented response schema, and the
 * agent WebSocket speaks the acknowledged-event protocol with knobs to replay, gap, disconnect,
 * demand a FULL sync and send any error frame.
 */
import { createHash, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import type { ValidateFunction } from 'ajv';
import { loadRelayContract, type RelayContract } from './relay-contract.js';

type Json = Record<string, unknown>;

export interface StoredMessage {
  id: string;
  chatId: string;
  idempotencyKey: string | null;
  body: Json;
  createdAt: string;
}

export interface AckRecord {
  connection: number;
  through: bigint;
}

export interface FakeRelayOptions {
  token: string;
  /** Events in flight per connection before the fake waits for ACKs. */
  maxInFlight?: number;
  /** Called synchronously when an ACK frame arrives (before the fake acts on it). */
  onAck?: (through: bigint, connection: number) => void;
}

export interface FakeConnection {
  id: number;
  socket: WebSocket;
  /** Highest sequence sent on this connection. */
  sentThrough: bigint;
  received: string[];
}

function nowIso(): string {
  return new Date().toISOString();
}

function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Json)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}

export function errorBody(status: number, code: number, message: string): Json {
  return { error: { status, code, message, doc_url: `https://docs.relayapp.im/error/codes/${code}` }, success: false };
}

export class FakeRelay {
  readonly contract: RelayContract = loadRelayContract();
  readonly server: http.Server;
  private readonly wss: WebSocketServer;
  private readonly o: FakeRelayOptions;
  url = '';

  // --- REST state and records
  readonly chats = new Map<string, Json>();
  readonly history = new Map<string, Json[]>();
  readonly messages = new Map<string, StoredMessage>();
  readonly idempotency = new Map<string, { hash: string; messageId: string }>();
  readonly requests: {
    method: string;
    path: string;
    operationId: string;
    headers: http.IncomingHttpHeaders;
    body: unknown;
  }[] = [];
  readonly contractViolations: string[] = [];
  private readonly responsesChecked = new Map<string, number>();
  readonly reads: string[] = [];
  readonly typing: { chatId: string; op: 'start' | 'stop' }[] = [];
  readonly reactions: Json[] = [];
  readonly uploads = new Map<string, { headers: http.IncomingHttpHeaders; bytes: Buffer }>();
  /** Attachments a person sent, served on GET /v1/attachments/{id} and downloaded from `download_url`. */
  readonly attachments = new Map<
    string,
    {
      filename: string;
      contentType: string;
      bytes: Buffer;
      status?: 'pending' | 'complete' | 'failed';
      external?: boolean;
      /** A size_bytes that differs from the bytes served (a lying or stale declaration). */
      declaredSize?: number;
    }
  >();
  /** Downloads served, with the Authorization header each carried. */
  readonly downloads: { id: string; authorization: string | undefined; host: string }[] = [];
  readonly paymentRequests: { key: string | undefined; body: Json }[] = [];
  /** Messages the agent may have written that the fake serves on GET /v1/messages/{id}. */
  readonly ownMessages = new Map<string, Json>();
  /** Per-operation scripted failures: status codes answered before the real handler runs. */
  readonly failNext = new Map<string, number[]>();
  /** Pages served for FULL sync; a hook may throw to simulate a broken server. */
  listChatsPageSize = 100;
  listMessagesDelayMs = 0;

  // --- WebSocket state
  /** events[i] has sequence i + 1. */
  readonly events: Json[] = [];
  ackedThrough = 0n;
  /** Sequences at or below this are outside retention: a checkpoint below it needs a FULL sync. */
  retainedAfter = 0n;
  readonly acks: AckRecord[] = [];
  readonly connections: FakeConnection[] = [];
  readonly upgrades: http.IncomingHttpHeaders[] = [];
  /** Answer the next upgrades with this HTTP status instead of 101. */
  upgradeStatus: number | null = null;
  /** While true, events are not streamed (tests drive frames by hand). */
  holdEvents = false;
  /** While true, ACK frames are recorded but do not advance the durable checkpoint. */
  ignoreAcks = false;
  /** Sequences to skip once when streaming (to create a gap). */
  skipOnce = new Set<bigint>();
  pingCount = 0;
  answerPings = true;
  fullSyncCompletions: bigint[] = [];
  maxInFlight: number;
  private pendingFullSync = new Map<number, bigint>();
  private connectionSeq = 0;

  constructor(options: FakeRelayOptions) {
    this.o = options;
    this.maxInFlight = options.maxInFlight ?? 32;
    this.server = http.createServer((req, res) => {
      void this.handleHttp(req, res).catch((err: unknown) => {
        this.contractViolations.push(`fake crashed: ${(err as Error).message}`);
        if (!res.headersSent) res.writeHead(500).end();
      });
    });
    this.wss = new WebSocketServer({ noServer: true });
    this.server.on('upgrade', (req, socket, head) => this.handleUpgrade(req, socket, head));
  }

  async listen(): Promise<string> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    const port = (this.server.address() as AddressInfo).port;
    this.url = `http://127.0.0.1:${port}`;
    return this.url;
  }

  async close(): Promise<void> {
    for (const c of this.connections) c.socket.terminate();
    this.wss.close();
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  // ------------------------------------------------------------------ REST

  private async readBody(req: http.IncomingMessage): Promise<Buffer> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    return Buffer.concat(chunks);
  }

  private reply(
    res: http.ServerResponse,
    op: string | null,
    status: number,
    body?: unknown,
    validator?: ValidateFunction | null,
  ) {
    if (body !== undefined) {
      // The fake's own answers are checked for the first few of each kind: enough to keep the fake
      // faithful to the contract without paying for it on every one of thousands of replies.
      const key = `${op} ${status}`;
      const checked = this.responsesChecked.get(key) ?? 0;
      this.responsesChecked.set(key, checked + 1);
      if (validator && checked < 25 && !validator(body)) {
        const why = JSON.stringify(validator.errors?.slice(0, 2));
        this.contractViolations.push(`fake answered ${op} ${status} outside the contract: ${why}`);
      }
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    } else {
      res.writeHead(status).end();
    }
  }

  private async handleHttp(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://x');
    const raw = await this.readBody(req);
    if (req.method === 'GET' && (url.pathname.startsWith('/downloads/') || url.pathname.startsWith('/bucket/'))) {
      const id = url.pathname.split('/')[2] ?? '';
      this.downloads.push({ id, authorization: req.headers.authorization, host: req.headers.host ?? '' });
      const a = this.attachments.get(id);
      // The API origin's download route wants the Agent Token; the "bucket" (another origin) does not.
      if (url.pathname.startsWith('/downloads/') && req.headers.authorization !== `Bearer ${this.o.token}`) {
        res.writeHead(401).end();
        return;
      }
      if (a === undefined) {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { 'content-type': a.contentType }).end(a.bytes);
      return;
    }
    if (req.method === 'PUT' && url.pathname.startsWith('/uploads/')) {
      const id = url.pathname.slice('/uploads/'.length);
      this.uploads.set(id, { headers: req.headers, bytes: raw });
      res.writeHead(200).end();
      return;
    }
    const matched = this.contract.match(req.method ?? 'GET', url.pathname);
    if (matched === null) {
      this.contractViolations.push(`no such route: ${req.method} ${url.pathname}`);
      return this.reply(res, null, 404, errorBody(404, 1004, 'Not found'));
    }
    const { op, params } = matched;
    const answer = (status: number, body?: unknown) =>
      this.reply(res, op.operationId, status, body, op.responses.get(String(status)) ?? null);
    let body: unknown = undefined;
    if (raw.length > 0) {
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        this.contractViolations.push(`${op.operationId}: body is not JSON`);
        return answer(400, errorBody(400, 1005, 'Body is not JSON'));
      }
    }
    this.requests.push({
      method: op.method,
      path: url.pathname,
      operationId: op.operationId,
      headers: req.headers,
      body,
    });
    if (req.headers.authorization !== `Bearer ${this.o.token}`) {
      return answer(401, errorBody(401, 1001, 'Unauthorized'));
    }
    // Parameters and body against the snapshot's schemas.
    for (const p of op.parameters) {
      let value: unknown;
      if (p.in === 'path') value = params[p.name];
      else if (p.in === 'query') value = url.searchParams.get(p.name) ?? undefined;
      else if (p.in === 'header') value = req.headers[p.name.toLowerCase()];
      if (value === undefined) {
        if (p.required) {
          this.contractViolations.push(`${op.operationId}: missing ${p.in} ${p.name}`);
          return answer(400, errorBody(400, 1005, `missing ${p.name}`));
        }
        continue;
      }
      const coerced = p.in === 'query' && /^-?\d+$/.test(String(value)) && !p.validate(value) ? Number(value) : value;
      if (!p.validate(coerced)) {
        this.contractViolations.push(`${op.operationId}: ${p.in} ${p.name} violates the contract`);
        return answer(400, errorBody(400, 1005, `invalid ${p.name}`));
      }
    }
    if (op.body !== null) {
      if (body === undefined && op.bodyRequired) {
        this.contractViolations.push(`${op.operationId}: missing body`);
        return answer(400, errorBody(400, 1005, 'missing body'));
      }
      if (body !== undefined && !op.body(body)) {
        this.contractViolations.push(
          `${op.operationId}: body violates the contract: ${JSON.stringify(op.body.errors?.slice(0, 3))}`,
        );
        return answer(400, errorBody(400, 1005, 'invalid body'));
      }
    } else if (raw.length > 0) {
      this.contractViolations.push(`${op.operationId}: takes no body`);
    }
    const scripted = this.failNext.get(op.operationId);
    if (scripted !== undefined && scripted.length > 0) {
      const status = scripted.shift() ?? 500;
      return answer(status, errorBody(status, status === 429 ? 1029 : 1000, 'scripted failure'));
    }
    await this.route(op.operationId, params, url, req, body as Json, answer);
  }

  private async route(
    operationId: string,
    params: Record<string, string>,
    url: URL,
    req: http.IncomingMessage,
    body: Json,
    answer: (status: number, body?: unknown) => void,
  ): Promise<void> {
    switch (operationId) {
      case 'sendMessageToChat': {
        const chatId = params['chatId'] ?? '';
        const key = req.headers['idempotency-key'];
        const keyStr = typeof key === 'string' ? key : null;
        const hash = createHash('sha256').update(canonical(body)).digest('hex');
        if (keyStr !== null) {
          const seen = this.idempotency.get(keyStr);
          if (seen !== undefined) {
            if (seen.hash !== hash)
              return answer(
                409,
                errorBody(409, 1009, 'Idempotency key was already used with a different request body.'),
              );
            const stored = this.messages.get(seen.messageId);
            return answer(
              202,
              this.sentResponse(chatId, stored?.id ?? seen.messageId, stored?.createdAt ?? nowIso(), body),
            );
          }
        }
        const id = randomUUID();
        const createdAt = nowIso();
        this.messages.set(id, { id, chatId, idempotencyKey: keyStr, body, createdAt });
        if (keyStr !== null) this.idempotency.set(keyStr, { hash, messageId: id });
        return answer(202, this.sentResponse(chatId, id, createdAt, body));
      }
      case 'markChatAsRead':
        this.reads.push(params['chatId'] ?? '');
        return answer(204);
      case 'startTyping':
        this.typing.push({ chatId: params['chatId'] ?? '', op: 'start' });
        return answer(204);
      case 'stopTyping':
        this.typing.push({ chatId: params['chatId'] ?? '', op: 'stop' });
        return answer(204);
      case 'sendReaction':
        this.reactions.push(body);
        return answer(202, { status: 'queued', trace_id: randomUUID() });
      case 'getMessage': {
        const m = this.ownMessages.get(params['messageId'] ?? '');
        if (m === undefined) return answer(404, errorBody(404, 1004, 'Message not found'));
        return answer(200, m);
      }
      case 'requestUpload': {
        const id = randomUUID();
        return answer(200, {
          attachment_id: id,
          download_url: `${this.url}/downloads/${id}`,
          expires_at: new Date(Date.now() + 900_000).toISOString(),
          http_method: 'PUT',
          required_headers: { 'content-type': String(body['content_type']), 'x-upload-check': id },
          upload_url: `${this.url}/uploads/${id}`,
        });
      }
      case 'getAttachment': {
        const id = params['attachmentId'] ?? '';
        const a = this.attachments.get(id);
        if (a === undefined) return answer(404, errorBody(404, 1004, 'Attachment not found'));
        // An "external" attachment lives on another origin (localhost vs 127.0.0.1), like a bucket.
        const base = a.external === true ? this.url.replace('127.0.0.1', 'localhost') : this.url;
        return answer(200, {
          id,
          filename: a.filename,
          content_type: a.contentType,
          size_bytes: a.declaredSize ?? a.bytes.byteLength,
          status: a.status ?? 'complete',
          download_url: `${base}/${a.external === true ? 'bucket' : 'downloads'}/${id}`,
          created_at: nowIso(),
        });
      }
      case 'createPaymentRequest': {
        const key = req.headers['idempotency-key'];
        this.paymentRequests.push({ key: typeof key === 'string' ? key : undefined, body });
        return answer(201, this.paymentRequestBody(body));
      }
      case 'listChats':
        return this.page(answer, 'chats', [...this.chats.values()], url, this.listChatsPageSize);
      case 'getMessages': {
        const chatId = params['chatId'] ?? '';
        if (!this.chats.has(chatId)) return answer(404, errorBody(404, 1004, 'Chat not found'));
        if (this.listMessagesDelayMs > 0) await new Promise((r) => setTimeout(r, this.listMessagesDelayMs));
        return this.page(answer, 'messages', this.history.get(chatId) ?? [], url, 100);
      }
      default:
        this.contractViolations.push(`fake has no handler for ${operationId}`);
        return answer(500, errorBody(500, 1000, 'not implemented by the fake'));
    }
  }

  private page(
    answer: (s: number, b?: unknown) => void,
    key: string,
    items: Json[],
    url: URL,
    defaultLimit: number,
  ): void {
    const limit = Number(url.searchParams.get('limit') ?? defaultLimit);
    const start = Number(url.searchParams.get('cursor') ?? '0');
    const size = Math.min(limit, defaultLimit);
    const slice = items.slice(start, start + size);
    const next = start + size < items.length ? String(start + size) : null;
    answer(200, { [key]: slice, next_cursor: next });
  }

  private partResponse(p: Json): Json {
    switch (p['type']) {
      case 'text':
        return { type: 'text', value: p['value'], reactions: null };
      case 'link':
        return { type: 'link', value: p['value'], reactions: null };
      case 'buttons':
        return { type: 'buttons', items: p['items'], reactions: null };
      case 'selection':
        return {
          type: 'selection',
          title: p['title'],
          options: p['options'],
          has_responded: false,
          selected_values: null,
          reactions: null,
        };
      default:
        return { ...p, reactions: null };
    }
  }

  private sentResponse(chatId: string, id: string, createdAt: string, body: Json): Json {
    const message = body['message'] as Json;
    const parts = (message['parts'] as Json[])
      .filter((p) => p['type'] !== 'media' && p['type'] !== 'payment')
      .map((p) => this.partResponse(p));
    return {
      chat_id: chatId,
      message: { id, parts, created_at: createdAt, sent_at: createdAt, delivery_status: 'delivered' },
    };
  }

  private paymentRequestBody(body: Json): Json {
    const id = randomUUID();
    const now = nowIso();
    return {
      id,
      object: 'payment_request',
      status: 'requested',
      mode: body['mode'] ?? 'payment',
      amount: body['amount'] ?? 0,
      currency: body['currency'] ?? 'usd',
      description: body['description'],
      category: body['category'],
      checkout_url: `https://pay.relayapp.im/c/${id}`,
      expires_at: new Date(Date.now() + 23 * 3600_000).toISOString(),
      metadata: {},
      stripe: { payment_intent_id: `pi_${id.replace(/-/g, '')}` },
      created_at: now,
      updated_at: now,
    };
  }

  /** Messages stored per Idempotency-Key prefix (e.g. `reply-<event_id>-`). */
  messagesWithKeyPrefix(prefix: string): StoredMessage[] {
    return [...this.messages.values()].filter((m) => m.idempotencyKey?.startsWith(prefix));
  }

  // ------------------------------------------------------------- WebSocket

  private handleUpgrade(req: http.IncomingMessage, socket: import('node:stream').Duplex, head: Buffer): void {
    const url = new URL(req.url ?? '/', 'http://x');
    this.upgrades.push(req.headers);
    const refuse = (status: number, message: string) => {
      const body = JSON.stringify(errorBody(status, status === 409 ? 1009 : 1001, message));
      socket.end(
        `HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? 'Error'}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
      );
    };
    if (url.pathname !== '/v1/websocket' || url.search !== '') return refuse(400, 'bad websocket request');
    if (req.headers.authorization !== `Bearer ${this.o.token}`) return refuse(401, 'Unauthorized');
    if (this.upgradeStatus !== null) {
      return refuse(
        this.upgradeStatus,
        this.upgradeStatus === 409 ? 'Delete the webhook subscription to use the WebSocket' : 'refused',
      );
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => this.onConnection(ws));
  }

  private onConnection(ws: WebSocket): void {
    const conn: FakeConnection = { id: ++this.connectionSeq, socket: ws, sentThrough: this.ackedThrough, received: [] };
    this.connections.push(conn);
    const fullSyncNeeded = this.ackedThrough < this.retainedAfter;
    const ready = {
      type: 'ready',
      connection_id: randomUUID(),
      acked_through: String(this.ackedThrough),
      full_sync_required: fullSyncNeeded,
      full_sync_through: fullSyncNeeded ? String(this.retainedAfter) : null,
      heartbeat_interval_ms: 30_000,
      max_in_flight: this.maxInFlight,
    };
    if (!this.contract.schema('WebSocketReadyFrame')(ready))
      this.contractViolations.push('fake ready frame outside the contract');
    ws.send(JSON.stringify(ready));
    if (fullSyncNeeded) {
      this.pendingFullSync.set(conn.id, this.retainedAfter);
      ws.send(
        JSON.stringify({
          type: 'full_sync',
          through_sequence: String(this.retainedAfter),
          reason: 'checkpoint_outside_retention',
        }),
      );
    }
    ws.on('message', (data) => this.onClientFrame(conn, data.toString()));
    ws.on('close', () => {
      const i = this.connections.indexOf(conn);
      if (i >= 0) this.connections.splice(i, 1);
    });
    this.pump(conn);
  }

  private onClientFrame(conn: FakeConnection, text: string): void {
    conn.received.push(text);
    if (text === '{"type":"ping"}') {
      this.pingCount += 1;
      if (this.answerPings) conn.socket.send('{"type":"pong"}');
      return;
    }
    let frame: Json;
    try {
      frame = JSON.parse(text) as Json;
    } catch {
      return this.sendError(conn, 'invalid_frame', 'not JSON', true, false);
    }
    if (frame['type'] === 'ack') {
      if (!this.contract.schema('WebSocketAckFrame')(frame))
        return this.sendError(conn, 'invalid_frame', 'bad ack', true, false);
      const through = BigInt(String(frame['through_sequence']));
      this.o.onAck?.(through, conn.id);
      this.acks.push({ connection: conn.id, through });
      if (through > conn.sentThrough)
        return this.sendError(conn, 'ack_out_of_range', 'ack beyond delivered events', true, true);
      if (!this.ignoreAcks && through > this.ackedThrough) this.ackedThrough = through;
      this.pump(conn);
      return;
    }
    if (frame['type'] === 'full_sync_complete') {
      if (!this.contract.schema('WebSocketFullSyncCompleteFrame')(frame))
        return this.sendError(conn, 'invalid_frame', 'bad frame', true, false);
      const through = BigInt(String(frame['through_sequence']));
      const expected = this.pendingFullSync.get(conn.id);
      if (expected === undefined || expected !== through)
        return this.sendError(conn, 'full_sync_mismatch', 'mismatch', true, false);
      this.pendingFullSync.delete(conn.id);
      this.fullSyncCompletions.push(through);
      this.ackedThrough = through;
      conn.sentThrough = through;
      this.pump(conn);
      return;
    }
    this.sendError(conn, 'invalid_frame', `unexpected ${String(frame['type'])}`, true, false);
  }

  sendError(conn: FakeConnection, code: string, message: string, fatal: boolean, retryable: boolean): void {
    conn.socket.send(JSON.stringify({ type: 'error', code, message, fatal, retryable }));
    if (fatal) conn.socket.close(1008, code);
  }

  /** Streams events after the connection's position, up to max_in_flight beyond the durable checkpoint. */
  pump(conn: FakeConnection): void {
    if (this.holdEvents || this.pendingFullSync.has(conn.id) || conn.socket.readyState !== conn.socket.OPEN) return;
    const limit = this.ackedThrough + BigInt(this.maxInFlight);
    while (conn.sentThrough < BigInt(this.events.length) && conn.sentThrough < limit) {
      const seq = conn.sentThrough + 1n;
      conn.sentThrough = seq;
      if (this.skipOnce.has(seq)) {
        this.skipOnce.delete(seq);
        continue;
      }
      conn.socket.send(JSON.stringify({ type: 'event', sequence: String(seq), event: this.events[Number(seq) - 1] }));
    }
  }

  /** Appends events and streams them to every connection. */
  push(...envelopes: Json[]): void {
    this.events.push(...envelopes);
    for (const c of this.connections) this.pump(c);
  }

  sendRaw(text: string): void {
    for (const c of this.connections) c.socket.send(text);
  }

  closeAll(code: number, reason = ''): void {
    for (const c of this.connections) c.socket.close(code, reason);
  }

  terminateAll(): void {
    for (const c of [...this.connections]) c.socket.terminate();
  }
}

// ------------------------------------------------------------------ builders

export const AGENT_ID = '0b9e8a1c-5d2f-4a3b-8c7d-6e5f4a3b2c1d';
export const AGENT_HANDLE = 'hermes';

export function chatHandle(id: string, handle: string, kind: 'user' | 'agent' = 'user'): Json {
  return { id, handle, kind, display_name: handle, joined_at: '2026-01-01T00:00:00.000Z' };
}

export interface InboundOptions {
  chatId: string;
  senderId: string;
  text?: string;
  parts?: Json[];
  isGroup?: boolean;
  senderKind?: 'user' | 'agent';
  replyTo?: { message_id: string; part_index?: number };
  eventId?: string;
  messageId?: string;
}

export function inboundMessage(o: InboundOptions): Json {
  const id = o.messageId ?? randomUUID();
  return {
    api_version: 'v1',
    webhook_version: '2026-08-30',
    event_type: 'message.received',
    event_id: o.eventId ?? randomUUID(),
    created_at: nowIso(),
    trace_id: `trace-${id}`,
    agent_id: AGENT_ID,
    data: {
      chat: { id: o.chatId, is_group: o.isGroup ?? false, owner_handle: chatHandle(AGENT_ID, AGENT_HANDLE, 'agent') },
      id,
      direction: 'inbound',
      sender_handle: chatHandle(o.senderId, `user-${o.senderId.slice(0, 4)}`, o.senderKind ?? 'user'),
      parts: o.parts ?? [{ type: 'text', value: o.text ?? 'hello', reactions: null }],
      sent_at: nowIso(),
      reply_to: o.replyTo ?? null,
    },
  };
}

export function envelope(eventType: string, data: Json): Json {
  return {
    api_version: 'v1',
    webhook_version: '2026-08-30',
    event_type: eventType,
    event_id: randomUUID(),
    created_at: nowIso(),
    trace_id: 'trace',
    agent_id: AGENT_ID,
    data,
  };
}
