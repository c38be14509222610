/**
 * Stand-ins for Watch audio tests, apart from the host's code: the Watch's side of the relay's audio
 * bridge (its own node:crypto sealing, CRYPTO.md §4) and an OpenAI-Realtime WebRTC server on werift that
 * answers the Codex calls endpoint's SDP exchange, echoes the call's audio and answers its events.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  MediaStreamTrack,
  RTCPeerConnection,
  RTCRtpCodecParameters,
  RtpHeader,
  RtpPacket,
  type RTCDataChannel,
} from 'werift';
import WebSocket, { type RawData } from 'ws';
import { Reports } from './realtime-stand-ins.js';

const SALT = 'conduit-watch-audio-v1';

/** One message the Watch opened (or a relay notice it never gets: the Watch sees only sealed ones). */
export interface WatchMessage {
  kind: number;
  counter: bigint;
  plaintext: Buffer;
}

export interface AudioGrantAnswer {
  grant_id: string;
  key: string;
  watch_key: string;
  audio: { url: string; version: number; engines: string[] };
}

/** The Watch's end of one audio connection: hello, sealed messages both ways, and its close. */
export class WatchAudioStandIn {
  readonly sid: Buffer;
  readonly messages = new Reports<WatchMessage>();
  readonly controls = new Reports<Record<string, unknown>>();
  readonly events = new Reports<Record<string, unknown>>();
  readonly audio = new Reports<Buffer>();
  /** Every message's arrival time (performance.now()), in order, for the benchmark. */
  readonly arrivals: { kind: number; atMs: number; plaintext: Buffer }[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  readonly opened: Promise<number | null>;
  private readonly up: Buffer;
  private readonly down: Buffer;
  private counter = 0n;
  private readonly socket: WebSocket;

  constructor(
    readonly grant: AudioGrantAnswer,
    options: { sid?: Buffer; watchKey?: string } = {},
  ) {
    this.sid = options.sid ?? randomBytes(16);
    const root = Buffer.from(grant.key, 'base64url');
    const info = (direction: string) => `${SALT} ${direction} stream=${this.sid.toString('base64url')}`;
    this.up = Buffer.from(hkdfSync('sha256', root, SALT, info('watch-to-host'), 32));
    this.down = Buffer.from(hkdfSync('sha256', root, SALT, info('host-to-watch'), 32));
    this.socket = new WebSocket(grant.audio.url, {
      headers: { authorization: `Bearer ${options.watchKey ?? grant.watch_key}` },
      perMessageDeflate: false,
    });
    this.socket.on('error', () => undefined);
    this.opened = new Promise((resolve) => {
      this.socket.once('open', () => resolve(null));
      this.socket.once('unexpected-response', (_request, response) => {
        resolve(response.statusCode ?? 0);
        response.resume();
        this.socket.terminate();
      });
    });
    this.closed = new Promise((resolve) =>
      this.socket.on('close', (code: number, reason: Buffer) => resolve({ code, reason: reason.toString('utf8') })),
    );
    this.socket.on('message', (data: RawData) => this.receive(data as Buffer));
  }

  aad(direction: string, kind: number): Buffer {
    return Buffer.from(
      `conduit-watch-audio/1\n${direction}\ngrant=${this.grant.grant_id}\nsid=${this.sid.toString('base64url')}\ntype=${kind}`,
    );
  }

  /** The clear hello: `[0x04][sid][version]`. */
  hello(version = 1): void {
    this.socket.send(Buffer.concat([Buffer.from([4]), this.sid, Buffer.from([version])]));
  }

  /** A message sealed as the Watch seals it, with the next counter unless one is given. */
  seal(kind: number, plaintext: Buffer, counter = this.counter++): Buffer {
    const nonce = Buffer.alloc(12);
    nonce.writeBigUInt64BE(counter, 4);
    const cipher = createCipheriv('chacha20-poly1305', this.up, nonce, { authTagLength: 16 });
    cipher.setAAD(this.aad('watch-to-host', kind), { plaintextLength: plaintext.length });
    const ct = Buffer.concat([cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
    const header = Buffer.alloc(9);
    header[0] = kind;
    header.writeBigUInt64BE(counter, 1);
    return Buffer.concat([header, ct]);
  }

  sendRaw(message: Buffer): void {
    this.socket.send(message);
  }

  control(payload: Record<string, unknown>): void {
    this.sendRaw(this.seal(3, Buffer.from(JSON.stringify(payload))));
  }

  event(payload: Record<string, unknown>): void {
    this.sendRaw(this.seal(2, Buffer.from(JSON.stringify(payload))));
  }

  pcm(samples: Buffer): void {
    this.sendRaw(this.seal(1, samples));
  }

  close(): void {
    this.socket.close(1000);
  }

  private receive(data: Buffer): void {
    const kind = data[0] ?? 0;
    const counter = data.readBigUInt64BE(1);
    const nonce = Buffer.alloc(12);
    nonce.writeBigUInt64BE(counter, 4);
    const box = data.subarray(9);
    const decipher = createDecipheriv('chacha20-poly1305', this.down, nonce, { authTagLength: 16 });
    decipher.setAAD(this.aad('host-to-watch', kind), { plaintextLength: box.length - 16 });
    decipher.setAuthTag(box.subarray(box.length - 16));
    const plaintext = Buffer.concat([decipher.update(box.subarray(0, box.length - 16)), decipher.final()]);
    this.arrivals.push({ kind, atMs: performance.now(), plaintext });
    this.messages.push({ kind, counter, plaintext });
    if (kind === 3) this.controls.push(JSON.parse(plaintext.toString('utf8')) as Record<string, unknown>);
    if (kind === 2) this.events.push(JSON.parse(plaintext.toString('utf8')) as Record<string, unknown>);
    if (kind === 1) this.audio.push(plaintext);
  }
}

/** 16 kHz PCM16LE of a tone, `ms` long. */
export function tone(ms: number, rateHz = 16_000, frequencyHz = 440): Buffer {
  const samples = Math.round((rateHz * ms) / 1000);
  const pcm = Buffer.alloc(samples * 2);
  for (let index = 0; index < samples; index += 1) {
    pcm.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * frequencyHz * index) / rateHz)), index * 2);
  }
  return pcm;
}

export function peakOf(pcm: Buffer): number {
  let peak = 0;
  for (let offset = 0; offset + 1 < pcm.length; offset += 2) peak = Math.max(peak, Math.abs(pcm.readInt16LE(offset)));
  return peak;
}

/** One call the OpenAI-Realtime stand-in answered. */
export interface RealtimeCall {
  headers: http.IncomingHttpHeaders;
  body: { sdp: string; session: Record<string, unknown> };
  pc: RTCPeerConnection;
  channel: Promise<RTCDataChannel>;
  /** Events the call received on `oai-events`. */
  events: Reports<Record<string, unknown>>;
  /** Opus payloads the call received (each echoed back). */
  audio: Reports<Buffer>;
  /** When each payload arrived and when its echo was sent (performance.now()), for the benchmark. */
  arrivedAtMs: number[];
  echoedAtMs: number[];
}

/**
 * ChatGPT's Codex realtime calls endpoint on loopback, as the GPT-Live route's subscription path posts
 * to it (`POST /backend-api/codex/realtime/calls`, JSON `{sdp, session}`, bearer + `ChatGPT-Account-Id`),
 * answered 201 with a `Location` naming the call and the SDP answer — and a real werift peer behind it:
 * `session.created` on the events channel as it opens, every event answered with an `echo` event, and
 * every Opus packet sent back on its own track.
 */
export class OpenAiRealtimeStandIn {
  readonly calls = new Reports<RealtimeCall>();
  url = '';
  /** Decides each request: 201 (default) or a refusal status. */
  status = 201;
  private server: http.Server | null = null;
  private readonly peers: RTCPeerConnection[] = [];

  constructor(private readonly bearer: string) {}

  async start(): Promise<void> {
    this.server = http.createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        void this.answer(request, Buffer.concat(chunks).toString('utf8')).then(
          ({ status, headers, body }) => response.writeHead(status, headers).end(body),
          () => response.writeHead(500).end(),
        );
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    await Promise.all(this.peers.map((pc) => pc.close().catch(() => undefined)));
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private async answer(
    request: http.IncomingMessage,
    text: string,
  ): Promise<{ status: number; headers: Record<string, string>; body: string }> {
    if (!request.url?.startsWith('/backend-api/codex/realtime/calls')) return { status: 404, headers: {}, body: '' };
    if (request.headers.authorization !== `Bearer ${this.bearer}`) return { status: 401, headers: {}, body: '{}' };
    if (this.status !== 201) return { status: this.status, headers: {}, body: '{}' };
    const body = JSON.parse(text) as RealtimeCall['body'];
    const pc = new RTCPeerConnection({
      iceServers: [],
      bundlePolicy: 'max-bundle',
      iceUseIpv6: false,
      iceAdditionalHostAddresses: ['127.0.0.1'],
      iceFilterCandidatePair: (pair) =>
        pair.localCandidate.host === '127.0.0.1' && pair.remoteCandidate.host === '127.0.0.1',
      codecs: { audio: [new RTCRtpCodecParameters({ mimeType: 'audio/opus', clockRate: 48000, channels: 2 })] },
    });
    this.peers.push(pc);
    const events = new Reports<Record<string, unknown>>();
    const audio = new Reports<Buffer>();
    const arrivedAtMs: number[] = [];
    const echoedAtMs: number[] = [];
    const outbound = new MediaStreamTrack({ kind: 'audio' });
    let sequence = 0;
    let timestamp = 0;
    pc.onTrack.subscribe((track) => {
      track.onReceiveRtp.subscribe((packet) => {
        arrivedAtMs.push(performance.now());
        audio.push(packet.payload);
        // Echo: the same Opus frame straight back, on this call's own stream.
        const header = new RtpHeader({
          payloadType: packet.header.payloadType,
          sequenceNumber: sequence,
          timestamp,
          ssrc: 0x5151,
        });
        sequence = (sequence + 1) & 0xffff;
        timestamp = (timestamp + 960) >>> 0;
        echoedAtMs.push(performance.now());
        outbound.writeRtp(new RtpPacket(header, packet.payload));
      });
    });
    const channel = new Promise<RTCDataChannel>((resolve) =>
      pc.onDataChannel.subscribe((dc) => {
        const ready = (): void => {
          dc.send(JSON.stringify({ type: 'session.created', session: { id: 'sess_standin' } }));
          resolve(dc);
        };
        dc.onMessage.subscribe((data) => {
          const event = JSON.parse(data.toString()) as Record<string, unknown>;
          events.push(event);
          dc.send(JSON.stringify({ type: 'echo', of: event.type }));
        });
        if (dc.readyState === 'open') ready();
        else dc.stateChanged.subscribe((state) => state === 'open' && ready());
      }),
    );
    await pc.setRemoteDescription({ type: 'offer', sdp: body.sdp });
    const transceiver = pc.getTransceivers().find((t) => t.kind === 'audio');
    if (transceiver) {
      transceiver.setDirection('sendrecv');
      await transceiver.sender.replaceTrack(outbound);
    }
    await pc.setLocalDescription(await pc.createAnswer());
    this.calls.push({ headers: request.headers, body, pc, channel, events, audio, arrivedAtMs, echoedAtMs });
    return {
      status: 201,
      headers: { 'content-type': 'application/sdp', location: '/v1/realtime/calls/rtc_standin01' },
      body: pc.localDescription?.sdp ?? '',
    };
  }
}
