import path from 'node:path';
import { writeFileAtomic } from '../credentials/atomic-write.js';
import type { Logger } from '../log.js';
import { DESKTOP_SELECTED_FILE } from './desktop-watch.js';

/** The seed: renewed every 30 s while anything is selected, trusted 45 s by the readers. */
export const SELECTION_RENEW_MS = 30_000;

interface Selected {
  home: string;
  storedId: string;
}

/**
 * The chats Desktop (or the web dashboard) has selected, per gateway socket that passes through this
 * service, published per Hermes home in `conduit-desktop-selected.json` for the turn hooks' two-minute
 * rule. A socket's selection moves with its next open and ends when it closes. Writes are atomic
 * (temp file, mode 0600, rename), one at a time per home, and the newest selection always wins.
 */
export class DesktopSelectionPublisher {
  private readonly bySocket = new Map<number, Selected>();
  private readonly writing = new Map<string, Promise<void>>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly log: Logger,
    renewMs = SELECTION_RENEW_MS,
  ) {
    this.timer = setInterval(() => {
      for (const home of new Set([...this.bySocket.values()].map((s) => s.home))) this.publish(home);
    }, renewMs);
    this.timer.unref();
  }

  select(socket: number, home: string, storedId: string): void {
    const previous = this.bySocket.get(socket);
    if (previous?.home === home && previous.storedId === storedId) return;
    this.bySocket.set(socket, { home, storedId });
    if (previous && previous.home !== home) this.publish(previous.home);
    this.publish(home);
  }

  closed(socket: number): void {
    const previous = this.bySocket.get(socket);
    if (!previous) return;
    this.bySocket.delete(socket);
    this.publish(previous.home);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Resolves when every write asked for so far has landed (for tests and shutdown). */
  async settled(): Promise<void> {
    await Promise.all(this.writing.values());
  }

  private publish(home: string): void {
    const previous = this.writing.get(home) ?? Promise.resolve();
    const next = previous.then(() => this.write(home));
    this.writing.set(home, next);
  }

  private async write(home: string): Promise<void> {
    // Read at write time, so a queued write always carries the newest selection.
    const sessions = [...new Set([...this.bySocket.values()].filter((s) => s.home === home).map((s) => s.storedId))];
    try {
      await writeFileAtomic(path.join(home, DESKTOP_SELECTED_FILE), JSON.stringify({ version: 1, sessions }) + '\n');
    } catch (error) {
      this.log.warn('desktop selection not published', { error: error instanceof Error ? error.name : 'error' });
    }
  }
}
