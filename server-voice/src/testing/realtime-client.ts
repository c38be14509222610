/**
 * A realtime client on werift, as a WebRTC app would be: offer with one send/receive audio track and the
 * `oai-events` channel, multipart setup, Opus both ways. Used by the integration tests, the latency probe
 * and the benchmark, so they all exercise the gateway exactly like a real client.
 */
import {
  MediaStreamTrack,
  RTCPeerConnection,
  RtpHeader,
  RtpPacket,
  type RTCDataChannel,
  type RTCRtpTransceiver,
} from 'werift';
import type { ServerEvent } from '@conduit/contracts/voice/events';
import { FRAME_SAMPLES } from '../audio/types.js';
import { peerConfig } from '../media/call-peer.js';
import { OpusDecoder, OpusEncoder } from '../media/opus-codec.js';
import { warmUpWebrtc } from '../media/warm-up.js';

export interface ReceivedEvent {
  event: ServerEvent;
  atMs: number;
}

export interface ReceivedPacket {
  atMs: number;
  /** Peak absolute sample of the decoded frame (0 for comfort silence). */
  peak: number;
  pcm: Int16Array;
}

export interface ConnectOptions {
  baseUrl: string;
  apiKey: string;
  session?: Record<string, unknown>;
  /** Keep decoded inbound PCM (memory grows 96 kB per second). */
  keepPcm?: boolean;
  /** Decode inbound Opus to measure levels (default true; the benchmark only needs arrival times). */
  decode?: boolean;
  path?: string;
  now?: () => number;
  /** How long to wait for the events channel after the answer (default 10 s). */
  openTimeoutMs?: number;
  /** Start the live microphone (silence until `speak`) right after connecting; default true. */
  microphone?: boolean;
}

export class RealtimeClient {
  readonly events: ReceivedEvent[] = [];
  readonly packets: ReceivedPacket[] = [];
  callId = '';
  private readonly listeners = new Set<() => void>();
  private readonly encoder = new OpusEncoder();
  private readonly decoder = new OpusDecoder();
  private sequence = 0;
  private timestamp = 0;
  private sending: NodeJS.Timeout | null = null;
  private loopPayloads: Buffer[] | null = null;
  private loopIndex = 0;
  private phaseTimer: NodeJS.Timeout | null = null;
  private readonly micQueue: { frame: Int16Array; done?: () => void; sent?: (atMs: number) => void }[] = [];
  private channelOpen!: Promise<void>;
  private constructor(
    readonly pc: RTCPeerConnection,
    private readonly track: MediaStreamTrack,
    private readonly transceiver: RTCRtpTransceiver,
    readonly channel: RTCDataChannel,
    private readonly options: ConnectOptions,
  ) {}

  private get now(): number {
    return (this.options.now ?? (() => performance.now()))();
  }

  /**
   * Dials the gateway. A dial whose events channel does not open in time is retried once as a new call (and
   * reported on stderr): werift's DTLS handshake occasionally stalls on an overloaded machine, and a client
   * redials as a browser user would.
   */
  static async connect(options: ConnectOptions): Promise<RealtimeClient> {
    try {
      return await RealtimeClient.dial(options);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('the events channel did not open')) throw error;
      console.error(`realtime client: ${error.message}; redialling once`);
      return RealtimeClient.dial(options);
    }
  }

  private static async dial(options: ConnectOptions): Promise<RealtimeClient> {
    await warmUpWebrtc();
    const pc = new RTCPeerConnection(peerConfig({ iceServers: [], loopbackCandidate: true, loopbackOnly: true }));
    const track = new MediaStreamTrack({ kind: 'audio' });
    const transceiver = pc.addTransceiver(track, { direction: 'sendrecv' });
    const channel = pc.createDataChannel('oai-events');
    const client = new RealtimeClient(pc, track, transceiver, channel, options);
    client.channelOpen = new Promise((resolve) =>
      channel.stateChanged.subscribe((state) => {
        if (state === 'open') resolve();
      }),
    );
    channel.onMessage.subscribe((message) => {
      client.events.push({ event: JSON.parse(message.toString()) as ServerEvent, atMs: client.now });
      for (const listener of client.listeners) listener();
    });
    pc.onTrack.subscribe((remote) => {
      remote.onReceiveRtp.subscribe((packet) => {
        if (options.decode === false) {
          client.packets.push({ atMs: client.now, peak: 0, pcm: new Int16Array(0) });
          return;
        }
        let pcm: Int16Array;
        try {
          pcm = client.decoder.decode(packet.payload);
        } catch {
          return;
        }
        let peak = 0;
        for (const sample of pcm) peak = Math.max(peak, Math.abs(sample));
        client.packets.push({ atMs: client.now, peak, pcm: options.keepPcm ? pcm : new Int16Array(0) });
        for (const listener of client.listeners) listener();
      });
    });
    await pc.setLocalDescription(await pc.createOffer());
    const form = new FormData();
    form.set('sdp', pc.localDescription?.sdp ?? '');
    form.set('session', JSON.stringify(options.session ?? { type: 'realtime' }));
    const response = await fetch(`${options.baseUrl}${options.path ?? '/v1/realtime/calls'}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${options.apiKey}` },
      body: form,
    });
    const answer = await response.text();
    if (response.status !== 201) {
      await pc.close();
      throw new Error(`call setup answered ${response.status}: ${answer}`);
    }
    client.callId = (response.headers.get('location') ?? '').split('/').pop() ?? '';
    await pc.setRemoteDescription({ type: 'answer', sdp: answer });
    const timeout = new Promise<never>((_, reject) =>
      setTimeout(
        () => reject(new Error(`the events channel did not open within ${options.openTimeoutMs ?? 10_000} ms`)),
        options.openTimeoutMs ?? 10_000,
      ).unref(),
    );
    try {
      await Promise.race([client.channelOpen, timeout]);
    } catch (error) {
      await pc.close();
      throw error;
    }
    if (options.microphone !== false) client.startMicrophone();
    return client;
  }

  send(event: Record<string, unknown> | string): void {
    this.channel.send(typeof event === 'string' ? event : JSON.stringify(event));
  }

  /** Resolves with the first event (from index `from`) that matches, or rejects after `timeoutMs`. */
  waitForEvent(
    predicate: (event: ServerEvent) => boolean,
    options: { timeoutMs?: number; from?: number } = {},
  ): Promise<ReceivedEvent> {
    return this.waitUntil(
      () => this.events.slice(options.from ?? 0).find((received) => predicate(received.event)),
      options.timeoutMs ?? 10_000,
      'event',
    );
  }

  waitForType(type: ServerEvent['type'], options: { timeoutMs?: number; from?: number } = {}): Promise<ReceivedEvent> {
    return this.waitForEvent((event) => event.type === type, options);
  }

  /** Waits until `check` returns a value. */
  waitUntil<T>(check: () => T | undefined, timeoutMs: number, what = 'condition'): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const attempt = () => {
        const value = check();
        if (value === undefined) return false;
        this.listeners.delete(attempt);
        clearTimeout(timer);
        resolve(value);
        return true;
      };
      const timer = setTimeout(() => {
        this.listeners.delete(attempt);
        reject(new Error(`timed out waiting for ${what}; events: ${this.types().join(', ')}`));
      }, timeoutMs);
      if (!attempt()) this.listeners.add(attempt);
    });
  }

  types(): string[] {
    return this.events.map((received) => received.event.type);
  }

  /**
   * Starts the microphone: from now on one 20 ms frame goes out every 20 ms (wall-clock paced, catching up
   * if a timer fires late), silence unless `speak` queued audio — as a browser sends a live microphone.
   */
  startMicrophone(): void {
    if (this.sending) return;
    const started = this.now;
    let sent = 0;
    this.sending = setInterval(() => {
      const due = Math.floor((this.now - started) / 20) + 1;
      while (sent < due) {
        sent += 1;
        if (this.loopPayloads) {
          this.sendRawPayload(this.loopPayloads[this.loopIndex++ % this.loopPayloads.length] as Buffer);
          continue;
        }
        const next = this.micQueue.shift();
        this.sendFrame(next?.frame ?? new Int16Array(FRAME_SAMPLES));
        next?.sent?.(this.now);
        next?.done?.();
      }
    }, 20);
  }

  /**
   * Queues PCM (48 kHz mono) on the microphone; resolves when its last frame was sent. `onSent` gets each
   * frame's index and send time (the probe times from the last voiced frame).
   */
  speak(pcm: Int16Array, onSent?: (frameIndex: number, atMs: number) => void): Promise<void> {
    this.startMicrophone();
    return new Promise((resolve) => {
      for (let offset = 0; offset < pcm.length; offset += FRAME_SAMPLES) {
        const frame = new Int16Array(FRAME_SAMPLES);
        frame.set(pcm.subarray(offset, offset + FRAME_SAMPLES));
        const last = offset + FRAME_SAMPLES >= pcm.length;
        const index = offset / FRAME_SAMPLES;
        this.micQueue.push({
          frame,
          ...(last ? { done: resolve } : {}),
          ...(onSent ? { sent: (atMs: number) => onSent(index, atMs) } : {}),
        });
      }
      if (pcm.length === 0) resolve();
    });
  }

  /**
   * Replaces the microphone's audio with pre-encoded Opus payloads played in a loop (the benchmark: many
   * clients send continuous speech without paying an encoder each).
   */
  loopOpus(payloads: Buffer[], options: { phaseMs?: number } = {}): void {
    this.loopPayloads = payloads;
    // Independent clients send at independent phases; many clients started in one loop would otherwise share
    // one timer and reach the gateway as one burst of packets every 20 ms.
    if (options.phaseMs) this.phaseTimer = setTimeout(() => this.startMicrophone(), options.phaseMs);
    else this.startMicrophone();
  }

  /** Sends one 20 ms frame now. */
  sendFrame(frame: Int16Array): void {
    const payloadType = this.transceiver.codecs[0]?.payloadType ?? 111;
    const header = new RtpHeader({
      payloadType,
      sequenceNumber: this.sequence,
      timestamp: this.timestamp >>> 0,
      ssrc: 0x1234,
      marker: this.sequence === 0,
    });
    this.sequence = (this.sequence + 1) & 0xffff;
    this.timestamp = (this.timestamp + FRAME_SAMPLES) >>> 0;
    this.track.writeRtp(new RtpPacket(header, this.encoder.encode(frame)));
  }

  /** Sends an arbitrary RTP payload (malformed-media tests). */
  sendRawPayload(payload: Buffer): void {
    const payloadType = this.transceiver.codecs[0]?.payloadType ?? 111;
    const header = new RtpHeader({
      payloadType,
      sequenceNumber: this.sequence,
      timestamp: this.timestamp,
      ssrc: 0x1234,
    });
    this.sequence = (this.sequence + 1) & 0xffff;
    this.timestamp = (this.timestamp + FRAME_SAMPLES) >>> 0;
    this.track.writeRtp(new RtpPacket(header, payload));
  }

  /** Index of the first inbound packet after `atMs` whose peak passes `threshold` (audible speech). */
  firstAudiblePacket(afterMs: number, threshold = 500): ReceivedPacket | undefined {
    return this.packets.find((packet) => packet.atMs >= afterMs && packet.peak > threshold);
  }

  async close(): Promise<void> {
    if (this.phaseTimer) clearTimeout(this.phaseTimer);
    if (this.sending) clearInterval(this.sending);
    await this.pc.close();
    this.encoder.close();
    this.decoder.close();
  }
}
