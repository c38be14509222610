import type { Duplex } from 'node:stream';
import { BridgeSocket } from './bridge-socket.js';
import type { Grant } from './grants.js';
import { CloseCode, CloseReason } from './ws-frames.js';

/** The relay's notices to the host: binary [0x00, 0x01] Watch connected, [0x00, 0x02] Watch gone. */
export const WATCH_CONNECTED = Buffer.from([0x00, 0x01]);
export const WATCH_GONE = Buffer.from([0x00, 0x02]);

/**
 * One end of a bridge as the bridge sees it: a socket on this process (BridgeSocket), or, between
 * replicas, a socket another replica holds (cluster/watch-cluster.ts). Closing an end runs its onGone
 * at once, as a BridgeSocket's close does, so notices go out in the same order either way.
 */
export interface BridgeEnd {
  readonly open: boolean;
  /** Sends one binary message; false when the end's buffer is full (wait for `onDrain`). */
  send(payload: Buffer): boolean;
  onDrain(listener: () => void): void;
  pause(): void;
  resume(): void;
  close(code: number, reason: CloseReason): void;
}

/** What an end reports to its bridge. */
export interface BridgeEndHandlers {
  onMessage(payload: Buffer): void;
  onGone(): void;
}

/** Builds an end wired to the bridge's handlers. */
export type MakeBridgeEnd = (handlers: BridgeEndHandlers) => BridgeEnd;

interface Bridge {
  grant: Grant;
  host: BridgeEnd | undefined;
  watch: BridgeEnd | undefined;
}

export interface AudioBridgeLimits {
  maxBridges: number;
  maxBridgesPerGateway: number;
  idleMs: number;
  /** Inbound bytes per second one socket may send (BridgeSocketOptions.bytesPerS). */
  bytesPerS: number;
}

/**
 * Watch audio bridges, one per grant: the host attaches first, then the Watch; binary messages are
 * copied between them untouched. A bridge counts against the caps while its host is attached.
 */
export class AudioBridges {
  private readonly bridges = new Map<string, Bridge>();
  private readonly hostListeners: ((grantId: string, attached: boolean) => void)[] = [];

  constructor(
    private readonly limits: AudioBridgeLimits,
    private readonly now: () => number,
  ) {}

  /** Hears a grant's bridge gain a host (attached) or lose it (replicas count bridges relay-wide). */
  onHostChange(listener: (grantId: string, attached: boolean) => void): void {
    this.hostListeners.push(listener);
  }

  /** Whether this grant's bridge has a host attached now. */
  hasHost(grantId: string): boolean {
    return this.bridges.get(grantId)?.host !== undefined;
  }

  /** Whether a host may attach to this grant now (a host replacing its own socket always may). */
  hasCapacityFor(grant: Grant): boolean {
    if (this.bridges.get(grant.id)?.host) return true;
    let total = 0;
    let own = 0;
    for (const bridge of this.bridges.values()) {
      if (!bridge.host) continue;
      total += 1;
      if (bridge.grant.gatewayId === grant.gatewayId) own += 1;
    }
    return total < this.limits.maxBridges && own < this.limits.maxBridgesPerGateway;
  }

  /**
   * Attaches the host; an earlier host socket is closed 4000 `replaced` and a connected Watch 4503
   * `host_reconnected`: the host's provider session went with its old socket, so the Watch must rejoin.
   */
  attachHost(grant: Grant, socket: Duplex, head: Buffer): BridgeSocket {
    const host = this.attachHostEnd(grant, (handlers) => this.socketEnd(socket, handlers));
    host.receiveHead(head);
    return host;
  }

  /** attachHost for any end (a socket another replica holds); `make` is called once, at once. */
  attachHostEnd<End extends BridgeEnd>(grant: Grant, make: (handlers: BridgeEndHandlers) => End): End {
    const bridge = this.bridgeOf(grant);
    const previous = bridge.host;
    bridge.host = undefined;
    previous?.close(CloseCode.replaced, CloseReason.replaced);
    bridge.watch?.close(CloseCode.hostUnavailable, CloseReason.hostReconnected);
    const host: End = make({
      onMessage: (payload) => this.forward(bridge, host, bridge.watch, payload),
      onGone: () => {
        if (bridge.host !== host) return;
        bridge.host = undefined;
        for (const listener of this.hostListeners) listener(grant.id, false);
        // Without a host the Watch has nobody to talk to.
        bridge.watch?.close(CloseCode.hostUnavailable, CloseReason.hostOffline);
        this.forgetIfEmpty(bridge);
      },
    });
    bridge.host = host;
    // Closing the old ends may have dropped the empty bridge from the map.
    this.bridges.set(grant.id, bridge);
    for (const listener of this.hostListeners) listener(grant.id, true);
    return host;
  }

  /**
   * Attaches the Watch; without a host it is closed 4503 `host_offline` at once. An earlier Watch
   * socket is closed 4000 `replaced`, and the host hears it as the reference tells it: Watch gone
   * ([0x00, 0x02]) for the old one, then Watch connected ([0x00, 0x01]) for the new one, so a host
   * that tears down its per-Watch state on "gone" starts fresh for the newcomer.
   */
  attachWatch(grant: Grant, socket: Duplex, head: Buffer): BridgeSocket {
    let attached = false;
    const watch = this.attachWatchEnd(
      grant,
      (handlers) => this.socketEnd(socket, handlers),
      () => (attached = true),
    );
    if (attached) watch.receiveHead(head);
    return watch;
  }

  /** attachWatch for any end; `onAttached` runs when the end joined a host (else it is closed 4503). */
  attachWatchEnd<End extends BridgeEnd>(
    grant: Grant,
    make: (handlers: BridgeEndHandlers) => End,
    onAttached: () => void = () => undefined,
  ): End {
    const bridge = this.bridgeOf(grant);
    const previous = bridge.watch;
    if (previous) {
      // Detached first, so its own onGone (which only speaks for the bridge's current Watch) stays quiet.
      bridge.watch = undefined;
      previous.close(CloseCode.replaced, CloseReason.replaced);
      if (bridge.host) {
        // The old Watch may have been holding the host paused (backpressure); it no longer does.
        bridge.host.resume();
        bridge.host.send(WATCH_GONE);
      }
    }
    const watch: End = make({
      onMessage: (payload) => this.forward(bridge, watch, bridge.host, payload),
      onGone: () => {
        if (bridge.watch !== watch) return;
        bridge.watch = undefined;
        bridge.host?.resume();
        bridge.host?.send(WATCH_GONE);
        this.forgetIfEmpty(bridge);
      },
    });
    if (!bridge.host) {
      watch.close(CloseCode.hostUnavailable, CloseReason.hostOffline);
      this.forgetIfEmpty(bridge);
      return watch;
    }
    bridge.watch = watch;
    bridge.host.send(WATCH_CONNECTED);
    onAttached();
    return watch;
  }

  /** A socket on this process as a bridge end. */
  private socketEnd(socket: Duplex, handlers: BridgeEndHandlers): BridgeSocket {
    return new BridgeSocket(socket, {
      idleMs: this.limits.idleMs,
      bytesPerS: this.limits.bytesPerS,
      now: this.now,
      ...handlers,
    });
  }

  /** The grant closed: both ends get 4010. */
  closeGrant(grant: Grant): void {
    const bridge = this.bridges.get(grant.id);
    if (!bridge) return;
    this.bridges.delete(grant.id);
    bridge.watch?.close(CloseCode.grantClosed, CloseReason.grantClosed);
    bridge.host?.close(CloseCode.grantClosed, CloseReason.grantClosed);
  }

  /** Relay shutdown: every socket gets 1001. */
  closeAll(): void {
    for (const bridge of [...this.bridges.values()]) {
      this.bridges.delete(bridge.grant.id);
      bridge.watch?.close(CloseCode.goingAway, CloseReason.goingAway);
      bridge.host?.close(CloseCode.goingAway, CloseReason.goingAway);
    }
  }

  /**
   * Copies one message to the other end. When the other end's socket buffer is full the sender is
   * paused until it drains: TCP then slows the sender, and the relay never queues audio itself.
   */
  private forward(bridge: Bridge, from: BridgeEnd, to: BridgeEnd | undefined, payload: Buffer): void {
    if (!to?.open) return;
    if (to.send(payload)) return;
    from.pause();
    to.onDrain(() => {
      if (bridge.host === from || bridge.watch === from) from.resume();
    });
  }

  private bridgeOf(grant: Grant): Bridge {
    let bridge = this.bridges.get(grant.id);
    if (!bridge) {
      bridge = { grant, host: undefined, watch: undefined };
      this.bridges.set(grant.id, bridge);
    }
    return bridge;
  }

  private forgetIfEmpty(bridge: Bridge): void {
    if (!bridge.host && !bridge.watch && this.bridges.get(bridge.grant.id) === bridge)
      this.bridges.delete(bridge.grant.id);
  }
}
