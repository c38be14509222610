import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import WebSocket from 'ws';

export interface Opened {
  ws: WebSocket;
  messages: Buffer[];
  closed: Promise<{ code: number; reason: string }>;
}

/** Opens a real WebSocket (ws) or resolves with the HTTP refusal the relay answered before the 101. */
export function openSocket(
  url: string,
  authorization?: string,
  options: { binaryTypeOnly?: boolean } = {},
): Promise<Opened | { status: number; body: string }> {
  void options;
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers: authorization ? { authorization } : {}, perMessageDeflate: false });
    const messages: Buffer[] = [];
    const closed = new Promise<{ code: number; reason: string }>((done) =>
      ws.on('close', (code, reason) => done({ code, reason: reason.toString() })),
    );
    ws.on('message', (data: Buffer) => messages.push(data));
    ws.once('open', () => resolve({ ws, messages, closed }));
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    ws.once('error', (error) => reject(error));
  });
}

export async function open(url: string, authorization?: string): Promise<Opened> {
  const result = await openSocket(url, authorization);
  if ('status' in result) throw new Error(`expected 101, got ${result.status} ${result.body}`);
  return result;
}

export async function refused(url: string, authorization?: string): Promise<{ status: number; body: unknown }> {
  const result = await openSocket(url, authorization);
  if (!('status' in result)) throw new Error('expected a refusal, got 101');
  return { status: result.status, body: result.body ? (JSON.parse(result.body) as unknown) : '' };
}

/** A message whose first byte is never 0 (the relay's notice marker). */
export function audioMessage(size: number): Buffer {
  const payload = randomBytes(size);
  payload[0] = 1 + (payload[0]! % 255);
  return payload;
}

/**
 * A hand-rolled client for frames `ws` refuses to send (unmasked, RSV bits, fragments, oversized
 * control frames): performs the handshake on a raw TCP socket and exposes the bytes that come back.
 */
export class RawClient {
  readonly received: Buffer[] = [];
  private constructor(
    readonly socket: Socket,
    readonly status: string,
  ) {}

  static async connect(port: number, path: string, headers: Record<string, string>): Promise<RawClient> {
    const socket = connect(port, '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    const all: Record<string, string> = {
      Host: '127.0.0.1',
      Upgrade: 'websocket',
      Connection: 'Upgrade',
      'Sec-WebSocket-Key': randomBytes(16).toString('base64'),
      'Sec-WebSocket-Version': '13',
      ...headers,
    };
    const lines = [`GET ${path} HTTP/1.1`, ...Object.entries(all).map(([k, v]) => `${k}: ${v}`)];
    socket.write(`${lines.join('\r\n')}\r\n\r\n`);
    let buffered = Buffer.alloc(0);
    let rest = Buffer.alloc(0);
    const status = await new Promise<string>((resolve) => {
      const onData = (chunk: Buffer): void => {
        buffered = Buffer.concat([buffered, chunk]);
        const end = buffered.indexOf('\r\n\r\n');
        if (end < 0) return;
        socket.off('data', onData);
        const head = buffered.subarray(0, end).toString();
        rest = buffered.subarray(end + 4);
        resolve(head);
      };
      socket.on('data', onData);
    });
    const client = new RawClient(socket, status);
    if (rest.length > 0) client.received.push(rest);
    socket.on('data', (chunk: Buffer) => client.received.push(chunk));
    return client;
  }

  /** Writes one frame: masked unless told otherwise. */
  frame(opcode: number, payload: Buffer, options: { fin?: boolean; masked?: boolean; rsv?: number } = {}): void {
    const fin = options.fin ?? true;
    const masked = options.masked ?? true;
    const b0 = (fin ? 0x80 : 0) | ((options.rsv ?? 0) << 4) | opcode;
    let header: Buffer;
    if (payload.length < 126) header = Buffer.from([b0, (masked ? 0x80 : 0) | payload.length]);
    else if (payload.length < 65_536) {
      header = Buffer.alloc(4);
      header[0] = b0;
      header[1] = (masked ? 0x80 : 0) | 126;
      header.writeUInt16BE(payload.length, 2);
    } else {
      header = Buffer.alloc(10);
      header[0] = b0;
      header[1] = (masked ? 0x80 : 0) | 127;
      header.writeUInt32BE(0, 2);
      header.writeUInt32BE(payload.length, 6);
    }
    if (!masked) {
      this.socket.write(Buffer.concat([header, payload]));
      return;
    }
    const mask = randomBytes(4);
    const body = Buffer.from(payload);
    for (let i = 0; i < body.length; i += 1) body[i]! ^= mask[i & 3]!;
    this.socket.write(Buffer.concat([header, mask, body]));
  }

  /** Resolves with the close code of the relay's close frame (waits for the connection to end). */
  async closeCode(): Promise<number | undefined> {
    return (await this.closeFrame())?.code;
  }

  /** Resolves with the code and reason text of the relay's close frame (waits for the connection to end). */
  async closeFrame(): Promise<{ code: number; reason: string } | undefined> {
    if (!this.socket.closed) await new Promise<void>((resolve) => this.socket.once('close', () => resolve()));
    const all = Buffer.concat(this.received);
    // Walk the unmasked server frames to the close frame.
    let offset = 0;
    while (offset + 2 <= all.length) {
      const opcode = all[offset]! & 0x0f;
      let length = all[offset + 1]! & 0x7f;
      let start = offset + 2;
      if (length === 126) {
        length = all.readUInt16BE(offset + 2);
        start = offset + 4;
      } else if (length === 127) {
        length = all.readUInt32BE(offset + 6);
        start = offset + 10;
      }
      if (opcode === 0x8) {
        if (length < 2) return undefined;
        return { code: all.readUInt16BE(start), reason: all.subarray(start + 2, start + length).toString('utf8') };
      }
      offset = start + length;
    }
    return undefined;
  }

  /** The first frame's opcode and payload (for pong checks). */
  firstFrame(): { opcode: number; payload: Buffer } | undefined {
    const all = Buffer.concat(this.received);
    if (all.length < 2) return undefined;
    const length = all[1]! & 0x7f;
    if (all.length < 2 + length) return undefined;
    return { opcode: all[0]! & 0x0f, payload: all.subarray(2, 2 + length) };
  }
}
