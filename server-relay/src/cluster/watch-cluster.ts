import { randomUUID } from 'node:crypto';
import type { Duplex } from 'node:stream';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import type { BridgeEnd, BridgeEndHandlers } from '../watch/audio-bridge.js';
import { BridgeSocket } from '../watch/bridge-socket.js';
import type { GatewayIdentity, WatchSettings } from '../watch/deps.js';
import type { GrantRequest, GrantView, LocalWatchGrants, SubmittedCall, WatchGrants } from '../watch/grant-service.js';
import type { PollOutcome, Sealed, WatchCall } from '../watch/grants.js';
import { CloseCode, CloseReason } from '../watch/ws-frames.js';
import { shared } from './redis-connection.js';
import { PeerGone, type ReplicaBus } from './replica-bus.js';

/** Closed grants answer 410 with their reason this long, as the registry's tombstones do. */
const TOMBSTONE_MS = 10 * 60_000;
/** How long a looked-up owner is reused for the socket of the upgrade that looked it up, and how many. */
const RECENT_OWNER_MS = 2_000;
const RECENT_OWNERS_MAX = 10_000;
/** A gateway's home lasts while its replica lives; this only bounds a key nobody reads any more. */
const HOME_TTL_MS = 24 * 60 * 60_000;
/**
 * Audio one replica may have sent another for a bridge end and not yet had acknowledged. Redis
 * publishes without flow control, so without a window a writer faster than the replicas carry it
 * (or a reader's full buffer reported late) would queue megabytes in Redis and in the receiving
 * replica before the pause arrives. 256 KB is over 2 s of audio at the default 96 KB/s per socket,
 * so a stream within the rate is never held by it.
 */
const IN_FLIGHT_BYTES = 256 * 1024;
/** The receiver acknowledges in steps this large: one extra message per 64 KB, not per message. */
const ACK_EVERY_BYTES = 64 * 1024;

/**
 * The replica holding a grant, if it is alive: one round trip. KEYS: the grant's owner key.
 * ARGV: the liveness key prefix, the caller's id (the caller is alive whatever its key says: after a
 * Redis restart the keys come back with each replica's next heartbeat).
 */
const OWNER_SCRIPT = `
local owner = redis.call('GET', KEYS[1])
if not owner then return false end
if owner == ARGV[2] or redis.call('EXISTS', ARGV[1] .. owner) == 1 then return owner end
return false`;

/**
 * The gateway's home replica, claimed by the caller when it has none or its home died. KEYS: the
 * gateway's home key. ARGV: the caller's id, the liveness key prefix, the home key's TTL.
 */
const HOME_SCRIPT = `
local home = redis.call('GET', KEYS[1])
if home and (home == ARGV[1] or redis.call('EXISTS', ARGV[2] .. home) == 1) then return home end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
return ARGV[1]`;

/**
 * Takes one of the relay-wide grant slots (RELAY_MAX_WATCH_GRANTS) for a grant just opened: a sorted
 * set of `<owner>:<gid>` scored by expiry. Expired grants leave first; at the bound, grants of replicas
 * that died leave too (their grants died with them), then the bound refuses. KEYS: the set. ARGV: the
 * member, its expiry, now, the bound, the liveness key prefix, the caller's id.
 */
const GRANT_SLOT_SCRIPT = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[3])
local max = tonumber(ARGV[4])
if redis.call('ZCARD', KEYS[1]) >= max then
  local alive = {}
  for _, member in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
    local owner = string.match(member, '^([^:]+):')
    if owner and owner ~= ARGV[6] then
      if alive[owner] == nil then alive[owner] = redis.call('EXISTS', ARGV[5] .. owner) == 1 end
      if not alive[owner] then redis.call('ZREM', KEYS[1], member) end
    end
  end
  if redis.call('ZCARD', KEYS[1]) >= max then return 0 end
end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
return 1`;

/**
 * Whether one more bridge fits the relay-wide bound (RELAY_MAX_WATCH_AUDIO_BRIDGES): a set of
 * `<owner>:<gid>` of the bridges with a host attached. A grant already counted always fits (a host
 * replacing its socket); at the bound, bridges of replicas that died leave first. KEYS: the set.
 * ARGV: the grant's member, the bound, the liveness key prefix, the caller's id.
 */
const BRIDGE_ROOM_SCRIPT = `
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 then return 1 end
local max = tonumber(ARGV[2])
if redis.call('SCARD', KEYS[1]) < max then return 1 end
local alive = {}
for _, member in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local owner = string.match(member, '^([^:]+):')
  if owner and owner ~= ARGV[4] then
    if alive[owner] == nil then alive[owner] = redis.call('EXISTS', ARGV[3] .. owner) == 1 end
    if not alive[owner] then redis.call('SREM', KEYS[1], member) end
  end
end
if redis.call('SCARD', KEYS[1]) < max then return 1 end
return 0`;

type ClusterClient = Redis & {
  conduitGrantOwner(key: string, alivePrefix: string, self: string): Promise<string | null>;
  conduitGatewayHome(key: string, self: string, alivePrefix: string, ttlMs: number): Promise<string>;
  conduitBridgeRoom(key: string, member: string, max: number, alivePrefix: string, self: string): Promise<number>;
  conduitGrantSlot(
    key: string,
    member: string,
    expiresAt: number,
    now: number,
    max: number,
    alivePrefix: string,
    self: string,
  ): Promise<number>;
};

const Gateway = z.object({ installationId: z.string(), gatewayId: z.string() });
const Gid = z.string().min(1).max(64);
const Hex = z.string().regex(/^[0-9a-f]{64}$/);
const SealedShape = z.object({ n: z.string(), ct: z.string() });
const CloseReasonShape = z.enum(['expired', 'replaced', 'host', 'watch']);
const View = z.object({
  id: z.string(),
  audio: z.boolean(),
  closedReason: CloseReasonShape.nullable(),
  expiresAt: z.number(),
});
const MaybeView = View.nullable();

const Requests = {
  create: z.object({
    gateway: Gateway,
    request: z.object({ keyHashHex: Hex, ttlS: z.number(), maxCalls: z.number(), audio: z.boolean() }),
  }),
  findOwned: z.object({ gid: Gid, gateway: Gateway }),
  findByKey: z.object({ gid: Gid, keyHash: Hex }),
  closeOwned: z.object({ gid: Gid, gateway: Gateway }),
  closeByKey: z.object({ gid: Gid, keyHash: Hex }),
  submitCall: z.object({ gid: Gid, call: SealedShape.extend({ rid: z.string() }) }),
  poll: z.object({ gid: Gid, waitMs: z.number() }),
  answer: z.object({ gid: Gid, rid: z.string(), result: SealedShape }),
  hasAudioCapacity: z.object({ gid: Gid }),
} as const;

const Submitted = z.union([
  z.object({
    kind: z.literal('refused'),
    refused: z.enum(['duplicate_call', 'grant_exhausted', 'too_many_calls', 'host_offline']),
  }),
  z.object({ kind: z.literal('answered'), result: SealedShape }),
  z.object({ kind: z.enum(['timeout', 'shutdown', 'dropped']) }),
  z.object({ kind: z.literal('closed'), reason: CloseReasonShape }),
]);
const Polled = z.union([
  z.object({ kind: z.literal('calls'), calls: z.array(SealedShape.extend({ rid: z.string() })) }),
  z.object({ kind: z.literal('closed'), reason: CloseReasonShape }),
  z.object({ kind: z.literal('dropped') }),
]);

/** Audio messages between the replica holding a socket (the front) and the one holding the bridge. */
const AudioAttach = z.object({ end: z.string(), gid: Gid, side: z.enum(['host', 'watch']) });
const AudioData = z.object({ end: z.string(), p: z.string() });
const AudioEndRef = z.object({ end: z.string() });
const AudioAck = z.object({ end: z.string(), n: z.number().int().positive() });
const AudioClose = z.object({ end: z.string(), code: z.number().int(), reason: z.string() });
const CLOSE_REASONS = new Set<string>(Object.values(CloseReason));

const toWire = (view: GrantView | undefined) => (view ? { ...view, closedReason: view.closedReason ?? null } : null);
const fromWire = (wire: z.infer<typeof View> | null): GrantView | undefined =>
  wire ? { ...wire, closedReason: wire.closedReason ?? undefined } : undefined;

/**
 * A bridge end whose socket another replica holds: what the bridge sends goes there over the bus,
 * in order; closing it closes the socket there with the same code and reason. The other replica
 * reports a full socket buffer (`audio-full`) and its drain, and acknowledges what it took
 * (`audio-out-ack`): the end counts as full while either its socket is or IN_FLIGHT_BYTES are
 * unacknowledged, so a slow reader, or a slow replica, still pauses the writer. This end acknowledges
 * the audio it gets from there in turn (`audio-in-ack`), for that replica's window.
 */
class RemoteEnd implements BridgeEnd {
  private closed = false;
  private gone = false;
  private full = false;
  /** Bytes sent there not yet acknowledged. */
  private unacked = 0;
  /** Bytes received from there since this end last acknowledged. */
  private taken = 0;
  private readonly drainListeners: (() => void)[] = [];

  constructor(
    private readonly bus: ReplicaBus,
    readonly front: string,
    readonly id: string,
    private readonly handlers: BridgeEndHandlers,
  ) {}

  get open(): boolean {
    return !this.closed && !this.gone;
  }

  send(payload: Buffer): boolean {
    if (!this.open) return true;
    this.bus.send(this.front, 'audio-out', { end: this.id, p: payload.toString('base64') });
    this.unacked += payload.length;
    return this.accepting;
  }

  onDrain(listener: () => void): void {
    if (this.accepting) listener();
    else this.drainListeners.push(listener);
  }

  pause(): void {
    if (this.open) this.bus.send(this.front, 'audio-pause', { end: this.id });
  }

  resume(): void {
    if (this.open) this.bus.send(this.front, 'audio-resume', { end: this.id });
  }

  close(code: number, reason: CloseReason): void {
    if (!this.open) return;
    this.closed = true;
    this.bus.send(this.front, 'audio-close', { end: this.id, code, reason });
    this.finish();
  }

  message(payload: Buffer): void {
    if (!this.open) return;
    this.handlers.onMessage(payload);
    // After the bridge passed it on: a pause it caused reaches the front before this acknowledgement.
    this.taken += payload.length;
    if (this.taken < ACK_EVERY_BYTES) return;
    this.bus.send(this.front, 'audio-in-ack', { end: this.id, n: this.taken });
    this.taken = 0;
  }

  setFull(full: boolean): void {
    this.full = full;
    this.drainIfAccepting();
  }

  acknowledged(bytes: number): void {
    this.unacked = Math.max(0, this.unacked - bytes);
    this.drainIfAccepting();
  }

  private get accepting(): boolean {
    return !this.full && this.unacked <= IN_FLIGHT_BYTES;
  }

  private drainIfAccepting(): void {
    if (!this.accepting) return;
    for (const listener of this.drainListeners.splice(0)) listener();
  }

  /** The socket is gone (closed there, or its replica died). Runs the bridge's onGone once. */
  finish(): void {
    if (this.gone) return;
    this.gone = true;
    this.handlers.onGone();
  }
}

/**
 * A socket this replica holds for a bridge on another replica (its owner). What it reads goes to the
 * owner, and reading stops while IN_FLIGHT_BYTES of it are unacknowledged or while the owner holds it
 * (the bridge's other end is full), so TCP slows the writer instead of Redis and the owner queueing.
 * What the owner sends is written to the socket; a full socket buffer is reported once until it
 * drains, and what was taken is acknowledged for the owner's window.
 */
class FrontEnd {
  private unacked = 0;
  private heldByOwner = false;
  private paused = false;
  private full = false;
  /** Bytes of the owner's audio written since the last acknowledgement. */
  private written = 0;

  constructor(
    private readonly bus: ReplicaBus,
    readonly socket: BridgeSocket,
    readonly owner: string,
    readonly id: string,
  ) {}

  /** Sends what the socket read to the owner. */
  forward(payload: Buffer): void {
    this.bus.send(this.owner, 'audio-in', { end: this.id, p: payload.toString('base64') });
    this.unacked += payload.length;
    this.flow();
  }

  acknowledged(bytes: number): void {
    this.unacked = Math.max(0, this.unacked - bytes);
    this.flow();
  }

  hold(held: boolean): void {
    this.heldByOwner = held;
    this.flow();
  }

  /** Writes the owner's audio to the socket. */
  write(payload: Buffer): void {
    if (!this.socket.send(payload) && !this.full) {
      this.full = true;
      this.bus.send(this.owner, 'audio-full', { end: this.id });
      this.socket.onDrain(() => {
        this.full = false;
        this.bus.send(this.owner, 'audio-drained', { end: this.id });
      });
    }
    this.written += payload.length;
    if (this.written < ACK_EVERY_BYTES) return;
    this.bus.send(this.owner, 'audio-out-ack', { end: this.id, n: this.written });
    this.written = 0;
  }

  private flow(): void {
    const pause = this.heldByOwner || this.unacked > IN_FLIGHT_BYTES;
    if (pause === this.paused) return;
    this.paused = pause;
    if (pause) this.socket.pause();
    else this.socket.resume();
  }
}

/**
 * The Watch grants of several replicas as one relay. A grant lives on one replica (its owner, the home
 * of the gateway that opened it, so a gateway's per-gateway bounds and its bridges stay in one place);
 * Redis records the owner, and every other replica sends the owner its requests for that grant over
 * the bus: the Watch's call held on replica A reaches the host polling replica B through the owner,
 * and the answer goes back the same way. An audio socket stays on the replica it connected to and
 * joins the owner's bridge as a remote end. A replica that dies takes its grants with it, as a restart
 * does in one process: held calls elsewhere get 503 host_offline, held polls `{calls:[]}`, and the
 * grant is unknown from then on (401 for the Watch, 410 grant_closed for the host).
 */
export class ClusterWatchGrants implements WatchGrants {
  private readonly client: ClusterClient;
  /** Remote ends of bridges on this replica, by end id. */
  private readonly remoteEnds = new Map<string, RemoteEnd>();
  /**
   * Owners just looked up, so an audio socket joins its bridge right after its 101 (the upgrade's
   * checks looked the owner up a moment before): one process attaches at once, and a bridge that is
   * counted only after another round trip could let a racing upgrade past the relay-wide bound.
   */
  private readonly recentOwners = new Map<string, { owner: string; at: number }>();
  /** Sockets this replica holds for bridges on other replicas, by end id. */
  private readonly frontEnds = new Map<string, FrontEnd>();

  constructor(
    private readonly local: LocalWatchGrants,
    private readonly bus: ReplicaBus,
    client: Redis,
    private readonly keyPrefix: string,
    private readonly settings: WatchSettings,
    private readonly now: () => number,
  ) {
    client.defineCommand('conduitGrantOwner', { numberOfKeys: 1, lua: OWNER_SCRIPT });
    client.defineCommand('conduitGatewayHome', { numberOfKeys: 1, lua: HOME_SCRIPT });
    client.defineCommand('conduitGrantSlot', { numberOfKeys: 1, lua: GRANT_SLOT_SCRIPT });
    client.defineCommand('conduitBridgeRoom', { numberOfKeys: 1, lua: BRIDGE_ROOM_SCRIPT });
    // Bridges with a host count relay-wide (not awaited: a failure leaves a count until the next check
    // finds this replica dead, or the host's next change).
    local.bridges.onHostChange((grantId, attached) => {
      const member = this.grantMember(grantId);
      const change = attached
        ? this.client.sadd(this.bridgesKey(), member)
        : this.client.srem(this.bridgesKey(), member);
      change.catch(() => undefined);
    });
    this.client = client as ClusterClient;
    // A closed grant gives its slot back (not awaited: a failure leaves it until the grant's expiry).
    local.registry.onClose((grant) => {
      this.client.zrem(this.grantsKey(), this.grantMember(grant.id)).catch(() => undefined);
    });
    this.serveGrants();
    this.serveAudio();
  }

  private bridgesKey(): string {
    return `${this.keyPrefix}watch-bridges`;
  }

  private grantsKey(): string {
    return `${this.keyPrefix}watch-grants`;
  }

  private grantMember(gid: string): string {
    return `${this.bus.id}:${gid}`;
  }

  private ownerKey(gid: string): string {
    return `${this.keyPrefix}grant-owner:${gid}`;
  }

  private alivePrefix(): string {
    return this.bus.livenessKey('');
  }

  /** The live replica holding the grant, or undefined when no live replica holds it. */
  private async ownerOf(gid: string): Promise<string | undefined> {
    const owner = await shared(() =>
      this.client.conduitGrantOwner(this.ownerKey(gid), this.alivePrefix(), this.bus.id),
    );
    if (owner) {
      if (this.recentOwners.size >= RECENT_OWNERS_MAX) this.recentOwners.clear();
      this.recentOwners.set(gid, { owner, at: this.now() });
    }
    return owner ?? undefined;
  }

  /** Runs `here` when this replica owns the grant, `there(owner)` when another live one does, else `none`. */
  private async routed<T>(
    gid: string,
    here: () => Promise<T>,
    there: (owner: string) => Promise<T>,
    none: T,
  ): Promise<T> {
    const owner = await this.ownerOf(gid);
    if (owner === undefined) return none;
    if (owner === this.bus.id) return here();
    try {
      return await there(owner);
    } catch (error) {
      // The owner died while we asked: its grants died with it.
      if (error instanceof PeerGone) return none;
      throw error;
    }
  }

  /**
   * Opens the grant here, then takes its relay-wide slot; refused, the grant is dropped unseen (503
   * watch_grant_capacity). A gateway at its own bound has its oldest grant replaced first, which gives
   * a slot back, so a host that lost track of its grants can still open one, as in one process.
   */
  private async createHere(gateway: GatewayIdentity, request: GrantRequest): Promise<GrantView | 'capacity'> {
    const view = await this.local.create(gateway, request);
    if (view === 'capacity') return view;
    const drop = () => {
      const grant = this.local.registry.find(view.id);
      if (grant) this.local.registry.close(grant, 'expired');
    };
    let admitted: number;
    try {
      admitted = await shared(() =>
        this.client.conduitGrantSlot(
          this.grantsKey(),
          this.grantMember(view.id),
          view.expiresAt,
          this.now(),
          this.settings.maxGrants,
          this.alivePrefix(),
          this.bus.id,
        ),
      );
    } catch (error) {
      drop();
      throw error;
    }
    if (admitted !== 1) {
      drop();
      return 'capacity';
    }
    await shared(() =>
      this.client.set(this.ownerKey(view.id), this.bus.id, 'PX', view.expiresAt - this.now() + TOMBSTONE_MS),
    );
    return view;
  }

  async create(gateway: GatewayIdentity, request: GrantRequest): Promise<GrantView | 'capacity'> {
    const home = await shared(() =>
      this.client.conduitGatewayHome(
        `${this.keyPrefix}gateway-home:${gateway.gatewayId}`,
        this.bus.id,
        this.alivePrefix(),
        HOME_TTL_MS,
      ),
    );
    if (home === this.bus.id) return this.createHere(gateway, request);
    try {
      const answer = await this.bus.request(home, 'watch-create', { gateway, request });
      return answer === 'capacity' ? 'capacity' : (fromWire(View.parse(answer)) as GrantView);
    } catch (error) {
      // The home died since the lookup: this replica becomes the gateway's home.
      if (!(error instanceof PeerGone)) throw error;
      await shared(() =>
        this.client.set(`${this.keyPrefix}gateway-home:${gateway.gatewayId}`, this.bus.id, 'PX', HOME_TTL_MS),
      );
      return this.createHere(gateway, request);
    }
  }

  findOwned(gid: string, gateway: GatewayIdentity): Promise<GrantView | undefined> {
    return this.routed(
      gid,
      () => this.local.findOwned(gid, gateway),
      async (owner) => fromWire(MaybeView.parse(await this.bus.request(owner, 'watch-findOwned', { gid, gateway }))),
      undefined,
    );
  }

  findByKey(gid: string, keyHash: Buffer): Promise<GrantView | undefined> {
    return this.routed(
      gid,
      () => this.local.findByKey(gid, keyHash),
      async (owner) =>
        fromWire(
          MaybeView.parse(await this.bus.request(owner, 'watch-findByKey', { gid, keyHash: keyHash.toString('hex') })),
        ),
      undefined,
    );
  }

  closeOwned(gid: string, gateway: GatewayIdentity): Promise<void> {
    return this.routed(
      gid,
      () => this.local.closeOwned(gid, gateway),
      async (owner) => void (await this.bus.request(owner, 'watch-closeOwned', { gid, gateway })),
      undefined,
    );
  }

  closeByKey(gid: string, keyHash: Buffer): Promise<void> {
    return this.routed(
      gid,
      () => this.local.closeByKey(gid, keyHash),
      async (owner) =>
        void (await this.bus.request(owner, 'watch-closeByKey', { gid, keyHash: keyHash.toString('hex') })),
      undefined,
    );
  }

  async submitCall(gid: string, call: WatchCall, signal: AbortSignal): Promise<SubmittedCall> {
    try {
      return await this.routed<SubmittedCall>(
        gid,
        () => this.local.submitCall(gid, call, signal),
        async (owner) => Submitted.parse(await this.bus.request(owner, 'watch-submitCall', { gid, call }, signal)),
        // The owner died: what a call held across a restart gets.
        { kind: 'shutdown' },
      );
    } catch (error) {
      if (signal.aborted) return { kind: 'dropped' };
      throw error;
    }
  }

  async poll(gid: string, waitMs: number, signal: AbortSignal): Promise<PollOutcome> {
    try {
      return await this.routed<PollOutcome>(
        gid,
        () => this.local.poll(gid, waitMs, signal),
        async (owner) => Polled.parse(await this.bus.request(owner, 'watch-poll', { gid, waitMs }, signal)),
        // As a relay shutdown answers a held poll; the next one finds the grant gone (410).
        { kind: 'calls', calls: [] },
      );
    } catch (error) {
      if (signal.aborted) return { kind: 'dropped' };
      throw error;
    }
  }

  answer(gid: string, rid: string, result: Sealed): Promise<boolean> {
    return this.routed(
      gid,
      () => this.local.answer(gid, rid, result),
      async (owner) => (await this.bus.request(owner, 'watch-answer', { gid, rid, result })) === true,
      false,
    );
  }

  hasAudioCapacity(gid: string): Promise<boolean> {
    return this.routed(
      gid,
      () => this.hasAudioCapacityHere(gid),
      async (owner) => (await this.bus.request(owner, 'watch-hasAudioCapacity', { gid })) === true,
      false,
    );
  }

  /** The per-gateway bound here (a gateway's bridges live on its home), the relay-wide one in Redis. */
  private async hasAudioCapacityHere(gid: string): Promise<boolean> {
    if (!(await this.local.hasAudioCapacity(gid))) return false;
    if (this.local.bridges.hasHost(gid)) return true;
    const room = await shared(() =>
      this.client.conduitBridgeRoom(
        this.bridgesKey(),
        this.grantMember(gid),
        this.settings.maxAudioBridges,
        this.alivePrefix(),
        this.bus.id,
      ),
    );
    return room === 1;
  }

  /**
   * The socket stays here; when the bridge is on another replica it joins as a remote end there. The
   * attach message goes before any of the socket's audio, on the same channel, so the owner sees them
   * in that order.
   */
  async attachAudio(gid: string, side: 'host' | 'watch', socket: Duplex, head: Buffer): Promise<void> {
    // Redis failing after the 101 cannot be answered in HTTP: the socket closes as in a shutdown.
    const recent = this.recentOwners.get(gid);
    const owner =
      recent && this.now() - recent.at < RECENT_OWNER_MS ? recent.owner : await this.ownerOf(gid).catch(() => null);
    if (owner === this.bus.id) return this.local.attachAudio(gid, side, socket, head);
    const end = randomUUID();
    const bridgeSocket = new BridgeSocket(socket, {
      idleMs: this.settings.audioIdleMs,
      bytesPerS: this.settings.audioBytesPerS,
      now: this.now,
      onMessage: (payload) => this.frontEnds.get(end)?.forward(payload),
      onGone: () => {
        if (!this.frontEnds.delete(end)) return;
        stopWatching();
        if (owner) this.bus.send(owner, 'audio-gone', { end });
      },
    });
    if (owner === null) {
      bridgeSocket.close(CloseCode.goingAway, CloseReason.goingAway);
      return;
    }
    if (owner === undefined) {
      // The grant's replica died between the checks and the 101: the bridge went with it.
      bridgeSocket.close(CloseCode.grantClosed, CloseReason.grantClosed);
      return;
    }
    this.frontEnds.set(end, new FrontEnd(this.bus, bridgeSocket, owner, end));
    // The bridge's replica died: its sockets here close as a relay shutdown closes them.
    const stopWatching = this.bus.watchPeer(owner, () =>
      this.frontEnds.get(end)?.socket.close(CloseCode.goingAway, CloseReason.goingAway),
    );
    this.bus.send(owner, 'audio-attach', { end, gid, side });
    bridgeSocket.receiveHead(head);
  }

  /** Relay shutdown: the sockets held here for other replicas' bridges close 1001, as local ones do. */
  close(): void {
    for (const { socket } of [...this.frontEnds.values()]) socket.close(CloseCode.goingAway, CloseReason.goingAway);
    for (const end of [...this.remoteEnds.values()]) end.close(CloseCode.goingAway, CloseReason.goingAway);
  }

  /** The owner's side: runs the other replicas' requests on this replica's grants. */
  private serveGrants(): void {
    const { bus, local } = this;
    bus.handle('watch-create', async (payload) => {
      const { gateway, request } = Requests.create.parse(payload);
      const view = await this.createHere(gateway, request);
      return view === 'capacity' ? view : toWire(view);
    });
    bus.handle('watch-findOwned', async (payload) => {
      const { gid, gateway } = Requests.findOwned.parse(payload);
      return toWire(await local.findOwned(gid, gateway));
    });
    bus.handle('watch-findByKey', async (payload) => {
      const { gid, keyHash } = Requests.findByKey.parse(payload);
      return toWire(await local.findByKey(gid, Buffer.from(keyHash, 'hex')));
    });
    bus.handle('watch-closeOwned', async (payload) => {
      const { gid, gateway } = Requests.closeOwned.parse(payload);
      await local.closeOwned(gid, gateway);
      return null;
    });
    bus.handle('watch-closeByKey', async (payload) => {
      const { gid, keyHash } = Requests.closeByKey.parse(payload);
      await local.closeByKey(gid, Buffer.from(keyHash, 'hex'));
      return null;
    });
    bus.handle('watch-submitCall', async (payload, _from, signal) => {
      const { gid, call } = Requests.submitCall.parse(payload);
      return local.submitCall(gid, call, signal);
    });
    bus.handle('watch-poll', async (payload, _from, signal) => {
      const { gid, waitMs } = Requests.poll.parse(payload);
      return local.poll(gid, Math.min(waitMs, this.settings.hostPollWaitMs), signal);
    });
    bus.handle('watch-answer', async (payload) => {
      const { gid, rid, result } = Requests.answer.parse(payload);
      return local.answer(gid, rid, result);
    });
    bus.handle('watch-hasAudioCapacity', async (payload) => {
      const { gid } = Requests.hasAudioCapacity.parse(payload);
      return this.hasAudioCapacityHere(gid);
    });
  }

  /** Both sides of the audio messages: as the bridge's owner, and as the front holding a socket. */
  private serveAudio(): void {
    const { bus } = this;
    // Owner side.
    bus.onMessage('audio-attach', (payload, from) => {
      const parsed = AudioAttach.safeParse(payload);
      if (!parsed.success) return;
      const { end, gid, side } = parsed.data;
      const grant = this.local.registry.find(gid);
      if (!grant || grant.closedReason !== undefined) {
        bus.send(from, 'audio-close', { end, code: CloseCode.grantClosed, reason: CloseReason.grantClosed });
        return;
      }
      const make = (handlers: BridgeEndHandlers) => {
        const remote = new RemoteEnd(bus, from, end, {
          onMessage: handlers.onMessage,
          onGone: () => {
            this.remoteEnds.delete(end);
            stopWatching();
            handlers.onGone();
          },
        });
        this.remoteEnds.set(end, remote);
        return remote;
      };
      // The front's replica died: its socket is gone, as a socket that closes here.
      const stopWatching = bus.watchPeer(from, () => this.remoteEnds.get(end)?.finish());
      if (side === 'host') this.local.bridges.attachHostEnd(grant, make);
      else this.local.bridges.attachWatchEnd(grant, make);
    });
    bus.onMessage('audio-in', (payload) => {
      const parsed = AudioData.safeParse(payload);
      if (parsed.success) this.remoteEnds.get(parsed.data.end)?.message(Buffer.from(parsed.data.p, 'base64'));
    });
    bus.onMessage('audio-gone', (payload) => {
      const parsed = AudioEndRef.safeParse(payload);
      if (parsed.success) this.remoteEnds.get(parsed.data.end)?.finish();
    });
    bus.onMessage('audio-full', (payload) => {
      const parsed = AudioEndRef.safeParse(payload);
      if (parsed.success) this.remoteEnds.get(parsed.data.end)?.setFull(true);
    });
    bus.onMessage('audio-drained', (payload) => {
      const parsed = AudioEndRef.safeParse(payload);
      if (parsed.success) this.remoteEnds.get(parsed.data.end)?.setFull(false);
    });
    bus.onMessage('audio-out-ack', (payload) => {
      const parsed = AudioAck.safeParse(payload);
      if (parsed.success) this.remoteEnds.get(parsed.data.end)?.acknowledged(parsed.data.n);
    });
    // Front side.
    bus.onMessage('audio-out', (payload) => {
      const parsed = AudioData.safeParse(payload);
      if (parsed.success) this.frontEnds.get(parsed.data.end)?.write(Buffer.from(parsed.data.p, 'base64'));
    });
    bus.onMessage('audio-in-ack', (payload) => {
      const parsed = AudioAck.safeParse(payload);
      if (parsed.success) this.frontEnds.get(parsed.data.end)?.acknowledged(parsed.data.n);
    });
    bus.onMessage('audio-close', (payload) => {
      const parsed = AudioClose.safeParse(payload);
      if (!parsed.success || !CLOSE_REASONS.has(parsed.data.reason)) return;
      this.frontEnds.get(parsed.data.end)?.socket.close(parsed.data.code, parsed.data.reason as CloseReason);
    });
    bus.onMessage('audio-pause', (payload) => {
      const parsed = AudioEndRef.safeParse(payload);
      if (parsed.success) this.frontEnds.get(parsed.data.end)?.hold(true);
    });
    bus.onMessage('audio-resume', (payload) => {
      const parsed = AudioEndRef.safeParse(payload);
      if (parsed.success) this.frontEnds.get(parsed.data.end)?.hold(false);
    });
  }
}
