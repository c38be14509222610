/** Where the message that started a turn came from, as the "response ready" choices name it. */
export type ReplySource = 'conduit' | 'desktop' | 'messaging' | 'terminal';

export const REPLY_SOURCES: readonly ReplySource[] = ['conduit', 'desktop', 'messaging', 'terminal'];

// Hermes platforms that are not messaging apps. Anything else Hermes names is a messaging platform
// (Telegram, Discord, Slack, plugin platforms…).
const NOT_MESSAGING = new Set(['', 'cli', 'tui', 'api_server', 'api', 'dashboard', 'web', 'desktop', 'cron', 'acp']);

/**
 * Places a turn by its Hermes platform. Out of process the host cannot see which app connection
 * submitted a turn, so Conduit, Desktop and API-server turns are not placed (null) and push as before.
 */
export function replySourceOf(platform: string | undefined): ReplySource | null {
  const name = (platform ?? '').trim().toLowerCase();
  if (name === 'cli') return 'terminal';
  if (NOT_MESSAGING.has(name)) return null;
  return 'messaging';
}
