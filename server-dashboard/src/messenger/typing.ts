/**
 * Typing indicators while Hermes works: POST …/typing at most once every 4 s per chat (refreshed
 * while the turn runs), DELETE when it ends. Errors are ignored: a missing indicator never fails a
 * turn.
 */
import type { Clock, TimerHandle } from './clock.js';
import type { RelayApi } from './relay-api.js';

export const TYPING_MIN_INTERVAL_MS = 4_000;

export class TypingIndicator {
  private readonly lastSent = new Map<string, number>();
  private readonly active = new Map<string, { count: number; timer: TimerHandle }>();

  constructor(
    private readonly api: Pick<RelayApi, 'startTyping' | 'stopTyping'>,
    private readonly clock: Clock,
  ) {}

  /** Sends typing unless it was sent for this chat less than 4 s ago. */
  pulse(chatId: string): void {
    const now = this.clock.now();
    const last = this.lastSent.get(chatId);
    if (last !== undefined && now - last < TYPING_MIN_INTERVAL_MS) return;
    this.lastSent.set(chatId, now);
    this.api.startTyping(chatId).catch(() => {});
  }

  start(chatId: string): void {
    const cur = this.active.get(chatId);
    if (cur !== undefined) {
      cur.count += 1;
      return;
    }
    this.pulse(chatId);
    const timer = this.clock.setInterval(() => this.pulse(chatId), TYPING_MIN_INTERVAL_MS);
    this.active.set(chatId, { count: 1, timer });
  }

  stop(chatId: string): void {
    const cur = this.active.get(chatId);
    if (cur === undefined) return;
    cur.count -= 1;
    if (cur.count > 0) return;
    cur.timer.cancel();
    this.active.delete(chatId);
    this.lastSent.delete(chatId);
    this.api.stopTyping(chatId).catch(() => {});
  }

  stopAll(): void {
    for (const [chatId, cur] of this.active) {
      cur.timer.cancel();
      this.active.delete(chatId);
    }
  }
}
