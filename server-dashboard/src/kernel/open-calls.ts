import type WebSocket from 'ws';
import { closeSocket } from './socket-relay.js';

/**
 * Relayed calls open at once, per profile and overall: each holds a provider socket (and, for xAI, a
 * billed session), so a client that reconnects in a loop without closing cannot pile them up.
 */
export class OpenCalls {
  private readonly open = new Map<WebSocket, string>();

  constructor(
    private readonly perProfile: number,
    private readonly overall: number,
  ) {}

  /** Takes a slot for `socket` under the profile's limiter key; null when either bound is full. */
  tryOpen(profileKey: string, socket: WebSocket): (() => void) | null {
    const ofProfile = [...this.open.values()].filter((key) => key === profileKey).length;
    if (this.open.size >= this.overall || ofProfile >= this.perProfile) return null;
    this.open.set(socket, profileKey);
    return () => {
      this.open.delete(socket);
    };
  }

  /** Closes every open call (the service is stopping): 1001, "going away". */
  closeAll(reason: string): void {
    for (const socket of this.open.keys()) closeSocket(socket, 1001, reason);
    this.open.clear();
  }
}
