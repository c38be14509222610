import { fork, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Logger } from '../log.js';
import type { OutboundRoute } from './call-peer.js';
import type { FrameClock, PacingStats } from './frame-clock.js';
import type { OpusEncoder } from './opus-codec.js';
import { FrameBudget, FramePacer, type OutboundAudio } from './paced-output.js';
import type { FromSender, SenderOp, ToSender } from './sender-protocol.js';
import type { ThreadScheduling } from './thread-priority.js';

/** How long the sender process may take to start (it loads werift) before the gateway gives up on it. */
const SENDER_START_TIMEOUT_MS = 20_000;

/**
 * The only environment variables the media sender process is given; everything else stays in the gateway.
 * The process holds call sockets and SRTP keys for as long as calls last but needs no credential, so the
 * gateway's API key, the proxy signing key, provider and agent keys, and whatever else the operator's
 * environment carries never reach it (nor its /proc/<pid>/environ, nor a dump of it).
 */
export const SENDER_ENVIRONMENT_NAMES = [
  // `chrt`, run to ask for real-time scheduling, is found on the PATH.
  'PATH',
  // tsx (when run from sources, as the image does) keeps its compile cache in the temporary folder.
  'TMPDIR',
  // Node's own options the operator set for the gateway (heap limits, diagnostics) apply to both processes.
  'NODE_OPTIONS',
] as const;

/** The media sender's environment: the allow-listed names present in `env`, nothing else. */
export function senderEnvironment(env: NodeJS.ProcessEnv): Record<string, string> {
  const picked: Record<string, string> = {};
  for (const name of SENDER_ENVIRONMENT_NAMES) {
    const value = env[name];
    if (value !== undefined) picked[name] = value;
  }
  return picked;
}

/** Where a call's output learns what the sender did. */
interface OutputLink {
  onSent(epoch: number, frames: number, sentAgoMs: number): void;
  onLost(reason: string): void;
}

/**
 * The gateway's side of the media sender process (sender-process.ts). Pacing on one core is only as even as
 * the event loop that runs it, and the gateway's loop also decodes, detects, transcribes, talks to agents
 * and collects garbage — V8 pauses of 5–20 ms at 40 calls were behind most late frames. The sender process
 * does nothing but send: the gateway encodes each call's reply frames as they are produced and hands them
 * over (at most 500 ms ahead), with the call's UDP socket handle and SRTP keys once the call connects.
 *
 * If the process dies, the calls it was sending for end (their media state went with it) and the next call
 * starts a new one.
 */
export class MediaSender {
  private child: ChildProcess | null = null;
  private starting: Promise<ChildProcess> | null = null;
  private readonly links = new Map<string, OutputLink>();
  private outbox: SenderOp[] = [];
  private closed = false;
  private lastPacing: (FromSender & { t: 'pacing' }) | null = null;
  /** The running process: its pid and the scheduling its sending thread got. */
  started: ({ pid: number } & ThreadScheduling) | null = null;

  constructor(
    private readonly logger: Logger,
    private readonly options: { lowerHelperThreads: boolean; realtimePriority: number },
  ) {}

  /** Starts the process and waits until it is ready (start-up fails loudly rather than at the first call). */
  async start(): Promise<void> {
    await this.ensureChild();
  }

  /** A call's outbound audio, sent by this process once `attach` hands over the call's route. */
  output(
    callId: string,
    encoder: OpusEncoder,
    events: { onSpeechSent: (sentAgoMs: number) => void; onLost: (reason: string) => void },
  ): RemoteOutput {
    return new RemoteOutput(this, callId, encoder, events);
  }

  /** Pacing figures the process reported last (then forgotten), for the gateway's `pacing` log line. */
  takePacing(): { calls: number; stats: PacingStats } | null {
    const last = this.lastPacing;
    this.lastPacing = null;
    return last ? { calls: last.calls, stats: last.stats } : null;
  }

  /** @internal RemoteOutput: registers the call with the process, its socket passed as the message's handle. */
  async attach(callId: string, route: OutboundRoute, silence: Buffer, link: OutputLink): Promise<void> {
    const child = await this.ensureChild();
    if (this.closed) throw new Error('the media sender is closed');
    this.links.set(callId, link);
    const { socket, ...rest } = route;
    const message: ToSender = { t: 'add', id: callId, route: rest, silence };
    await new Promise<void>((resolve, reject) => {
      child.send(message, socket as never, (error) => (error ? reject(error) : resolve()));
    });
  }

  /** @internal RemoteOutput: queues an operation; everything queued in one turn of the loop goes in one message. */
  enqueue(op: SenderOp): void {
    if (op[0] === 'remove') this.links.delete(op[1]);
    this.outbox.push(op);
    if (this.outbox.length === 1) queueMicrotask(() => this.flush());
  }

  private flush(): void {
    if (this.outbox.length === 0) return;
    const ops = this.outbox;
    this.outbox = [];
    const child = this.child;
    if (!child?.connected) return;
    const message: ToSender = { t: 'ops', ops };
    child.send(message, undefined, undefined, () => undefined);
  }

  private ensureChild(): Promise<ChildProcess> {
    if (this.child?.connected) return Promise.resolve(this.child);
    this.starting ??= this.spawn().finally(() => (this.starting = null));
    return this.starting;
  }

  private spawn(): Promise<ChildProcess> {
    const here = fileURLToPath(import.meta.url);
    const extension = path.extname(here);
    const entry = path.join(path.dirname(here), `sender-process${extension}`);
    // From TypeScript sources (tsx, the tests) the child needs the same loader; the built package does not.
    const execArgv =
      extension === '.ts' ? ['--import', pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href] : [];
    const args = [`--rt-priority=${this.options.realtimePriority}`];
    if (this.options.lowerHelperThreads) args.push('--lower-helper-threads');
    const child = fork(entry, args, {
      serialization: 'advanced',
      execArgv: [...execArgv, '--single-threaded-gc'],
      env: senderEnvironment(process.env),
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`the media sender process did not start within ${SENDER_START_TIMEOUT_MS / 1000} s`));
      }, SENDER_START_TIMEOUT_MS);
      // Start-up failures reject; later ones (a signal that could not be delivered) are only logged, the
      // process's exit is what ends calls.
      child.on('error', (error) => {
        clearTimeout(timer);
        reject(error);
        this.logger.warn('media_sender_error', { message: error.message });
      });
      child.on('message', (message: FromSender) => {
        if (message.t === 'ready') {
          clearTimeout(timer);
          this.child = child;
          this.started = { pid: message.pid, ...message.scheduling };
          this.logger.info('media_sender_started', { ...this.started });
          resolve(child);
        } else this.onMessage(message);
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`the media sender process exited during start-up (${signal ?? `code ${code}`})`));
        this.onExit(child, code, signal);
      });
    });
  }

  private onMessage(message: FromSender): void {
    if (message.t === 'sent') {
      const ago = Math.max(0, performance.timeOrigin + performance.now() - message.at);
      for (const [id, epoch, frames] of message.entries) this.links.get(id)?.onSent(epoch, frames, ago);
    } else if (message.t === 'failed') {
      this.logger.warn('media_sender_call_failed', { call_id: message.id, message: message.message });
      this.links.get(message.id)?.onLost('media sender failed');
    } else if (message.t === 'pacing') {
      this.lastPacing = message;
    }
  }

  private onExit(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (this.child !== child) return;
    this.child = null;
    if (this.closed) return;
    const lost = [...this.links.values()];
    this.links.clear();
    this.outbox = [];
    this.logger.warn('media_sender_exited', { code, signal, calls: lost.length });
    for (const link of lost) link.onLost('media sender exited');
  }

  /** Stops the process (after the calls closed). */
  async close(): Promise<void> {
    this.closed = true;
    this.flush();
    const child = this.child;
    this.child = null;
    if (!child) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.disconnect();
    const timer = setTimeout(() => child.kill('SIGKILL'), 2000);
    await exited;
    clearTimeout(timer);
  }
}

/**
 * A call's outbound audio when the media sender process paces it. Frames are encoded here as they are
 * written and handed over at once; the process sends one per 20 ms tick (silence when none is queued) and
 * reports what it sent, which is what `drained()`, backpressure and the first-frame callback go by. Before
 * the call connects (no route yet), up to 500 ms wait here and go over with the route.
 */
export class RemoteOutput implements OutboundAudio {
  readonly frameSamples: number;
  /** Frames handed over (or held) in this epoch that the process has not reported sent. */
  private readonly budget = new FrameBudget();
  private held: Buffer[] | null = [];
  private attached = false;
  /** Set when the call's route cannot be handed over (a TURN-relayed pair): paced here instead. */
  private local: FramePacer<Buffer> | null = null;
  private stopped = false;

  constructor(
    private readonly sender: MediaSender,
    readonly callId: string,
    private readonly encoder: OpusEncoder,
    private readonly events: { onSpeechSent: (sentAgoMs: number) => void; onLost: (reason: string) => void },
  ) {
    this.frameSamples = encoder.frameSamples;
  }

  get epoch(): number {
    return this.budget.epoch;
  }

  get queuedFrames(): number {
    return this.budget.queued;
  }

  /** Hands the call over to the sender process once connected. */
  async attach(route: OutboundRoute): Promise<void> {
    if (this.attached || this.stopped) return;
    this.attached = true;
    const silence = this.encoder.silencePacket();
    await this.sender.attach(this.callId, route, silence, {
      onSent: (epoch, frames, ago) => this.onSent(epoch, frames, ago),
      onLost: (reason) => this.events.onLost(reason),
    });
    if (this.stopped) {
      // The call ended while it was being handed over: the process lets go of it at once.
      this.held = null;
      this.sender.enqueue(['remove', this.callId]);
      return;
    }
    if (this.budget.epoch > 0) this.sender.enqueue(['clear', this.callId, this.budget.epoch]);
    for (const packet of this.held ?? []) this.sender.enqueue(['frame', this.callId, packet]);
    this.held = null;
  }

  /**
   * Paces the call in this process instead, for a call whose route another process cannot use (a TURN-relayed
   * pair wraps every packet in a TURN message): `send` is the call's own RTP sender.
   */
  attachLocal(clock: FrameClock, send: (packet: Buffer) => void): void {
    if (this.attached || this.stopped) return;
    this.attached = true;
    const pacer = new FramePacer<Buffer>(
      clock,
      (packet, info) => {
        send(packet);
        if (!info.silent) this.onSent(this.budget.epoch, 1, 0);
      },
      this.encoder.silencePacket(),
    );
    this.local = pacer;
    pacer.start();
    const held = this.held ?? [];
    this.held = null;
    for (const packet of held) void pacer.write(packet, pacer.epoch);
  }

  async write(frame: Int16Array, epoch: number): Promise<boolean> {
    if (frame.length !== this.frameSamples) throw new RangeError(`frames are ${this.frameSamples} samples`);
    // stop() clears, so a producer waiting for room when the call ends gives up too.
    while (this.budget.full && epoch === this.budget.epoch) await this.budget.waitForRoom();
    if (epoch !== this.budget.epoch || this.stopped) return false;
    // Nothing of this epoch is waiting: the sender is sending silence, so the reply starts from a fresh encoder
    // state, as the receiver's decoder (fed silence meanwhile) expects.
    if (this.budget.queued === 0) this.encoder.reset();
    const packet = this.encoder.encode(frame);
    this.budget.added();
    if (this.held) this.held.push(packet);
    else if (this.local) void this.local.write(packet, this.local.epoch);
    else this.sender.enqueue(['frame', this.callId, packet]);
    return true;
  }

  clear(): void {
    this.budget.clear();
    if (this.held) this.held.length = 0;
    else if (this.local) this.local.clear();
    else if (!this.stopped) this.sender.enqueue(['clear', this.callId, this.budget.epoch]);
  }

  drained(): Promise<void> {
    return this.budget.drained();
  }

  /** The call ended: the process stops sending and lets go of the socket. */
  stop(): void {
    if (this.stopped) return;
    this.clear();
    this.stopped = true;
    if (this.local) this.local.stop();
    else if (this.attached && !this.held) this.sender.enqueue(['remove', this.callId]);
  }

  private onSent(epoch: number, frames: number, sentAgoMs: number): void {
    if (epoch !== this.budget.epoch || this.stopped) return;
    this.budget.removed(frames);
    this.events.onSpeechSent(sentAgoMs);
  }
}
