/**
 * The Relay agent WebSocket (PROTOCOL.md §2): one `RelaySocket` owns the reconnect loop, and each
 * connection runs the frame protocol — ready once, contiguous events committed before their
 * cumulative ACK, FULL sync on demand, a client-owned `{"type":"ping"}` heartbeat.
 *
 * Commit batching: event frames that arrive in the same I/O turn are committed in ONE SQLite
 * transaction, then one ACK per event is sent. Every ACK still follows the commit of its event;
 * batching only shares the fsync between frames that were already in the socket buffer.
 */
import WebSocket from 'ws';
import type { IncomingMessage } from 'node:http';
import { PING_BYTES, serverFrame, type ReadyFrame, type ServerFrame } from '@conduit/contracts/messenger/frames';
import type { WebhookEnvelope } from '@conduit/contracts/messenger/envelope';
import { backoffDelayMs } from './backoff.js';
import type { Clock, Logger, Random, TimerHandle } from './clock.js';
import { MessengerFatalError, RelayFullSyncError, WEBHOOK_CONFIGURED_MESSAGE } from './errors.js';
import { RelayStateBindingError } from './state-binding.js';

/** Client heartbeat period. The reference adapter uses a fixed 30 s regardless of ready.heartbeat_interval_ms. */
export const HEARTBEAT_INTERVAL_MS = 30_000;
/** No pong for this long means the connection is dead (local heartbeat_timeout, reconnect). */
export const HEARTBEAT_DEAD_AFTER_MS = 60_000;
/** How long a fresh connection may take to say `ready`. */
export const READY_TIMEOUT_MS = 30_000;

export interface CommittedEvent {
  sequence: bigint;
  envelope: WebhookEnvelope;
}

/** Where the socket puts what it receives. */
export interface TransportSink {
  /** Commits events durably (one transaction); throws if the commit failed. Synchronous on purpose. */
  commit(events: CommittedEvent[]): void;
  /** Fetches and atomically stores a FULL-sync snapshot through `through`; throws RelayFullSyncError. */
  fullSync(through: bigint): Promise<void>;
  /** Called after a commit so the inbox processor can wake up. */
  committed?(): void;
}

export interface RelaySocketOptions {
  websocketUrl: string;
  agentToken: string;
  sink: TransportSink;
  clock: Clock;
  random: Random;
  log: Logger;
  /** Observes every frame we send (tests and diagnostics). */
  onSend?: (text: string) => void;
  /** Observes every text frame we receive, before it is handled (tests and diagnostics). */
  onReceive?: (text: string) => void;
  onReady?: (frame: ReadyFrame) => void;
}

type Outcome =
  { kind: 'reconnect'; reason: string } | { kind: 'fatal'; error: MessengerFatalError } | { kind: 'stopped' };

/** Classifies an HTTP status of a refused upgrade. */
export function classifyUpgradeStatus(status: number): Outcome {
  if (status === 409)
    return { kind: 'fatal', error: new MessengerFatalError('relay_webhook_configured', WEBHOOK_CONFIGURED_MESSAGE) };
  if (status === 401) {
    return {
      kind: 'fatal',
      error: new MessengerFatalError('relay_unauthorized', 'Relay rejected the Agent Token (401)'),
    };
  }
  if (status === 408 || status === 429 || status >= 500) return { kind: 'reconnect', reason: `upgrade_http_${status}` };
  return {
    kind: 'fatal',
    error: new MessengerFatalError(`relay_websocket_http_${status}`, `Relay refused the WebSocket upgrade (${status})`),
  };
}

/** Classifies a close code: any 4400–4499 except 4408 is the server's terminal policy. */
export function classifyCloseCode(code: number, reason: string): Outcome {
  if (code === 4401) {
    return {
      kind: 'fatal',
      error: new MessengerFatalError(
        'relay_unauthorized',
        'Relay closed the WebSocket: token invalid or revoked (4401)',
      ),
    };
  }
  if (code === 4410)
    return { kind: 'fatal', error: new MessengerFatalError('relay_webhook_configured', WEBHOOK_CONFIGURED_MESSAGE) };
  if (code >= 4400 && code <= 4499 && code !== 4408) {
    return {
      kind: 'fatal',
      error: new MessengerFatalError(`relay_websocket_server_policy_${code}`, `server_policy_${code}: ${reason}`),
    };
  }
  return { kind: 'reconnect', reason: `close_${code}` };
}

export class RelaySocket {
  private readonly o: RelaySocketOptions;
  private attempt = 0;
  private stopping = false;
  private current: Connection | null = null;
  private wake: (() => void) | null = null;
  /** Number of connections opened (diagnostics). */
  connections = 0;

  constructor(options: RelaySocketOptions) {
    this.o = options;
  }

  /** Runs until stop() (resolves) or a terminal condition (rejects with MessengerFatalError). */
  async run(): Promise<void> {
    while (!this.stopping) {
      this.connections += 1;
      const conn = new Connection(this.o, () => {
        this.attempt = 0;
      });
      this.current = conn;
      const outcome = await conn.done;
      this.current = null;
      if (outcome.kind === 'stopped' || this.stopping) return;
      if (outcome.kind === 'fatal') throw outcome.error;
      this.attempt += 1;
      const delay = backoffDelayMs(this.attempt, this.o.random);
      this.o.log.warn('relay websocket reconnecting', {
        reason: outcome.reason,
        attempt: this.attempt,
        delay_ms: Math.round(delay),
      });
      await new Promise<void>((resolve) => {
        const t = this.o.clock.setTimeout(() => {
          this.wake = null;
          resolve();
        }, delay);
        this.wake = () => {
          t.cancel();
          this.wake = null;
          resolve();
        };
      });
    }
  }

  stop(): void {
    this.stopping = true;
    this.current?.stop();
    this.wake?.();
  }
}

/** One WebSocket connection and its protocol state. */
class Connection {
  readonly done: Promise<Outcome>;
  private resolveDone!: (o: Outcome) => void;
  private finished = false;
  private readonly ws: WebSocket;
  private readonly o: RelaySocketOptions;
  private ready: ReadyFrame | null = null;
  /** Highest sequence committed and acknowledged on this connection. */
  private acceptedThrough = 0n;
  /** Highest sequence received (queued for commit) on this connection. */
  private receivedThrough = 0n;
  private fullSyncExpected: bigint | null = null;
  private fullSyncRunning = false;
  private queue: { sequence: bigint; envelope: WebhookEnvelope }[] = [];
  private flushScheduled = false;
  private lastPongAt: number;
  private readonly timers: TimerHandle[] = [];

  constructor(
    options: RelaySocketOptions,
    private readonly onReadyReset: () => void,
  ) {
    this.o = options;
    this.done = new Promise((r) => (this.resolveDone = r));
    this.lastPongAt = options.clock.now();
    this.ws = new WebSocket(options.websocketUrl, {
      headers: { Authorization: `Bearer ${options.agentToken}` },
      perMessageDeflate: false,
      // Library-level protocol pings stay off: the heartbeat is the JSON ping Relay's edge answers.
      autoPong: false,
      followRedirects: false,
    });
    this.ws.on('unexpected-response', (_req, res: IncomingMessage) => {
      res.resume();
      this.finish(classifyUpgradeStatus(res.statusCode ?? 0));
      this.ws.terminate();
    });
    this.ws.on('open', () => this.onOpen());
    this.ws.on('message', (data, isBinary) => {
      if (isBinary) return this.protocolError('binary frame');
      this.onText(Buffer.isBuffer(data) ? data.toString('utf8') : Buffer.concat(data as Buffer[]).toString('utf8'));
    });
    this.ws.on('close', (code, reason) => {
      this.finish(
        code === 1005 || code === 1006
          ? { kind: 'reconnect', reason: `close_${code}` }
          : classifyCloseCode(code, reason.toString('utf8')),
      );
    });
    // A network error (no HTTP status) is retryable; 'close' follows and carries the outcome.
    this.ws.on('error', (err) => {
      this.o.log.warn('relay websocket error', { error: err.message });
      this.finish({ kind: 'reconnect', reason: 'network_error' });
    });
    this.timers.push(
      options.clock.setTimeout(() => {
        if (this.ready === null) this.close({ kind: 'reconnect', reason: 'ready_timeout' }, 1000);
      }, READY_TIMEOUT_MS),
    );
  }

  stop(): void {
    this.close({ kind: 'stopped' }, 1000);
  }

  private onOpen(): void {
    this.lastPongAt = this.o.clock.now();
    this.timers.push(
      this.o.clock.setInterval(() => {
        if (this.o.clock.now() - this.lastPongAt >= HEARTBEAT_DEAD_AFTER_MS) {
          // The peer is silent: no close handshake would complete, so drop the socket outright.
          this.finish({ kind: 'reconnect', reason: 'heartbeat_timeout' });
          this.ws.terminate();
          return;
        }
        this.send(PING_BYTES);
      }, HEARTBEAT_INTERVAL_MS),
    );
  }

  private send(text: string): void {
    if (this.ws.readyState !== WebSocket.OPEN) return;
    this.o.onSend?.(text);
    this.ws.send(text);
  }

  private onText(text: string): void {
    if (this.finished) return;
    this.o.onReceive?.(text);
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      return this.protocolError('frame is not JSON');
    }
    const parsed = serverFrame.safeParse(raw);
    if (!parsed.success) {
      const type = typeof raw === 'object' && raw !== null ? (raw as Record<string, unknown>)['type'] : undefined;
      return this.protocolError(`invalid ${typeof type === 'string' ? type : 'unknown'} frame`);
    }
    this.onFrame(parsed.data);
  }

  private onFrame(frame: ServerFrame): void {
    switch (frame.type) {
      case 'pong':
        this.lastPongAt = this.o.clock.now();
        return;
      case 'ping':
        // Legacy server ping: the locked contract says Relay never sends one; answer it anyway.
        this.send('{"type":"pong"}');
        return;
      case 'ready': {
        if (this.ready !== null) return this.protocolError('second ready frame');
        this.ready = frame;
        this.acceptedThrough = BigInt(frame.acked_through);
        this.receivedThrough = this.acceptedThrough;
        this.fullSyncExpected = frame.full_sync_required ? BigInt(frame.full_sync_through ?? '0') : null;
        this.onReadyReset();
        this.o.onReady?.(frame);
        this.o.log.info('relay websocket ready', {
          connection_id: frame.connection_id,
          acked_through: frame.acked_through,
          full_sync_required: frame.full_sync_required,
        });
        return;
      }
      case 'event': {
        if (this.ready === null) return this.protocolError('event before ready');
        if (this.fullSyncExpected !== null || this.fullSyncRunning) return this.protocolError('event during FULL sync');
        const sequence = BigInt(frame.sequence);
        if (sequence !== this.receivedThrough + 1n) {
          return this.protocolError(`event sequence ${frame.sequence} is not contiguous with ${this.receivedThrough}`);
        }
        this.receivedThrough = sequence;
        this.queue.push({ sequence, envelope: frame.event });
        if (!this.flushScheduled) {
          this.flushScheduled = true;
          setImmediate(() => this.flush());
        }
        return;
      }
      case 'full_sync': {
        if (this.ready === null || this.fullSyncExpected === null)
          return this.protocolError('unexpected full_sync frame');
        if (BigInt(frame.through_sequence) !== this.fullSyncExpected) {
          return this.protocolError('full_sync through_sequence differs from ready.full_sync_through');
        }
        void this.runFullSync(this.fullSyncExpected);
        return;
      }
      case 'error': {
        this.o.log.warn('relay websocket error frame', {
          code: frame.code,
          message: frame.message,
          retryable: frame.retryable,
        });
        if (!frame.retryable) {
          this.close(
            {
              kind: 'fatal',
              error: new MessengerFatalError('relay_websocket_terminal', `Relay error ${frame.code}: ${frame.message}`),
            },
            1000,
          );
        } else {
          this.close({ kind: 'reconnect', reason: `error_${frame.code}` }, 1000);
        }
        return;
      }
      case 'disconnect': {
        if (frame.reason === 'heartbeat_timeout' || frame.reason === 'restart') {
          this.close({ kind: 'reconnect', reason: `disconnect_${frame.reason}` }, 1000);
        } else if (frame.reason === 'webhook_configured') {
          this.close(
            { kind: 'fatal', error: new MessengerFatalError('relay_webhook_configured', WEBHOOK_CONFIGURED_MESSAGE) },
            1000,
          );
        } else {
          this.close(
            {
              kind: 'fatal',
              error: new MessengerFatalError('relay_websocket_revoked', 'Relay revoked this connection'),
            },
            1000,
          );
        }
        return;
      }
    }
  }

  private flush(): void {
    this.flushScheduled = false;
    if (this.finished || this.queue.length === 0) return;
    const batch = this.queue;
    this.queue = [];
    try {
      this.o.sink.commit(batch);
    } catch (err) {
      if (err instanceof RelayStateBindingError) {
        return this.close(
          { kind: 'fatal', error: new MessengerFatalError('relay_state_account_mismatch', err.message) },
          1000,
        );
      }
      // Nothing of this batch was acknowledged; Relay redelivers it on the next connection.
      this.o.log.error('relay inbox commit failed', { error: (err as Error).message });
      return this.close({ kind: 'reconnect', reason: 'commit_failed' }, 1011);
    }
    for (const item of batch) {
      this.acceptedThrough = item.sequence;
      this.send(`{"type":"ack","through_sequence":"${item.sequence}"}`);
    }
    this.o.sink.committed?.();
  }

  private async runFullSync(through: bigint): Promise<void> {
    this.fullSyncRunning = true;
    this.fullSyncExpected = null;
    try {
      await this.o.sink.fullSync(through);
    } catch (err) {
      const message = err instanceof RelayFullSyncError ? err.message : `FULL sync failed: ${(err as Error).message}`;
      this.close({ kind: 'fatal', error: new MessengerFatalError('relay_full_sync_failed', message) }, 1000);
      return;
    }
    if (this.finished) return;
    this.fullSyncRunning = false;
    this.acceptedThrough = through;
    this.receivedThrough = through;
    this.send(`{"type":"full_sync_complete","through_sequence":"${through}"}`);
  }

  private protocolError(detail: string): void {
    // Events that arrived intact before the bad frame are committed and acknowledged first, as a
    // frame-at-a-time client would have done; the bad frame itself is never acknowledged.
    this.flush();
    this.o.log.error('relay websocket protocol error', { detail });
    this.close(
      { kind: 'fatal', error: new MessengerFatalError('relay_protocol_error', `protocol error: ${detail}`) },
      1002,
    );
  }

  private close(outcome: Outcome, code: number): void {
    this.finish(outcome);
    if (this.ws.readyState === WebSocket.OPEN) this.ws.close(code);
    else if (this.ws.readyState === WebSocket.CONNECTING) this.ws.terminate();
  }

  private finish(outcome: Outcome): void {
    if (this.finished) return;
    this.finished = true;
    for (const t of this.timers) t.cancel();
    this.queue = [];
    this.resolveDone(outcome);
  }
}
