import type { Duplex } from 'node:stream';
import type { AudioBridges } from './audio-bridge.js';
import type { GatewayIdentity } from './deps.js';
import type {
  CallOutcome,
  CallRefusal,
  Grant,
  GrantCloseReason,
  GrantRegistry,
  PollOutcome,
  Sealed,
  WatchCall,
} from './grants.js';

/** What a route needs to know of a grant (the grant itself may live on another replica). */
export interface GrantView {
  id: string;
  audio: boolean;
  closedReason: GrantCloseReason | undefined;
  expiresAt: number;
}

export interface GrantRequest {
  keyHashHex: string;
  ttlS: number;
  maxCalls: number;
  audio: boolean;
}

/** A Watch call: refused before it was held, or how the held call ended. */
export type SubmittedCall = { kind: 'refused'; refused: CallRefusal } | CallOutcome;

/**
 * The Watch grants as the routes use them: by id, every answer a promise. One process answers from
 * its GrantRegistry (LocalWatchGrants); replicas send each operation to the replica holding the grant
 * (cluster/watch-cluster.ts). Held operations end when `signal` aborts (the client went away).
 */
export interface WatchGrants {
  create(gateway: GatewayIdentity, request: GrantRequest): Promise<GrantView | 'capacity'>;
  /** The grant if this gateway owns it (open or closed). */
  findOwned(gid: string, gateway: GatewayIdentity): Promise<GrantView | undefined>;
  /** The grant if the Watch key's SHA-256 is `keyHash` (open or closed). */
  findByKey(gid: string, keyHash: Buffer): Promise<GrantView | undefined>;
  closeOwned(gid: string, gateway: GatewayIdentity): Promise<void>;
  closeByKey(gid: string, keyHash: Buffer): Promise<void>;
  submitCall(gid: string, call: WatchCall, signal: AbortSignal): Promise<SubmittedCall>;
  poll(gid: string, waitMs: number, signal: AbortSignal): Promise<PollOutcome>;
  answer(gid: string, rid: string, result: Sealed): Promise<boolean>;
  /** Whether a host may attach an audio socket to this grant now. */
  hasAudioCapacity(gid: string): Promise<boolean>;
  /** Attaches an upgraded socket (the 101 already sent) to the grant's bridge. */
  attachAudio(gid: string, side: 'host' | 'watch', socket: Duplex, head: Buffer): Promise<void>;
}

export function viewOf(grant: Grant): GrantView {
  return { id: grant.id, audio: grant.audio, closedReason: grant.closedReason, expiresAt: grant.expiresAt };
}

/** Once `signal` aborts, `drop` runs (at once when it already has). */
function onAbort(signal: AbortSignal, drop: () => void): void {
  if (signal.aborted) drop();
  else signal.addEventListener('abort', drop, { once: true });
}

/** The grants of this process. */
export class LocalWatchGrants implements WatchGrants {
  constructor(
    readonly registry: GrantRegistry,
    readonly bridges: AudioBridges,
  ) {}

  async create(gateway: GatewayIdentity, request: GrantRequest): Promise<GrantView | 'capacity'> {
    const grant = this.registry.create(gateway, request);
    return grant === 'capacity' ? grant : viewOf(grant);
  }

  async findOwned(gid: string, gateway: GatewayIdentity): Promise<GrantView | undefined> {
    const grant = this.registry.findOwned(gid, gateway);
    return grant && viewOf(grant);
  }

  async findByKey(gid: string, keyHash: Buffer): Promise<GrantView | undefined> {
    const grant = this.registry.findByKey(gid, keyHash);
    return grant && viewOf(grant);
  }

  async closeOwned(gid: string, gateway: GatewayIdentity): Promise<void> {
    const grant = this.registry.findOwned(gid, gateway);
    if (grant) this.registry.close(grant, 'host');
  }

  async closeByKey(gid: string, keyHash: Buffer): Promise<void> {
    const grant = this.registry.findByKey(gid, keyHash);
    if (grant) this.registry.close(grant, 'watch');
  }

  async submitCall(gid: string, call: WatchCall, signal: AbortSignal): Promise<SubmittedCall> {
    const grant = this.registry.find(gid);
    // Checked open by the route; it may have closed while the route awaited its limits.
    if (!grant) return { kind: 'closed', reason: 'expired' };
    if (grant.closedReason !== undefined) return { kind: 'closed', reason: grant.closedReason };
    const submitted = this.registry.submitCall(grant, call);
    if ('refused' in submitted) return { kind: 'refused', refused: submitted.refused };
    onAbort(signal, submitted.drop);
    return submitted.outcome;
  }

  async poll(gid: string, waitMs: number, signal: AbortSignal): Promise<PollOutcome> {
    const grant = this.registry.find(gid);
    if (!grant) return { kind: 'closed', reason: 'expired' };
    const held = this.registry.poll(grant, waitMs);
    onAbort(signal, held.drop);
    return held.outcome;
  }

  async answer(gid: string, rid: string, result: Sealed): Promise<boolean> {
    const grant = this.registry.find(gid);
    return grant !== undefined && this.registry.answer(grant, rid, result);
  }

  async hasAudioCapacity(gid: string): Promise<boolean> {
    const grant = this.registry.find(gid);
    return grant !== undefined && this.bridges.hasCapacityFor(grant);
  }

  async attachAudio(gid: string, side: 'host' | 'watch', socket: Duplex, head: Buffer): Promise<void> {
    const grant = this.registry.find(gid);
    if (!grant) {
      socket.destroy();
      return;
    }
    if (side === 'host') this.bridges.attachHost(grant, socket, head);
    else this.bridges.attachWatch(grant, socket, head);
  }
}
