import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import type { RelayLog } from '../relay-context.js';
import { shared } from './redis-connection.js';
import { SharedStateUnavailable } from './shared-state-unavailable.js';

/**
 * A replica refreshes its liveness key this often, and the key lives LIVENESS_TTL_MS: a replica killed
 * with -9 is known gone by the others within the TTL plus PEER_CHECK_MS × MISSES_BEFORE_GONE.
 */
const HEARTBEAT_MS = 500;
const LIVENESS_TTL_MS = 2_000;
const PEER_CHECK_MS = 500;
/**
 * A peer is gone only after its key was missing on this many checks in a row: after a Redis restart
 * every key is missing until each replica's next heartbeat, and one check must not condemn them all.
 */
const MISSES_BEFORE_GONE = 2;

/** The other replica died (its liveness key expired) while a request to it was open. */
export class PeerGone extends Error {
  constructor(readonly replicaId: string) {
    super('the replica holding this state is gone');
    this.name = 'PeerGone';
  }
}

/**
 * What travels on a replica's channel, JSON: a request (`req`) answered by a `res`, a `cancel` of an
 * open request (its client went away), or a one-way `msg`. `p` is the operation's own payload, parsed
 * by the handler that owns the operation.
 */
const Envelope = z.discriminatedUnion('k', [
  z.object({ k: z.literal('req'), id: z.string(), from: z.string(), op: z.string(), p: z.unknown() }),
  z.object({ k: z.literal('res'), id: z.string(), ok: z.boolean(), p: z.unknown() }),
  z.object({ k: z.literal('cancel'), id: z.string(), from: z.string() }),
  z.object({ k: z.literal('msg'), from: z.string(), type: z.string(), p: z.unknown() }),
]);
type Envelope = z.infer<typeof Envelope>;

export type RequestHandler = (payload: unknown, from: string, signal: AbortSignal) => Promise<unknown>;
export type MessageHandler = (payload: unknown, from: string) => void;

interface OpenRequest {
  to: string;
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
}

/**
 * How the replicas of one relay talk to each other through Redis: every replica has a channel of its
 * own (`bus:<id>`) and a liveness key it refreshes; a replica asks the one holding a piece of state
 * (a Watch grant, an audio bridge end) to act on it and gets the answer on its own channel. Pub/sub
 * keeps the order of one publisher's messages, which the audio bridge relies on. A replica that dies
 * stops refreshing its key: requests open to it fail with PeerGone, and requests it had open here are
 * aborted, so neither side waits for an answer that cannot come.
 */
export class ReplicaBus {
  readonly id = randomUUID();
  private readonly channel: string;
  private readonly requestHandlers = new Map<string, RequestHandler>();
  private readonly messageHandlers = new Map<string, MessageHandler>();
  private readonly topicListeners = new Map<string, Set<(message: string) => void>>();
  private readonly open = new Map<string, OpenRequest>();
  /** Requests other replicas have open here, by `from:id`, so a cancel or the caller's death aborts them. */
  private readonly served = new Map<string, { from: string; abort: AbortController }>();
  /** Peers watched for death, with how many checks in a row found them missing. */
  private readonly watched = new Map<string, { listeners: Set<() => void> }>();
  /** How many checks in a row found a peer's liveness key missing. */
  private readonly misses = new Map<string, number>();
  private readonly heartbeat: NodeJS.Timeout;
  private readonly peerCheck: NodeJS.Timeout;
  private closed = false;

  constructor(
    private readonly commands: Redis,
    private readonly subscriber: Redis,
    private readonly keyPrefix: string,
    private readonly log: RelayLog,
  ) {
    this.channel = `${keyPrefix}bus:${this.id}`;
    subscriber.on('message', (channel: string, text: string) => this.receive(channel, text));
    subscriber.on('ready', () => this.join());
    if (subscriber.status === 'ready') this.join();
    this.beat();
    // At once when Redis is back: a restarted Redis has lost every liveness key.
    commands.on('ready', () => this.beat());
    this.heartbeat = setInterval(() => this.beat(), HEARTBEAT_MS);
    this.heartbeat.unref();
    this.peerCheck = setInterval(() => void this.checkPeers(), PEER_CHECK_MS);
    this.peerCheck.unref();
  }

  /** The key whose presence says a replica is alive. */
  livenessKey(replicaId: string): string {
    return `${this.keyPrefix}alive:${replicaId}`;
  }

  /** Serves `op` for the other replicas. */
  handle(op: string, handler: RequestHandler): void {
    this.requestHandlers.set(op, handler);
  }

  /** Receives one-way messages of `type`. */
  onMessage(type: string, handler: MessageHandler): void {
    this.messageHandlers.set(type, handler);
  }

  /**
   * Asks replica `to` to run `op`; resolves with its answer. Rejects with PeerGone when `to` dies
   * first, SharedStateUnavailable when Redis cannot carry the request. An aborted `signal` cancels the
   * request there (the caller's client went away) and resolves nothing.
   */
  request(to: string, op: string, payload: unknown, signal?: AbortSignal): Promise<unknown> {
    // The client went away before the request could leave: nothing to ask for.
    if (signal?.aborted) return Promise.reject(new Error('aborted'));
    const id = randomUUID();
    return new Promise((resolve, reject) => {
      const stopWatching = this.watchPeer(to, () => finish(() => reject(new PeerGone(to))));
      const finish = (settle: () => void) => {
        if (!this.open.delete(id)) return;
        stopWatching();
        settle();
      };
      this.open.set(id, {
        to,
        resolve: (value) => finish(() => resolve(value)),
        reject: (error) => finish(() => reject(error)),
      });
      signal?.addEventListener(
        'abort',
        () => {
          if (!this.open.has(id)) return;
          this.publish(to, { k: 'cancel', id, from: this.id });
          finish(() => reject(new Error('aborted')));
        },
        { once: true },
      );
      this.commands.publish(this.channelOf(to), JSON.stringify({ k: 'req', id, from: this.id, op, p: payload })).then(
        (receivers) => {
          // Nobody subscribed: the replica is gone (or has not yet resubscribed after a Redis restart).
          if (receivers === 0) this.open.get(id)?.reject(new PeerGone(to));
        },
        (error: unknown) =>
          this.open.get(id)?.reject(new SharedStateUnavailable(error instanceof Error ? error.message : String(error))),
      );
    });
  }

  /** A one-way message to `to`, in order with this replica's other messages to it; lost if Redis is down. */
  send(to: string, type: string, payload: unknown): void {
    this.publish(to, { k: 'msg', from: this.id, type, p: payload });
  }

  /** Calls `onGone` once when `replicaId` stops refreshing its liveness key; returns the unwatch. */
  watchPeer(replicaId: string, onGone: () => void): () => void {
    let entry = this.watched.get(replicaId);
    if (!entry) {
      entry = { listeners: new Set() };
      this.watched.set(replicaId, entry);
    }
    const listener = () => onGone();
    entry.listeners.add(listener);
    return () => {
      const current = this.watched.get(replicaId);
      current?.listeners.delete(listener);
      if (current?.listeners.size === 0) this.watched.delete(replicaId);
    };
  }

  /** Listens to a relay-wide topic (every replica's listeners hear each publication). */
  async listen(topic: string, listener: (message: string) => void): Promise<() => void> {
    const channel = `${this.keyPrefix}topic:${topic}`;
    let listeners = this.topicListeners.get(channel);
    if (!listeners) {
      const fresh = new Set<(message: string) => void>();
      listeners = fresh;
      this.topicListeners.set(channel, fresh);
      try {
        await shared(() => this.subscriber.subscribe(channel));
      } catch (error) {
        // Not subscribed: the next listener subscribes again (and a reconnection resubscribes anyway).
        if (fresh.size === 0 && this.topicListeners.get(channel) === fresh) this.topicListeners.delete(channel);
        throw error;
      }
    }
    listeners.add(listener);
    return () => {
      const current = this.topicListeners.get(channel);
      current?.delete(listener);
      if (current?.size === 0) {
        this.topicListeners.delete(channel);
        this.subscriber.unsubscribe(channel).catch(() => undefined);
      }
    };
  }

  /** Publishes on a relay-wide topic. */
  async announce(topic: string, message: string): Promise<void> {
    await shared(() => this.commands.publish(`${this.keyPrefix}topic:${topic}`, message));
  }

  close(): void {
    this.closed = true;
    clearInterval(this.heartbeat);
    clearInterval(this.peerCheck);
    for (const request of this.open.values()) request.reject(new PeerGone(request.to));
    for (const { abort } of this.served.values()) abort.abort();
    this.commands.del(this.livenessKey(this.id)).catch(() => undefined);
  }

  private channelOf(replicaId: string): string {
    return `${this.keyPrefix}bus:${replicaId}`;
  }

  private publish(to: string, envelope: Envelope): void {
    this.commands.publish(this.channelOf(to), JSON.stringify(envelope)).catch((error: unknown) =>
      this.log('warn', 'replica message not sent', {
        error: error instanceof Error ? error.message : String(error),
      }),
    );
  }

  private beat(): void {
    if (this.closed) return;
    // Failures are the outage the connection already reports; the next beat tries again.
    this.commands.set(this.livenessKey(this.id), '1', 'PX', LIVENESS_TTL_MS).catch(() => undefined);
  }

  private join(): void {
    const channels = [this.channel, ...this.topicListeners.keys()];
    this.subscriber.subscribe(...channels).catch((error: unknown) =>
      this.log('warn', 'replica bus subscription failed', {
        error: error instanceof Error ? error.message : String(error),
      }),
    );
  }

  /** Which watched peers (and callers of requests served here) still hold their liveness key. */
  private async checkPeers(): Promise<void> {
    const peers = [...new Set([...this.watched.keys(), ...[...this.served.values()].map((served) => served.from)])];
    if (peers.length === 0 || this.closed) return;
    let alive: number[];
    try {
      alive = await Promise.all(peers.map((peer) => this.commands.exists(this.livenessKey(peer))));
    } catch {
      // Redis is away: nothing can be told about the peers; wait for it.
      return;
    }
    peers.forEach((peer, index) => {
      const misses = alive[index] === 0 ? (this.misses.get(peer) ?? 0) + 1 : 0;
      if (misses === 0) this.misses.delete(peer);
      else this.misses.set(peer, misses);
      if (misses < MISSES_BEFORE_GONE) return;
      this.misses.delete(peer);
      const entry = this.watched.get(peer);
      this.watched.delete(peer);
      for (const listener of entry?.listeners ?? []) listener();
      for (const [key, served] of this.served) {
        if (served.from !== peer) continue;
        this.served.delete(key);
        served.abort.abort();
      }
    });
  }

  private receive(channel: string, text: string): void {
    const topic = this.topicListeners.get(channel);
    if (topic) {
      for (const listener of [...topic]) listener(text);
      return;
    }
    if (channel !== this.channel) return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return;
    }
    const envelope = Envelope.safeParse(parsed);
    if (!envelope.success) return;
    const message = envelope.data;
    switch (message.k) {
      case 'res': {
        const open = this.open.get(message.id);
        if (!open) return;
        if (message.ok) open.resolve(message.p);
        else open.reject(new Error(typeof message.p === 'string' ? message.p : 'request failed'));
        return;
      }
      case 'cancel':
        this.served.get(`${message.from}:${message.id}`)?.abort.abort();
        return;
      case 'msg':
        this.messageHandlers.get(message.type)?.(message.p, message.from);
        return;
      case 'req':
        this.serve(message.id, message.from, message.op, message.p);
        return;
    }
  }

  private serve(id: string, from: string, op: string, payload: unknown): void {
    const handler = this.requestHandlers.get(op);
    if (!handler) {
      this.publish(from, { k: 'res', id, ok: false, p: `unknown operation ${op}` });
      return;
    }
    const key = `${from}:${id}`;
    const abort = new AbortController();
    this.served.set(key, { from, abort });
    handler(payload, from, abort.signal).then(
      (answer) => {
        this.served.delete(key);
        this.publish(from, { k: 'res', id, ok: true, p: answer });
      },
      (error: unknown) => {
        this.served.delete(key);
        this.publish(from, { k: 'res', id, ok: false, p: error instanceof Error ? error.message : String(error) });
      },
    );
  }
}
