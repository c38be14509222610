/**
 * What the connector knows about chats: which are groups, and the newest inbound Message of each
 * (for reply_to "auto"). Rebuilt from the FULL-sync snapshot and kept current from new events.
 */
export class ChatIndex {
  readonly groups = new Set<string>();
  readonly directs = new Set<string>();
  private readonly latestInbound = new Map<string, { messageId: string; at: string }>();

  rebuild(chats: unknown[], messages: unknown[]): void {
    this.groups.clear();
    this.directs.clear();
    this.latestInbound.clear();
    for (const c of chats) {
      const chat = c as Record<string, unknown>;
      if (typeof chat['id'] !== 'string') continue;
      (chat['is_group'] === true ? this.groups : this.directs).add(chat['id']);
    }
    for (const m of messages) {
      const msg = m as Record<string, unknown>;
      if (msg['is_from_me'] === true || msg['is_system_message'] === true) continue;
      if (
        typeof msg['chat_id'] === 'string' &&
        typeof msg['id'] === 'string' &&
        typeof msg['created_at'] === 'string'
      ) {
        this.noteInbound(msg['chat_id'], msg['id'], msg['created_at']);
      }
    }
  }

  noteChat(chatId: string, isGroup: boolean | null | undefined): void {
    if (isGroup === true) this.groups.add(chatId);
    else if (isGroup === false) this.directs.add(chatId);
  }

  noteInbound(chatId: string, messageId: string, at: string): void {
    const cur = this.latestInbound.get(chatId);
    if (cur === undefined || cur.at <= at) this.latestInbound.set(chatId, { messageId, at });
  }

  newestInbound(chatId: string): string | null {
    return this.latestInbound.get(chatId)?.messageId ?? null;
  }
}
