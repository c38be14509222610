import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { GatewayIdentity, WatchSettings } from './deps.js';

/** Why a grant closed; held requests answer `410 {error:'grant_closed', reason}`. */
export type GrantCloseReason = 'expired' | 'replaced' | 'host' | 'watch';

/** A sealed message: nonce and ciphertext, both base64url, opaque to the relay. */
export interface Sealed {
  n: string;
  ct: string;
}

export interface WatchCall extends Sealed {
  rid: string;
}

/** How a held Watch call ended. */
export type CallOutcome =
  | { kind: 'answered'; result: Sealed }
  | { kind: 'timeout' }
  | { kind: 'closed'; reason: GrantCloseReason }
  | { kind: 'shutdown' }
  /** The Watch went away before an answer; nobody reads this outcome's reply. */
  | { kind: 'dropped' };

/** Why a Watch call was refused before it was held. */
export type CallRefusal = 'duplicate_call' | 'grant_exhausted' | 'too_many_calls' | 'host_offline';

export type PollOutcome =
  { kind: 'calls'; calls: WatchCall[] } | { kind: 'closed'; reason: GrantCloseReason } | { kind: 'dropped' };

interface HeldCall extends WatchCall {
  /** Handed to a host poll; the host may now answer it. */
  delivered: boolean;
  settle(outcome: CallOutcome): void;
}

interface HeldPoll {
  settle(outcome: PollOutcome): void;
}

export interface Grant {
  readonly id: string;
  readonly installationId: string;
  readonly gatewayId: string;
  /** SHA-256 of the Watch key, raw bytes; the relay never sees the key. */
  readonly keyHash: Buffer;
  readonly createdAt: number;
  readonly expiresAt: number;
  readonly maxCalls: number;
  readonly audio: boolean;
  closedReason: GrantCloseReason | undefined;
  closedAt: number | undefined;
  callsAccepted: number;
  readonly usedRids: Set<string>;
  /** Calls held open, in arrival order (queued and delivered ones). */
  readonly calls: Map<string, HeldCall>;
  poll: HeldPoll | undefined;
  /** When a host poll last arrived or completed (creation counts: the host just opened it). */
  hostSeenAt: number;
}

/** At most this many calls wait per grant (API.md §4). */
export const MAX_WAITING_CALLS = 2;
/** Closed grants are remembered this long so late requests get 410 with the reason instead of 401. */
const TOMBSTONE_MS = 10 * 60_000;
const SWEEP_INTERVAL_MS = 30_000;

/**
 * Watch tool grants, in memory only (a restart drops them and the Watch falls back to the iPhone).
 * Owns the grant lifecycle and the two held-open exchanges: the Watch's call, held until the host
 * answers, and the host's long poll, held until a call arrives.
 */
export class GrantRegistry {
  private readonly grants = new Map<string, Grant>();
  private readonly closeListeners: ((grant: Grant, reason: GrantCloseReason) => void)[] = [];
  private readonly sweeper: NodeJS.Timeout;
  private liveCount = 0;

  constructor(
    private readonly settings: WatchSettings,
    private readonly now: () => number,
    private readonly random: (size: number) => Buffer = randomBytes,
  ) {
    this.sweeper = setInterval(() => this.sweep(), SWEEP_INTERVAL_MS);
    this.sweeper.unref();
  }

  /** Subscribes to grant closes (the audio bridge closes its sockets with 4010). */
  onClose(listener: (grant: Grant, reason: GrantCloseReason) => void): void {
    this.closeListeners.push(listener);
  }

  /**
   * Opens a grant. A gateway at its limit has its oldest grant closed as `replaced` (so a host that
   * lost track of its grants can always open a new one); the relay-wide cap then refuses.
   */
  create(
    gateway: GatewayIdentity,
    request: { keyHashHex: string; ttlS: number; maxCalls: number; audio: boolean },
  ): Grant | 'capacity' {
    const own = this.liveOf(gateway.gatewayId);
    if (own.length >= this.settings.maxGrantsPerGateway) {
      for (const old of own.slice(0, own.length - this.settings.maxGrantsPerGateway + 1)) this.close(old, 'replaced');
    } else if (this.liveCount >= this.settings.maxGrants) {
      return 'capacity';
    }
    const now = this.now();
    let id: string;
    do id = this.random(16).toString('base64url');
    while (this.grants.has(id));
    const grant: Grant = {
      id,
      installationId: gateway.installationId,
      gatewayId: gateway.gatewayId,
      keyHash: Buffer.from(request.keyHashHex, 'hex'),
      createdAt: now,
      expiresAt: now + request.ttlS * 1000,
      maxCalls: request.maxCalls,
      audio: request.audio,
      closedReason: undefined,
      closedAt: undefined,
      callsAccepted: 0,
      usedRids: new Set(),
      calls: new Map(),
      poll: undefined,
      hostSeenAt: now,
    };
    this.grants.set(id, grant);
    this.liveCount += 1;
    return grant;
  }

  /** The grant (open or recently closed), closing it first if it has expired. */
  find(id: string): Grant | undefined {
    const grant = this.grants.get(id);
    if (grant && grant.closedReason === undefined && this.now() >= grant.expiresAt) this.close(grant, 'expired');
    return grant;
  }

  /** The grant if this gateway owns it (open or closed). */
  findOwned(id: string, gateway: GatewayIdentity): Grant | undefined {
    const grant = this.find(id);
    if (!grant || grant.gatewayId !== gateway.gatewayId || grant.installationId !== gateway.installationId)
      return undefined;
    return grant;
  }

  /** The grant if `key` is its Watch key (compared as SHA-256 digests in constant time). */
  findByKey(id: string, keyHash: Buffer): Grant | undefined {
    const grant = this.find(id);
    if (!grant || keyHash.length !== grant.keyHash.length || !timingSafeEqual(keyHash, grant.keyHash)) return undefined;
    return grant;
  }

  get size(): number {
    return this.liveCount;
  }

  /** Closes a grant: held calls and the held poll get `closed`, listeners run. Idempotent. */
  close(grant: Grant, reason: GrantCloseReason): void {
    if (grant.closedReason !== undefined) return;
    grant.closedReason = reason;
    grant.closedAt = this.now();
    this.liveCount -= 1;
    for (const call of [...grant.calls.values()]) call.settle({ kind: 'closed', reason });
    grant.poll?.settle({ kind: 'closed', reason });
    for (const listener of this.closeListeners) listener(grant, reason);
  }

  /** Closes expired grants and forgets old tombstones; runs every 30 s. */
  sweep(): void {
    const now = this.now();
    for (const grant of this.grants.values()) {
      if (grant.closedReason === undefined && now >= grant.expiresAt) this.close(grant, 'expired');
      if (grant.closedAt !== undefined && now - grant.closedAt >= TOMBSTONE_MS) this.grants.delete(grant.id);
    }
  }

  /**
   * Holds a Watch call until the host answers, the wait ends or the grant closes. Refusals come
   * first and consume nothing; an accepted call uses its rid and one of the grant's calls for good.
   * `drop` removes the call when the Watch goes away (a late answer then gets 404 unknown_call).
   */
  submitCall(
    grant: Grant,
    call: WatchCall,
  ): { refused: CallRefusal } | { outcome: Promise<CallOutcome>; drop: () => void } {
    if (grant.usedRids.has(call.rid)) return { refused: 'duplicate_call' };
    if (grant.callsAccepted >= grant.maxCalls) return { refused: 'grant_exhausted' };
    if (grant.calls.size >= MAX_WAITING_CALLS) return { refused: 'too_many_calls' };
    if (!grant.poll && this.now() - grant.hostSeenAt > this.settings.hostGoneMs) return { refused: 'host_offline' };
    grant.usedRids.add(call.rid);
    grant.callsAccepted += 1;
    let settle!: (outcome: CallOutcome) => void;
    const outcome = new Promise<CallOutcome>((resolve) => (settle = resolve));
    const timer = setTimeout(() => held.settle({ kind: 'timeout' }), this.settings.callWaitMs);
    const held: HeldCall = {
      ...call,
      delivered: false,
      settle: (result) => {
        if (grant.calls.get(call.rid) !== held) return;
        grant.calls.delete(call.rid);
        clearTimeout(timer);
        settle(result);
      },
    };
    grant.calls.set(call.rid, held);
    if (grant.poll) this.deliver(grant, grant.poll);
    return { outcome, drop: () => held.settle({ kind: 'dropped' }) };
  }

  /**
   * The host's long poll: answers at once with queued calls, otherwise holds up to `waitMs`. A newer
   * poll answers the older with no calls. Arrival and completion mark the host seen; a poll whose
   * client went away (`drop`) does not.
   */
  poll(grant: Grant, waitMs: number): { outcome: Promise<PollOutcome>; drop: () => void } {
    if (grant.closedReason !== undefined) {
      return { outcome: Promise.resolve({ kind: 'closed', reason: grant.closedReason }), drop: () => undefined };
    }
    grant.hostSeenAt = this.now();
    grant.poll?.settle({ kind: 'calls', calls: [] });
    let settle!: (outcome: PollOutcome) => void;
    const outcome = new Promise<PollOutcome>((resolve) => (settle = resolve));
    const timer = setTimeout(() => held.settle({ kind: 'calls', calls: [] }), waitMs);
    const held: HeldPoll = {
      settle: (result) => {
        if (grant.poll !== held) return;
        grant.poll = undefined;
        clearTimeout(timer);
        if (result.kind === 'calls') grant.hostSeenAt = this.now();
        settle(result);
      },
    };
    grant.poll = held;
    if ([...grant.calls.values()].some((c) => !c.delivered) || waitMs <= 0) this.deliver(grant, held);
    return { outcome, drop: () => held.settle({ kind: 'dropped' }) };
  }

  /** The host's sealed answer to a call it received; false when no such call is waiting. */
  answer(grant: Grant, rid: string, result: Sealed): boolean {
    const call = grant.calls.get(rid);
    if (!call?.delivered) return false;
    call.settle({ kind: 'answered', result });
    return true;
  }

  /** Relay shutdown: held calls and polls are answered so the server can close. */
  shutdown(): void {
    clearInterval(this.sweeper);
    for (const grant of this.grants.values()) {
      for (const call of [...grant.calls.values()]) call.settle({ kind: 'shutdown' });
      grant.poll?.settle({ kind: 'calls', calls: [] });
    }
  }

  private deliver(grant: Grant, poll: HeldPoll): void {
    const calls: WatchCall[] = [];
    for (const call of grant.calls.values()) {
      if (call.delivered) continue;
      call.delivered = true;
      calls.push({ rid: call.rid, n: call.n, ct: call.ct });
    }
    poll.settle({ kind: 'calls', calls });
  }

  private liveOf(gatewayId: string): Grant[] {
    const out: Grant[] = [];
    for (const grant of this.grants.values()) {
      if (grant.gatewayId !== gatewayId) continue;
      if (grant.closedReason === undefined && this.now() >= grant.expiresAt) this.close(grant, 'expired');
      if (grant.closedReason === undefined) out.push(grant);
    }
    return out;
  }
}
