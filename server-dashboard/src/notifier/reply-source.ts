/** Where the message that started a turn came from, as the "response ready" choices name it. */
export type ReplySource = 'conduit' | 'desktop' | 'messaging' | 'terminal';

export const REPLY_SOURCES: readonly ReplySource[] = ['conduit', 'desktop', 'messaging', 'terminal'];

// Hermes platforms that are not messaging apps. Anything else Hermes names is a messaging platform
// (Telegram, Discord, Slack, plugin platforms…).
const NOT_MESSAGING = new Set(['', 'cli', 'tui', 'api_server', 'api', 'dashboard', 'web', 'desktop', 'cron', 'acp']);

/**
 * Places a turn by its Hermes platform (the seed's rule for a turn with no app connection): cli is the
 * terminal, a Hermes messaging platform is a messaging app. Null for app and API-server platforms: those
 * turns are placed by the app socket that sent them (`app-submissions.ts`), or not at all.
 */
export function replySourceOf(platform: string | undefined): ReplySource | null {
  const name = (platform ?? '').trim().toLowerCase();
  if (name === 'cli') return 'terminal';
  if (NOT_MESSAGING.has(name)) return null;
  return 'messaging';
}
