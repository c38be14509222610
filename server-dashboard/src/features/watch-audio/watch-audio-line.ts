import WebSocket, { type RawData } from 'ws';
import type { WatchAudioEngine } from '@conduit/contracts/dashboard/watch-audio';
import type { Timers } from '../../kernel/timers.js';
import type { Logger } from '../../log.js';
import type { ProfileScope } from '../../notifier/notifier.js';
import {
  EngineRefusal,
  readControl,
  type ControlErrorCode,
  type EngineSession,
  type EngineStarter,
  type StartRequest,
} from './engine-session.js';
import {
  classifyFrame,
  MAX_MESSAGE_BYTES,
  MAX_PLAIN_BYTES,
  MessageKind,
  RelayNotice,
  StreamCipher,
  type SealedKind,
} from './stream-seal.js';
import { WATCH_AUDIO_LIMITS } from './watch-audio-limits.js';

export const WATCH_AUDIO_VERSION_ERROR = 'This Hermes host speaks Watch audio version 1';

/** The grant a line serves: its id, root, relay and owner. The credential only goes in Authorization. */
export interface AudioGrant {
  id: string;
  root: Uint8Array;
  relayUrl: string;
  credential: string;
  profile: ProfileScope;
  engines: readonly WatchAudioEngine[];
}

/** What a line shares with the other lines of the host. */
export interface LineDeps {
  timers: Timers;
  log: Logger;
  userAgent: string;
  engines: Record<WatchAudioEngine, EngineStarter>;
  /** Takes one of the host's call slots; null when all are held. */
  takeCallSlot(): (() => void) | null;
}

/** The relay's host-side address of a grant's bridge: `ws(s)://<relay>/v1/watch-audio/{gid}/host`. */
export function bridgeUrl(relayUrl: string, grantId: string, side: 'host' | 'watch'): string {
  const base = relayUrl.trim().replace(/\/+$/, '').replace(/^http/, 'ws');
  return `${base}/v1/watch-audio/${grantId}/${side}`;
}

/** Relay refusals that mean the grant is over for good: nothing to redial. */
const FINAL_STATUSES = new Set([401, 403, 404, 410]);
/** Relay closes that mean the same: grant closed, or this socket replaced by a newer one of ours. */
const FINAL_CLOSES = new Set([4000, 4010]);

interface Stream {
  cipher: StreamCipher;
  session: EngineSession | undefined;
  engine: WatchAudioEngine | undefined;
  releaseSlot: (() => void) | undefined;
  /** A start is under way (a second one is busy). */
  starting: boolean;
  /** What the engine said before `started` went down, sent right after it so the Watch reads them in order. */
  held: { kind: SealedKind; plaintext: Uint8Array }[] | undefined;
  ended: boolean;
}

/**
 * One audio grant's line to the relay: this host dials the relay's gateway side of the grant's bridge
 * (the host opens no inbound route) and keeps it dialled until the grant closes. The Watch's connection
 * arrives as a relay notice and a clear hello naming its stream id; from then on every message is sealed
 * per stream (stream-seal.ts). A `start` opens the engine's session on this host; audio and the engine's
 * own events are carried both ways until `end`, the engine ending, the Watch going away, or the grant
 * closing.
 */
export class WatchAudioLine {
  private socket: WebSocket | undefined;
  private stream: Stream | undefined;
  private readonly usedSids: string[] = [];
  private closed = false;
  private failures = 0;
  private cancelRedial: (() => void) | undefined;
  private cancelKeepAlive: (() => void) | undefined;
  /** Resolves on each successful dial (tests and the grant route wait on it). */
  private connectedWaiters: (() => void)[] = [];
  connected = false;

  constructor(
    readonly grant: AudioGrant,
    private readonly deps: LineDeps,
  ) {}

  start(): void {
    this.dial();
  }

  /** Resolves once the relay took this host's socket. */
  whenConnected(): Promise<void> {
    if (this.connected) return Promise.resolve();
    return new Promise((resolve) => this.connectedWaiters.push(resolve));
  }

  /** The grant closed here: the Watch's session ends and the relay socket closes. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.cancelRedial?.();
    this.cancelKeepAlive?.();
    await this.endStream('grant_closed');
    const socket = this.socket;
    this.socket = undefined;
    if (socket && socket.readyState !== WebSocket.CLOSED) {
      const gone = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      // The relay, told the grant closed, closes both ends 4010 so the Watch hears why; hanging up first
      // would tell it host_offline instead. Only a relay that never does is hung up on.
      const hangUp = this.deps.timers.after(WATCH_AUDIO_LIMITS.closeGraceMs, () => socket.close(1000, 'grant closed'));
      const terminate = this.deps.timers.after(WATCH_AUDIO_LIMITS.closeGraceMs + 2000, () => socket.terminate());
      await gone;
      hangUp();
      terminate();
    }
  }

  private dial(): void {
    if (this.closed) return;
    const socket = new WebSocket(bridgeUrl(this.grant.relayUrl, this.grant.id, 'host'), {
      headers: { authorization: `Bearer ${this.grant.credential}`, 'user-agent': this.deps.userAgent },
      maxPayload: MAX_MESSAGE_BYTES,
      perMessageDeflate: false,
      followRedirects: false,
      handshakeTimeout: WATCH_AUDIO_LIMITS.relayConnectTimeoutMs,
    });
    this.socket = socket;
    let final = false;
    socket.on('unexpected-response', (_request, response) => {
      const status = response.statusCode ?? 0;
      response.resume();
      final = FINAL_STATUSES.has(status);
      this.deps.log.warn('watch audio relay refused the host', { profile: this.grant.profile.name, status });
      socket.terminate();
    });
    socket.on('error', () => undefined);
    socket.on('open', () => {
      this.failures = 0;
      this.connected = true;
      for (const waiter of this.connectedWaiters.splice(0)) waiter();
      this.keepAlive(socket);
    });
    socket.on('message', (data: RawData, isBinary: boolean) => {
      if (isBinary) this.receive(Buffer.isBuffer(data) ? data : Buffer.from(data as ArrayBuffer));
    });
    socket.on('close', (code: number) => {
      if (this.socket !== socket) return;
      this.connected = false;
      this.cancelKeepAlive?.();
      // Without the host's socket the relay closes the Watch (4503): its session is over too.
      void this.endStream('host_offline');
      if (this.closed || final || FINAL_CLOSES.has(code)) return;
      this.failures += 1;
      const waitMs = Math.min(
        WATCH_AUDIO_LIMITS.redialMaxMs,
        WATCH_AUDIO_LIMITS.redialBaseMs * 2 ** Math.min(10, this.failures - 1),
      );
      this.cancelRedial = this.deps.timers.after(waitMs, () => this.dial());
    });
  }

  private keepAlive(socket: WebSocket): void {
    this.cancelKeepAlive = this.deps.timers.after(WATCH_AUDIO_LIMITS.keepAliveMs, () => {
      if (socket.readyState !== WebSocket.OPEN) return;
      socket.ping();
      this.keepAlive(socket);
    });
  }

  private receive(frame: Buffer): void {
    const classified = classifyFrame(frame);
    switch (classified.type) {
      case 'notice':
        // Connected or gone, the previous Watch connection is over: a newcomer says hello afresh.
        if (classified.notice === RelayNotice.watchConnected || classified.notice === RelayNotice.watchGone) {
          void this.endStream('watch_gone');
        }
        return;
      case 'hello':
        this.hello(classified.sid, classified.version);
        return;
      case 'sealed':
        this.sealed(classified.message);
        return;
      case 'malformed':
        return;
    }
  }

  private hello(sid: Uint8Array, version: number): void {
    const key = Buffer.from(sid).toString('hex');
    // A reused sid is ignored (CRYPTO.md §4): its keys and counters were used already.
    if (this.usedSids.includes(key)) return;
    this.usedSids.push(key);
    if (this.usedSids.length > WATCH_AUDIO_LIMITS.sidsRemembered) this.usedSids.shift();
    void this.endStream('replaced');
    const stream: Stream = {
      cipher: new StreamCipher(this.grant.root, this.grant.id, sid),
      session: undefined,
      engine: undefined,
      releaseSlot: undefined,
      starting: false,
      held: undefined,
      ended: false,
    };
    this.stream = stream;
    if (version !== 1) {
      this.control(stream, { type: 'error', code: 'version', message: WATCH_AUDIO_VERSION_ERROR });
      stream.ended = true;
    }
  }

  private sealed(message: Uint8Array): void {
    const stream = this.stream;
    if (!stream || stream.ended) return;
    const opened = stream.cipher.open(message);
    // Forged, replayed or for another stream: dropped without a word, as the relay could have sent it.
    if (!opened) return;
    switch (opened.kind) {
      case MessageKind.audio:
        stream.session?.audio(Buffer.from(opened.plaintext));
        return;
      case MessageKind.event:
        stream.session?.event(Buffer.from(opened.plaintext).toString('utf8'));
        return;
      case MessageKind.control:
        this.controlFromWatch(stream, opened.plaintext);
        return;
    }
  }

  private controlFromWatch(stream: Stream, plaintext: Uint8Array): void {
    let payload: unknown;
    try {
      payload =
        plaintext.length <= WATCH_AUDIO_LIMITS.controlMaxBytes
          ? JSON.parse(Buffer.from(plaintext).toString('utf8'))
          : undefined;
    } catch {
      payload = undefined;
    }
    const control = readControl(payload);
    if (control.type === 'end') {
      void this.endSession(stream, 'ended');
      return;
    }
    if (control.type === 'invalid') {
      this.control(stream, {
        type: 'error',
        code: 'bad_request',
        message: 'The Watch sent a control message this host can’t read',
      });
      return;
    }
    void this.startSession(stream, control.start);
  }

  private async startSession(stream: Stream, request: StartRequest): Promise<void> {
    if (stream.session || stream.starting) {
      this.refuse(stream, 'busy', 'A call is already running on this Watch connection');
      return;
    }
    if (!this.grant.engines.includes(request.engine)) {
      this.refuse(
        stream,
        'unavailable',
        `${request.engine === 'gpt_live' ? 'GPT-Live' : 'Grok'} isn't ready on this host`,
      );
      return;
    }
    const release = this.deps.takeCallSlot();
    if (!release) {
      this.refuse(stream, 'busy', 'This host is already carrying as many Watch calls as it can');
      return;
    }
    stream.starting = true;
    stream.held = [];
    stream.engine = request.engine;
    let session: EngineSession;
    try {
      session = await this.deps.engines[request.engine](this.grant.profile, request, {
        audio: (pcm) => this.sendPcm(stream, pcm),
        event: (text) => this.sendEvent(stream, text),
        ended: (reason) => void this.endSession(stream, reason),
      });
    } catch (error) {
      release();
      stream.starting = false;
      stream.held = undefined;
      if (error instanceof EngineRefusal) {
        this.deps.log.warn('watch audio engine refused', {
          profile: this.grant.profile.name,
          engine: request.engine,
          code: error.code,
        });
        this.refuse(stream, error.code, error.message);
      } else {
        this.deps.log.error('watch audio engine failed', {
          profile: this.grant.profile.name,
          engine: request.engine,
          type: error instanceof Error ? error.name : typeof error,
        });
        this.refuse(stream, 'failed', "This host couldn't start the Watch call's audio");
      }
      return;
    }
    stream.starting = false;
    if (stream.ended || this.stream !== stream || this.closed) {
      // The Watch left (or the grant closed) while the provider was answering.
      release();
      await session.close();
      return;
    }
    stream.session = session;
    stream.releaseSlot = release;
    const started = session.started;
    this.deps.log.info('watch audio call started', { profile: this.grant.profile.name, engine: request.engine });
    this.control(stream, {
      type: 'started',
      engine: request.engine,
      ...(started.model !== undefined ? { model: started.model } : {}),
      voice: started.voice,
      input_rate: started.inputRateHz,
      output_rate: started.outputRateHz,
      briefing_applied: started.briefingApplied,
      greeting_applied: started.greetingApplied,
    });
    const held = stream.held ?? [];
    stream.held = undefined;
    for (const message of held) this.send(stream, message.kind, message.plaintext, true);
  }

  /** Ends the stream's session (if any) and tells the Watch `ended` when it can still hear it. */
  private async endSession(stream: Stream, reason: string): Promise<void> {
    const session = stream.session;
    const engine = stream.engine;
    stream.session = undefined;
    stream.releaseSlot?.();
    stream.releaseSlot = undefined;
    if (!session) return;
    if (this.stream === stream && !stream.ended && engine) this.control(stream, { type: 'ended', engine, reason });
    this.deps.log.info('watch audio call ended', { profile: this.grant.profile.name, engine, reason });
    await session.close();
  }

  /** The Watch connection is over (gone, replaced, or the line down): its call ends without a word to it. */
  private async endStream(reason: string): Promise<void> {
    const stream = this.stream;
    if (!stream) return;
    stream.ended = true;
    this.stream = undefined;
    await this.endSession(stream, reason);
  }

  private refuse(stream: Stream, code: ControlErrorCode, message: string): void {
    this.control(stream, { type: 'error', code, message });
  }

  private control(stream: Stream, payload: Record<string, unknown>): void {
    this.send(stream, 3, Buffer.from(JSON.stringify(payload), 'utf8'), false);
  }

  private sendEvent(stream: Stream, text: string): void {
    const bytes = Buffer.from(text, 'utf8');
    if (bytes.length > MAX_PLAIN_BYTES) return;
    this.send(stream, 2, bytes, false);
  }

  private sendPcm(stream: Stream, pcm: Buffer): void {
    // An odd tail never splits a sample: messages carry whole 16-bit samples.
    const limit = MAX_PLAIN_BYTES - (MAX_PLAIN_BYTES % 2);
    for (let offset = 0; offset < pcm.length; offset += limit) {
      this.send(stream, 1, pcm.subarray(offset, Math.min(pcm.length, offset + limit)), true);
    }
  }

  private send(stream: Stream, kind: SealedKind, plaintext: Uint8Array, droppable: boolean): void {
    const socket = this.socket;
    if (this.stream !== stream || stream.ended || !socket || socket.readyState !== WebSocket.OPEN) return;
    if (kind !== 3 && stream.held) {
      stream.held.push({ kind, plaintext: Uint8Array.from(plaintext) });
      return;
    }
    // Audio a stalled relay link can't take is dropped rather than played late; controls always go.
    if (droppable && socket.bufferedAmount > WATCH_AUDIO_LIMITS.relayBacklogBytes) return;
    socket.send(stream.cipher.seal(kind, plaintext), { binary: true });
  }
}
